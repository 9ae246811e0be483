#pragma once
/// SIGINT and SIGTERM end a run cleanly: the handlers only record the signal, and the time loops
/// poll it between steps (throw_if_interrupted), so the exception unwinds through the normal
/// error path: temporary files are removed, complete shots are kept, and `main` exits with
/// 128 + the signal number, as a shell reports a process killed by that signal.

#include <stdexcept>
#include <string>

namespace minimod {

/// Thrown between time steps once SIGINT or SIGTERM has arrived.
class Interrupted : public std::runtime_error {
public:
  explicit Interrupted(int signal);
  int signal() const { return m_signal; }

private:
  int m_signal;
};

/// Route SIGINT and SIGTERM to the flag that interrupt_signal() reads. Idempotent.
void install_interrupt_handlers();
/// The signal that asked the run to stop, or 0.
int interrupt_signal();
/// Throw Interrupted when a signal has asked the run to stop.
void throw_if_interrupted();
/// SIGINT and SIGTERM routed to the flag while the scope lives, for a run inside another program
/// (the Python module): the flag starts clear, and the handlers that were there before (the
/// interpreter's) are restored when the scope ends. Scopes do not nest.
class InterruptScope {
public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

/// "SIGINT", "SIGTERM" or "signal N".
std::string signal_name(int signal);

} // namespace minimod
