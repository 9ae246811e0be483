#pragma once
/// Running every shot of a survey into one output file: in one process, or spread over MPI ranks
/// (rank 0 hands out shots to whichever rank is free and writes every gather; the other ranks
/// model shots). The model is built once (on rank 0) and broadcast.

#include "io/parts_store.hpp"
#include "io/survey.hpp"
#include "solver/simulation.hpp"

#include <array>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

/// Where a shot stands when it starts, for a survey-wide progress line. Every number that names a
/// shot is its shot number: the index of the survey's `shots:` entry, 0-based, as in /shots/NNNN.
struct ShotStart {
  int shot = 0;           ///< the shot about to be modelled
  int done = 0;           ///< shots of the run's selection complete before it (resumed ones too)
  int total = 0;          ///< shots of the run's selection (every shot without --shots)
  int left_after = 0;     ///< shots this run still models after it (over MPI: rank 0's share)
  double mean_shot_s = 0; ///< mean wall time of the shots this run (rank 0) modelled; 0: none yet
};

/// Options of a survey run.
struct SurveyRunOptions {
  SimulationOptions simulation;
  std::string output;        ///< final output path
  std::string summary;       ///< the --summary file, another output (checked with the others)
  bool output_given = false; ///< -o was given: the SEG-Y files go beside it, named after it
  std::string backend_option = "auto"; ///< --backend as given (the run's fingerprint)
  bool resume = false;        ///< continue the run kept in `<output>.parts`, skipping its shots
  std::string resume_command; ///< the command that resumes this run, for messages
  RunHooks hooks;             ///< on_plan, on_progress (shot-local steps) and notices
  /// Called before each shot that the one process, or rank 0 over MPI, models (on_progress then
  /// counts its steps).
  std::function<void(const ShotStart&)> on_shot_start;
  /// The shots to model (--shots): sorted shot numbers, each once; empty means every shot.
  std::vector<int> shots;
  /// --decompose: the split of each shot's grid over ranks, overriding the survey's
  /// `decomposition` and `ranks_per_shot`.
  std::optional<std::array<int, 3>> decompose;
  /// Called when a run that did not finish keeps its complete shots in `folder` for --resume.
  std::function<void(int complete, int shots, const std::string& folder)> on_parts_kept;
  /// Called with each shot's gather once it is written to the output's parts: the caller may
  /// take its arrays (the Python module hands them to NumPy without a copy).
  std::function<void(ShotGather& gather)> on_gather;
};

/// Time spent on one shot, split as the survey-scale issue asks.
struct ShotTiming {
  int shot = -1;
  int rank = 0;
  double setup_ms = 0;  ///< taps, source samples, field reset (and the first shot's upload)
  double step_ms = 0;   ///< the time loop
  double output_ms = 0; ///< traces back to the host, resampling, handing the gather to the writer
  int ranks = 1;        ///< ranks that modelled the shot (a decomposed grid: the subdomains)
  double halo_ms = 0;   ///< of step_ms, the halo exchange of the first of them (decomposed grid)
  HaloTransport halo_transport = HaloTransport::None; ///< DomainHooks::halo_transport of that rank
  /// Under MPI, on the rank that modelled the shot: for a rank other than 0, the time between its
  /// previous shot (or the start of the farm) and this one, spent handing over the previous
  /// gather, asking for this shot and waiting for rank 0's answer; for rank 0, which takes its
  /// shots from its own queue, handing the shot to its group. Zero in one process.
  double wait_ms = 0;
};

/// What a survey run did.
struct SurveyRunReport {
  RunReport last;                ///< plan, backend, kernels and timing of the last shot
  std::vector<ShotTiming> shots; ///< shots modelled by this run (not the skipped ones)
  std::vector<int> skipped;      ///< complete in the resumed file
  std::vector<std::pair<int, std::string>> failed; ///< shot and why
  double model_ms = 0;                             ///< building (and broadcasting) the model
  /// Rank 0's one-time setup before its first shot: host problem (plan, vp2dt2, eta) and device
  /// (backend creation, allocation, upload). Both are part of that shot's setup_ms.
  double problem_ms = 0, device_ms = 0;
  double total_ms = 0;
  double mpi_init_ms = 0; ///< MPI_Init (zero without an MPI launcher)
  double farm_ms = 0;     ///< rank 0: from before its first shot to the last shot recorded
  double assemble_ms = 0; ///< rank 0: the parts assembled into the output (and SEG-Y)
  int ranks = 1;
};

/// The shot numbers a run models: `options.shots`, or every shot of the survey.
std::vector<int> selected_shots(const Survey& survey, const SurveyRunOptions& options);
/// Parse a --shots value ("10-19", "0,3,5-7") against a survey of `shots` shots: the shot numbers,
/// sorted, each once. Throws InputError naming `what`, the value and what is allowed for a
/// malformed item, a range whose end is before its start, or a shot past the survey's last.
std::vector<int> parse_shot_selection(const std::string& text, int shots, const std::string& what);
/// `--precision` (`value`, e.g. "float16"; `what`: the option's name, for messages) in place of
/// the survey's `precision`; its precision_loc then names the option. Throws InputError naming
/// `what`, the value and precision_choices() for another value, and check_precision_support's
/// refusals.
void apply_precision_option(Survey& survey, const std::string& value, const std::string& what);
/// The warning of a run whose shots (`selected`: --shots; empty: every shot) hold none of the
/// snapshot shots (output.snapshots.shots), so that it writes no snapshots; empty otherwise.
std::string snapshot_selection_warning(const Survey& survey, const Plan& plan,
                                       const std::vector<int>& selected);
/// "shot 12 (3 of 10)": a shot's number, then its place among the `chosen` shots of the run.
std::string shot_heading(int shot, const std::vector<int>& chosen);

/// Run the survey. Throws for errors that stop every shot (bad input, output not writable); a
/// shot that fails is reported in `failed` and the others carry on.
SurveyRunReport run_survey_shots(const Survey& survey, const SurveyRunOptions& options);

// ---- the output side, shared by the acoustic and the TTI runs ----------------------------------

/// Where the gathers also go as SEG-Y: output.segy, or beside `-o` and named after it when -o
/// was given. Empty when the survey asks for no SEG-Y. Throws InputError for a build without
/// segyio.
SegyTarget segy_target(const Survey& survey, const SurveyRunOptions& options);
/// Check, before any work, that SEG-Y can hold traces sampled every `dt_out` (InputError).
void check_segy_sampling(const Survey& survey, const SegyTarget& segy, double dt_out);
/// Open the run's parts folder (io/parts_store.hpp): output checks, lock, manifest, resume.
std::unique_ptr<PartsStore> open_parts(const Survey& survey, const SurveyRunOptions& options,
                                       const SegyTarget& segy);
/// The run failed or was interrupted: keep the complete shots of a survey of many shots (and say
/// so through on_parts_kept), remove everything of a one-shot survey.
void abandon_parts(PartsStore& store, const Survey& survey, const SurveyRunOptions& options);

/// MPI: whether this process was started by an MPI launcher (then `mpi_begin` initialises MPI).
bool launched_by_mpi();
/// Initialise MPI when launched by an MPI launcher; returns this process's rank (0 otherwise).
int mpi_begin(int* argc, char*** argv);
/// Under MPI, the ranks agree on the run's input before any of them works: they check the command
/// line, the survey, the split, rank 0's output and model, then exchange the outcome (one
/// MPI_Allreduce); when any failed, every rank throws the agreed error, which rank 0 alone prints
/// (mpi_prints_error) and every rank exits with its code, without MPI_Abort. main calls this with
/// the error that stops this rank: while the rank is still before that first agreement (it
/// stopped on the command line or the survey), it joins the others there and throws the agreed
/// error; otherwise it returns and the caller goes on with its own error. Commands other than
/// `run`, which have no MPI calls, call it at their end (null when they passed).
void mpi_join_input_agreement(const std::exception_ptr& failed);
/// Whether the error that stops this rank is one every rank agreed on (then no MPI_Abort).
bool mpi_failure_agreed();
/// Whether SIGINT or SIGTERM stopped every rank of the run in order (then no MPI_Abort, and rank 0
/// alone says so): every group of one rank stopped between two steps or between two shots.
bool mpi_stopped_together();
/// Whether this rank prints the error that stops it: any rank's own error, an agreed one on rank 0
/// only.
bool mpi_prints_error();
/// Stop every rank with `code` (a rank that failed while others wait for it).
[[noreturn]] void mpi_abort(int code);
/// Finalise MPI if mpi_begin initialised it.
void mpi_end();
/// Rank and size of the run (0 and 1 without MPI).
int mpi_rank();
int mpi_size();
/// Rank among the ranks of this node (selects the GPU); 0 without MPI.
int mpi_local_rank();

} // namespace minimod
