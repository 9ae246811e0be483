#pragma once
/// The work of a run in progress, kept so that a kill at any moment loses at most the shot in
/// flight (docs/output.md, "How a run survives a kill"). For an output OUT the run keeps, in the
/// folder `OUT.parts/` beside it:
///
///   lock             flock'ed for the whole run, holding the holder's PID and host; the kernel
///                    drops the lock when the process dies, so a dead run never blocks a resume
///   manifest         the run's fingerprint (RunFingerprint, JSON), written durably at the start
///   shot-NNNN.h5     one complete shot each: written under a temporary name, synced, renamed
///   snapshots-NNNN.h5  shot NNNN's snapshots, renamed when complete (before the shot's part)
///
/// When every shot is there, assemble() copies them into `OUT.tmp-<pid>`, syncs it, writes the
/// XDMF sidecar and the SEG-Y files (each under a temporary name), renames the HDF5 file to OUT and
/// removes the folder: the manifest first, so a folder without one is leftovers of a finished run.

#include "io/h5_output.hpp"
#include "io/segy.hpp"
#include "io/survey.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

/// An input file the run reads, fingerprinted by its size and CRC-32 (zlib).
struct InputFilePrint {
  std::string role; ///< survey field that names it: "model.file", "shots[2].sources[0].wavelet"
  std::string path; ///< as the survey resolved it
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
};

/// Everything that decides the samples of a run: --resume requires an equal one.
struct RunFingerprint {
  std::string program_version, git_commit;
  std::string survey_path; ///< shown, not compared (a survey may move)
  std::string survey_text;
  std::vector<InputFilePrint> inputs;
  int steps = 0;       ///< --steps as given, 0 when not given
  std::string backend; ///< --backend as given
  std::string kernel;  ///< --kernel as given ("" when not given)
  /// The run's precision ("float32" / "float16": the survey's, or --precision): a resume must
  /// store its fields as the interrupted run did.
  std::string precision = "float32";
  int shots = 0;             ///< shots of the survey
  std::vector<int> selected; ///< the shots the run models (--shots); empty: every shot
};

/// The files a survey reads besides itself (model, anisotropy properties, wavelets, receiver
/// CSV), as role and path, each path once.
std::vector<std::pair<std::string, std::string>> survey_input_files(const Survey& survey);
/// Fingerprint of a run of `survey` (its precision that of the run: --precision applied) with the
/// command-line options that change its samples.
/// Reads every input file through once (size and CRC-32); InputError when one cannot be read.
RunFingerprint make_fingerprint(const Survey& survey, int steps, const std::string& backend,
                                const std::string& kernel);
/// The differences between the fingerprint of an interrupted run (`was`) and this run's (`now`),
/// one readable line each; empty when they are equal.
std::vector<std::string> fingerprint_differences(const RunFingerprint& was,
                                                 const RunFingerprint& now);

/// The fingerprint as the output's `run_fingerprint` attribute: compact JSON of what decides the
/// samples (without the survey path, which may move, and without the shot selection, which
/// differs between the parts of a survey split by --shots).
std::string fingerprint_text(const RunFingerprint& fingerprint);

/// Where the gathers are also written as SEG-Y.
struct SegyTarget {
  std::string path; ///< empty: no SEG-Y
  bool per_shot = false;
  SegyWriteOptions options;
};

/// Write the SEG-Y files of `segy` (nothing when its path is empty) from the gathers of `shots`
/// (shot number, HDF5 file holding /shots/NNNN), each under a temporary name and synced; returns
/// the (temporary, final) pairs to rename. On failure removes what it wrote and throws.
std::vector<std::pair<std::string, std::string>>
write_segy_files(const SegyTarget& segy, const std::vector<std::pair<int, std::string>>& shots);

/// The SEG-Y that `merge` writes beside `output`: what `run -o OUTPUT` of the survey whose text,
/// path, program version and grid `meta` holds would write (output.segy's extension and
/// segy_layout; headers as the run's); an empty path when the survey asks for no SEG-Y.
SegyTarget merged_segy_target(const OutputMeta& meta, const std::string& output);

/// How a PartsStore is opened.
struct PartsOptions {
  bool resume = false;              ///< continue the run whose parts the folder holds
  std::string resume_command;       ///< the exact command that resumes this run (for messages)
  std::vector<std::string> outputs; ///< every final file the run writes besides OUT (SEG-Y, XMF)
  std::function<void(const std::string&)> notice; ///< progress lines ("resume: ...")
};

/// The folder of parts of one run, locked for the life of the object.
class PartsStore {
public:
  /// Before any computation: check that OUT and `options.outputs` are no input file (InputError)
  /// and that OUT can be written (OutputError: a folder, a missing folder that cannot be created,
  /// a read-only folder); take the lock (OutputError naming the holder's PID and host when another
  /// run holds it; nothing is touched then); then read the manifest of an earlier run and
  ///  - with resume: refuse (InputError, saying what differs; nothing touched) when it differs
  ///    from `fingerprint`, else keep its complete shots (a part that does not open is removed
  ///    and modelled again);
  ///  - without: refuse (InputError, with the command that resumes it) when it holds complete
  ///    shots, else clear the leftovers.
  /// Leftover temporaries of killed runs (in the folder, and `OUT.tmp-*` and the like beside the
  /// outputs) are removed once the lock is held.
  PartsStore(const std::string& output, const RunFingerprint& fingerprint,
             const PartsOptions& options);
  /// Releases the lock; removes nothing (see abandon and assemble).
  ~PartsStore();
  PartsStore(const PartsStore&) = delete;
  PartsStore& operator=(const PartsStore&) = delete;

  /// The folder, `OUT.parts`.
  const std::string& folder() const;
  /// Shots complete in the folder (sorted).
  const std::vector<int>& complete_shots() const;
  bool shot_complete(int shot) const;
  /// Whether the snapshots of `shot` are complete in the folder.
  bool snapshots_complete(int shot = 0) const;

  /// Write the part of one complete shot (durably; it then counts as complete).
  void write_shot(const OutputMeta& meta, const ShotGather& gather);
  /// A file for the snapshots of `shot`; commit it (after the shot's time loop, before the shot's
  /// part) to make them complete.
  std::unique_ptr<OutputFile> begin_snapshots(const OutputMeta& meta, int shot = 0);

  /// Every shot of `shots` (shot numbers) is complete: build OUT (and the SEG-Y files) from the
  /// parts, with the root attributes of `meta` and the run's survey_shots, shots_selected (`shots`)
  /// and run_fingerprint, `decorate` adding attributes; then remove the folder.
  void assemble(const OutputMeta& meta, const std::vector<int>& shots, const SegyTarget& segy,
                const std::function<void(OutputFile&)>& decorate = {});
  /// The same for shots 0 .. shots-1.
  void assemble(const OutputMeta& meta, int shots, const SegyTarget& segy,
                const std::function<void(OutputFile&)>& decorate = {});
  /// The run failed or was interrupted: with `keep` and at least one complete shot the folder
  /// stays for --resume (returns true); otherwise it is removed entirely (returns false).
  bool abandon(bool keep);

private:
  /// The constructor's steps once the lock is held.
  void open_locked(const RunFingerprint& fingerprint, const PartsOptions& options,
                   const std::vector<std::string>& outputs);

  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace minimod
