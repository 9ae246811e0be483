#pragma once
/// Running every shot of a survey into one output file: in one process, or spread over MPI ranks
/// (rank 0 hands out shots to whichever rank is free and writes every gather; the other ranks
/// model shots). The model is built once (on rank 0) and broadcast.

#include "io/survey.hpp"
#include "solver/simulation.hpp"

#include <string>
#include <vector>

namespace minimod {

/// Options of a survey run.
struct SurveyRunOptions {
  SimulationOptions simulation;
  std::string output;  ///< final output path
  bool resume = false; ///< continue `<output>.partial`, skipping complete shots
  RunHooks hooks;      ///< on_plan, on_progress (shot-local steps) and notices
};

/// Time spent on one shot, split as the survey-scale issue asks.
struct ShotTiming {
  int shot = -1;
  int rank = 0;
  double setup_ms = 0;  ///< taps, source samples, field reset (and the first shot's upload)
  double step_ms = 0;   ///< the time loop
  double output_ms = 0; ///< traces back to the host, resampling, handing the gather to the writer
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
  int ranks = 1;
};

/// Run the survey. Throws for errors that stop every shot (bad input, output not writable); a
/// shot that fails is reported in `failed` and the others carry on.
SurveyRunReport run_survey_shots(const Survey& survey, const SurveyRunOptions& options);

/// MPI: whether this process was started by an MPI launcher (then `mpi_begin` initialises MPI).
bool launched_by_mpi();
/// Initialise MPI when launched by an MPI launcher; returns this process's rank (0 otherwise).
int mpi_begin(int* argc, char*** argv);
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
