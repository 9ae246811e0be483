#pragma once
/// Exception types and the exit codes `main` maps them to (README: exit codes).

#include <stdexcept>
#include <string>

namespace minimod {

/// Exit codes of the program.
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1, ///< a bug: an exception nobody expected
  kExitBadInput = 2, ///< survey, model file or command line rejected
  kExitRuntime = 3,  ///< device or runtime failure (GPU error, out of memory)
  kExitOutput = 4,   ///< the output file could not be written
};

/// Bad input: the message names the file and line, the field, the value and what is allowed.
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Failure of the device or runtime (CUDA errors, out of memory).
class RuntimeFailure : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Failure writing output.
class OutputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace minimod
