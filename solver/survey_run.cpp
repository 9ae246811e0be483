#include "solver/survey_run.hpp"

#include "core/errors.hpp"
#include "io/h5_output.hpp"
#include "io/segy.hpp"
#include "solver/decomposition.hpp"
#include "solver/equation.hpp"
#include "solver/interrupt.hpp"
#include "solver/plan.hpp"
#include "solver/wavelet.hpp"
#include "version.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#if defined(MINIMOD_HAVE_MPI)
#include <mpi.h>
#endif

namespace minimod {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool g_mpi_initialised = false;
double g_mpi_init_ms = 0;
/// Under MPI: this rank has not yet reached the run's first agreement on the input checks (it
/// started with the command line and the survey); main joins it there when it stops earlier.
bool g_checks_open = true;
/// The error that stops this rank is one every rank agreed on (agree_checks).
bool g_failure_agreed = false;
/// Under MPI, SIGINT or SIGTERM stopped every rank's part of the farm in order (run_farm): each
/// rank ends by itself, without MPI_Abort.
bool g_stopped_together = false;

/// The split of each shot's grid over ranks; InputError when the run's ranks are not a multiple of
/// the ranks a shot (one process included).
Split checked_split(const Survey& survey, const SurveyRunOptions& options) {
  const Split split =
      run_split(survey, make_grid(survey.grid), options.decompose, "--decompose", mpi_size());
  if (split_ranks(split) > 1 && mpi_size() % split_ranks(split) != 0) {
    const std::string what = options.decompose      ? std::string("--decompose")
                             : survey.decomposition ? survey.decomposition_loc.where()
                                                    : survey.ranks_per_shot_loc.where();
    throw InputError(what + ": " + split_text(split) + " is " + std::to_string(split_ranks(split)) +
                     " subdomains a shot, one MPI rank each, but the run has " +
                     std::to_string(mpi_size()) + " rank" + (mpi_size() == 1 ? "" : "s") +
                     "; allowed: mpirun -np N with N a multiple of " +
                     std::to_string(split_ranks(split)));
  }
  return split;
}

/// The result of one shot, as a worker hands it to the writer.
struct ShotResult {
  ShotTiming timing;
  LoopTiming loop;
  bool ok = false;
  std::string error;
  ShotGather gather;
  std::string backend, device;
  std::array<std::string, kRegionCount> kernels;
};

/// MINIMOD_FAULT_INJECT's failure (solver/decomposition.hpp), when the variable is set.
std::optional<FaultInjection> fault_injection_from_environment() {
  const char* text = std::getenv("MINIMOD_FAULT_INJECT");
  if (text == nullptr) return std::nullopt;
  return parse_fault_injection(text);
}

/// Models shots one after another on one backend (the model and fields stay on the device).
class ShotWorker {
public:
  /// `hooks`: the domain hooks of a decomposed run (`equation` then the subdomain's).
  ShotWorker(const Survey& survey, std::shared_ptr<const Equation> equation,
             const SurveyRunOptions& options, std::unique_ptr<DomainHooks> hooks = nullptr)
      : m_survey(survey), m_options(options) {
    m_sim = std::make_unique<Simulation>(survey_for_shot(survey, 0), std::move(equation),
                                         options.simulation, options.hooks.notice);
    if (hooks) m_sim->set_domain_hooks(std::move(hooks));
  }

  /// A decomposed run: `agree(error)` is called by every rank of the shot once its taps are
  /// loaded, with what failed there (empty: nothing), and throws on every rank when any failed,
  /// so that no rank starts stepping while another cannot. `ranks` modelled each shot.
  void set_group(std::function<void(const std::string&)> agree, int ranks) {
    m_agree = std::move(agree);
    m_ranks = ranks;
  }

  /// A rank alone on its shots: the testing aid MINIMOD_FAULT_INJECT (rank 0 of the shot, the
  /// only one) throws at the first progress report at or after the step (reports come at the
  /// first pass end at or after every steps / 40 steps: every pass's when the shot has fewer than
  /// 80 steps; step 0: before the first step).
  void set_fault(std::optional<FaultInjection> fault) { m_fault = fault; }

  Simulation& simulation() { return *m_sim; }

  /// Model shot `shot`; snapshots go to `output` when given (shot 0 of a local run).
  /// `snapshots`: take the plan's snapshots (every rank of a decomposed shot that has them;
  /// `snapshots_to` on the one that writes).
  ShotResult run(int shot, int rank, OutputFile* snapshots_to, bool rethrow = false,
                 std::optional<bool> snapshots = std::nullopt) {
    ShotResult r;
    r.timing.shot = shot;
    r.timing.rank = rank;
    r.timing.ranks = m_ranks;
    DomainHooks* hooks = m_sim->domain_hooks();
    bool begun = false; // the ranks of a decomposed shot are in its time loop together
    try {
      auto t0 = Clock::now();
      std::string load_error;
      Survey s;
      try {
        s = survey_for_shot(m_survey, shot);
        if (shot != m_loaded) m_sim->load_shot(s);
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& e) {
        if (!m_agree) throw;
        load_error = e.what();
      }
      if (m_agree) m_agree(load_error);
      m_loaded = -1; // any later shot (or a re-run of this one) needs fresh fields
      r.timing.setup_ms = ms_since(t0) + m_first_setup_ms;
      m_first_setup_ms = 0;

      t0 = Clock::now();
      if (hooks) {
        hooks->begin_shot(shot);
        begun = true;
        hooks->reset_halo_ms();
      }
      r.loop = m_sim->run(progress_hook(shot), snapshots_to,
                          snapshots.value_or(snapshots_to != nullptr));
      r.timing.step_ms = ms_since(t0);
      if (hooks) {
        r.timing.halo_ms = hooks->halo_ms();
        r.timing.halo_transport = hooks->halo_transport();
      }

      t0 = Clock::now();
      const Plan& plan = m_sim->plan();
      r.gather.shot = shot;
      for (const auto& src : s.sources)
        r.gather.source_positions.push_back(src.position);
      for (const auto& rcv : s.receivers)
        r.gather.receiver_positions.push_back(rcv.position);
      r.gather.dt_out = plan.dt_out;
      r.gather.samples = plan.trace_samples;
      r.gather.traces = m_sim->output_traces();
      // The wavelets as the solver sampled them (already checked when the taps were built).
      r.gather.wavelet_dt = plan.dt;
      r.gather.wavelet_samples = plan.steps;
      for (std::size_t n = 0; n < s.sources.size(); ++n) {
        const WaveletSpec& w = s.sources[n].wavelet;
        const auto samples =
            sample_wavelet(w, plan.dt, plan.steps,
                           w.loc.key.empty() ? "sources[" + std::to_string(n) + "].wavelet.file"
                                             : w.loc.where() + ".file");
        r.gather.wavelet.insert(r.gather.wavelet.end(), samples.begin(), samples.end());
      }
      r.timing.output_ms = ms_since(t0);
      r.ok = true;
    } catch (const Interrupted&) {
      throw; // Ctrl-C stops the survey; it is no failure of this shot
    } catch (const std::exception& e) {
      if (rethrow) throw; // a survey of one shot fails as a whole, with the error's own type
      r.ok = false;
      // A decomposed shot: the other ranks learn of it (rather than wait for this one), and the
      // error names the rank where it happened.
      r.error = begun ? hooks->abandon_shot(e.what()) : e.what();
    }
    r.backend = backend_name(m_sim->backend().kind());
    r.device = m_sim->backend().device_name();
    r.kernels = m_sim->kernel_names();
    return r;
  }

  /// Time the construction took, charged to the first shot's setup.
  void set_first_setup_ms(double ms) { m_first_setup_ms = ms; }

private:
  /// The run's progress hook, with the injected failure of `shot` when there is one.
  std::function<void(int)> progress_hook(int shot) const {
    if (!m_fault || m_fault->shot != shot || m_fault->rank != 0) return m_options.hooks.on_progress;
    auto fail = [shot](int step) {
      throw RuntimeFailure("injected failure (MINIMOD_FAULT_INJECT): shot " + std::to_string(shot) +
                           ", step " + std::to_string(step) + ", rank 0 of the shot");
    };
    if (m_fault->step == 0) fail(0);
    return [fail, step = m_fault->step, inner = m_options.hooks.on_progress](int done) {
      if (inner) inner(done);
      if (done >= step) fail(done);
    };
  }

  const Survey& m_survey;
  const SurveyRunOptions& m_options;
  std::unique_ptr<Simulation> m_sim;
  int m_loaded = 0; ///< the shot whose taps the simulation holds with fresh fields
  double m_first_setup_ms = 0;
  std::function<void(const std::string&)> m_agree;
  int m_ranks = 1;
  std::optional<FaultInjection> m_fault;
};

/// The plan's warnings (and the model's notice, when the plan does not carry it already), each
/// once: rank 0's of a run over MPI, or the one process's.
void tell_warnings(const Plan& plan, const std::string& model_notice,
                   const SurveyRunOptions& options) {
  if (!options.hooks.notice) return;
  // The plan carries the notice of raw and .npy files (from the header); HDF5 and SEG-Y files,
  // whose shape needs more than a header, give theirs as they are read.
  if (!model_notice.empty() &&
      std::find(plan.warnings.begin(), plan.warnings.end(), model_notice) == plan.warnings.end())
    options.hooks.notice("warning: " + model_notice);
  for (const auto& w : plan.warnings)
    options.hooks.notice("warning: " + w);
}

/// Whether the run takes the snapshots of `shot`: the plan has snapshots and
/// output.snapshots.shots names the shot.
bool takes_snapshots(const Survey& survey, const Plan& plan, int shot) {
  const std::vector<int>& chosen = survey.output.snapshot_shots;
  return plan.snapshot_every > 0 && plan.snapshot_count > 0 &&
         std::binary_search(chosen.begin(), chosen.end(), shot);
}

/// The snapshot shots among the shots the run models (`chosen`).
std::vector<int> snapshot_shots_of(const Survey& survey, const Plan& plan,
                                   const std::vector<int>& chosen) {
  std::vector<int> shots;
  for (const int s : chosen)
    if (takes_snapshots(survey, plan, s)) shots.push_back(s);
  return shots;
}

/// At the start: a run whose shots hold none of the snapshot shots writes no snapshots, and says
/// so.
void tell_snapshots(const Survey& survey, const Plan& plan, const SurveyRunOptions& options) {
  const std::string warning = snapshot_selection_warning(survey, plan, options.shots);
  if (options.hooks.notice && !warning.empty()) options.hooks.notice("warning: " + warning);
}

OutputMeta make_meta(const Survey& survey, const Plan& plan) {
  OutputMeta meta;
  meta.program_version = kProgramVersion;
  meta.git_commit = kGitCommit;
  meta.survey_text = survey.text;
  meta.survey_path = survey.path;
  meta.physics = survey.physics;
  meta.grid_shape = {plan.grid.nx, plan.grid.ny, plan.grid.nz};
  meta.grid_spacing = {plan.grid.dx, plan.grid.dy, plan.grid.dz};
  meta.grid_origin = {plan.grid.ox, plan.grid.oy, plan.grid.oz};
  meta.layer_widths = {plan.layer.x_lo, plan.layer.x_hi, plan.layer.y_lo,
                       plan.layer.y_hi, plan.layer.z_lo, plan.layer.z_hi};
  meta.dt = plan.dt;
  meta.steps = plan.steps;
  return meta;
}

/// The backend, device and kernels that modelled a shot, as root attributes.
void describe_backend(OutputMeta& meta, const ShotResult& r) {
  meta.backend = r.backend;
  meta.device_name = r.device;
  meta.region_kernels = r.kernels;
}

#if defined(MINIMOD_HAVE_MPI)
// ---- MPI messages ------------------------------------------------------------------------------

constexpr int kTagRequest = 1; ///< worker -> rank 0: ready for a shot
constexpr int kTagAssign = 2;  ///< rank 0 -> worker: shot index, or -1 to stop
constexpr int kTagResult = 3;  ///< worker -> rank 0: a serialised ShotResult
constexpr int kTagStopped = 4; ///< worker -> rank 0: SIGINT or SIGTERM (the number) stopped it
/// How long rank 0, interrupted, waits for every other group to stop: Open MPI's mpirun sends
/// SIGKILL 1 s after the SIGTERM it sends every rank on its own SIGINT or SIGTERM.
constexpr std::chrono::milliseconds kStopWait{500};

void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw RuntimeFailure(std::string("MPI: ") + what + ": " + std::string(text, length));
  }
}

/// Append plain bytes of a value or array to a buffer.
template <typename T> void put(std::vector<char>& b, const T* data, std::size_t n) {
  const auto* p = reinterpret_cast<const char*>(data);
  b.insert(b.end(), p, p + n * sizeof(T));
}
template <typename T> void put(std::vector<char>& b, const T& v) {
  put(b, &v, 1);
}
void put_string(std::vector<char>& b, const std::string& s) {
  put(b, static_cast<std::uint64_t>(s.size()));
  put(b, s.data(), s.size());
}

/// Reads back what put() wrote.
class Reader {
public:
  explicit Reader(const std::vector<char>& b) : m_b(b) {}
  template <typename T> void get(T* data, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (m_at + bytes > m_b.size()) throw RuntimeFailure("MPI: truncated shot result");
    std::memcpy(data, m_b.data() + m_at, bytes);
    m_at += bytes;
  }
  template <typename T> T get() {
    T v{};
    get(&v, 1);
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    std::string s(n, '\0');
    get(s.data(), n);
    return s;
  }

private:
  const std::vector<char>& m_b;
  std::size_t m_at = 0;
};

std::vector<char> serialise(const ShotResult& r) {
  std::vector<char> b;
  put(b, r.timing);
  put(b, static_cast<int>(r.ok));
  put_string(b, r.error);
  put_string(b, r.backend);
  put_string(b, r.device);
  for (const auto& k : r.kernels)
    put_string(b, k);
  const ShotGather& g = r.gather;
  put(b, g.shot);
  put(b, g.dt_out);
  put(b, g.samples);
  put(b, static_cast<std::uint64_t>(g.source_positions.size()));
  put(b, g.source_positions.data(), g.source_positions.size());
  put(b, static_cast<std::uint64_t>(g.receiver_positions.size()));
  put(b, g.receiver_positions.data(), g.receiver_positions.size());
  put(b, static_cast<std::uint64_t>(g.traces.size()));
  put(b, g.traces.data(), g.traces.size());
  put(b, g.wavelet_samples);
  put(b, g.wavelet_dt);
  put(b, static_cast<std::uint64_t>(g.wavelet.size()));
  put(b, g.wavelet.data(), g.wavelet.size());
  return b;
}

ShotResult deserialise(const std::vector<char>& b) {
  Reader in(b);
  ShotResult r;
  r.timing = in.get<ShotTiming>();
  r.ok = in.get<int>() != 0;
  r.error = in.get_string();
  r.backend = in.get_string();
  r.device = in.get_string();
  for (auto& k : r.kernels)
    k = in.get_string();
  ShotGather& g = r.gather;
  g.shot = in.get<int>();
  g.dt_out = in.get<double>();
  g.samples = in.get<int>();
  g.source_positions.resize(in.get<std::uint64_t>());
  in.get(g.source_positions.data(), g.source_positions.size());
  g.receiver_positions.resize(in.get<std::uint64_t>());
  in.get(g.receiver_positions.data(), g.receiver_positions.size());
  g.traces.resize(in.get<std::uint64_t>());
  in.get(g.traces.data(), g.traces.size());
  g.wavelet_samples = in.get<int>();
  g.wavelet_dt = in.get<double>();
  g.wavelet.resize(in.get<std::uint64_t>());
  in.get(g.wavelet.data(), g.wavelet.size());
  return r;
}

/// What the ranks of `comm` report: true on every rank when any has an error; `joined` names each
/// failing rank (its rank in MPI_COMM_WORLD) with its error, or is the one error when every
/// failing rank has the same.
bool any_failed(MPI_Comm comm, const std::string& error, std::string* joined) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const int length = static_cast<int>(error.size()), world = mpi_rank();
  std::vector<int> lengths(static_cast<std::size_t>(size)), worlds(lengths.size()),
      displs(lengths.size());
  check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm), "agree");
  check_mpi(MPI_Allgather(&world, 1, MPI_INT, worlds.data(), 1, MPI_INT, comm), "agree");
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    displs[r] = total;
    total += lengths[r];
  }
  if (total == 0) return false;
  std::vector<char> all(static_cast<std::size_t>(total));
  check_mpi(MPI_Allgatherv(error.data(), length, MPI_CHAR, all.data(), lengths.data(),
                           displs.data(), MPI_CHAR, comm),
            "agree");
  std::vector<std::pair<int, std::string>> errors;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    if (lengths[r] > 0)
      errors.emplace_back(
          worlds[r], std::string(all.data() + displs[r], static_cast<std::size_t>(lengths[r])));
  }
  const bool same = std::all_of(errors.begin(), errors.end(),
                                [&](const auto& e) { return e.second == errors.front().second; });
  joined->clear();
  if (same) {
    *joined = errors.front().second;
  } else {
    for (const auto& [rank, text] : errors)
      *joined += (joined->empty() ? "" : "; ") + ("rank " + std::to_string(rank) + ": " + text);
  }
  return true;
}

/// What stopped a rank, as the ranks agree on it: the exit code of its type (io/errors.hpp) and
/// its text.
int failure_code(const std::exception_ptr& failed, std::string* text) {
  try {
    std::rethrow_exception(failed);
  } catch (const InputError& e) {
    *text = e.what();
    return kExitBadInput;
  } catch (const OutputError& e) {
    *text = e.what();
    return kExitOutput;
  } catch (const RuntimeFailure& e) {
    *text = e.what();
    return kExitRuntime;
  } catch (const std::bad_alloc&) {
    *text = "out of host memory (an allocation failed); run on a host with more memory, or make "
            "the grid smaller";
    return kExitRuntime;
  } catch (const std::exception& e) {
    *text = e.what();
    return kExitInternal;
  }
}

/// Every rank of the run: the outcome of the input checks before this point, `failed` being what
/// stopped this rank (null: nothing). When any rank failed, every rank throws the agreed error:
/// the type of the lowest exit code among the failures (an input error before a runtime or an
/// output one; an internal error, a bug, before all), with every failing rank's text (once when
/// they all have the same); rank 0 rethrows its own error when that is the agreed one, so that
/// main prints it as it would in one process. One MPI_Allreduce when all passed.
void agree_checks(const std::exception_ptr& failed) {
  g_checks_open = false;
  std::string text;
  const int code = failed ? failure_code(failed, &text) : 0;
  int lowest = code > 0 ? code : std::numeric_limits<int>::max();
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD),
            "agree on the input checks");
  if (lowest == std::numeric_limits<int>::max()) return;
  g_failure_agreed = true;
  std::string joined;
  any_failed(MPI_COMM_WORLD, text, &joined);
  if (failed && code == lowest && joined == text) std::rethrow_exception(failed);
  switch (lowest) {
  case kExitBadInput:
    throw InputError(joined);
  case kExitOutput:
    throw OutputError(joined);
  case kExitRuntime:
    throw RuntimeFailure(joined);
  default:
    throw std::runtime_error(joined);
  }
}

/// Send the model's arrays (Equation::model_arrays), built on rank 0, to every rank.
void broadcast_model(Equation& equation) {
  for (std::vector<float>* array : equation.model_arrays()) {
    std::uint64_t n = array->size();
    check_mpi(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "broadcast model size");
    array->resize(n);
    constexpr std::uint64_t kChunk = 1u << 28;
    for (std::uint64_t at = 0; at < n; at += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, n - at));
      check_mpi(MPI_Bcast(array->data() + at, count, MPI_FLOAT, 0, MPI_COMM_WORLD),
                "broadcast model");
    }
  }
}

/// "ranks 4-7".
std::string ranks_text(int first, int count) {
  return count == 1 ? "rank " + std::to_string(first)
                    : "ranks " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

/// Rank 0: the shot queue and the writer. It also models shots, alone or with the first group of
/// ranks, so it answers the other groups between every two of its own steps (serve, as the
/// simulation's between-steps work) and between its shots.
class ShotDesk {
public:
  /// `own`: the shots rank 0's group alone models (those whose snapshots it writes), sorted.
  ShotDesk(std::deque<int> pending, std::vector<int> own, int remote_groups, int ranks_per_shot,
           PartsStore& store, OutputMeta& meta, const SurveyRunOptions& options,
           SurveyRunReport& report, int done, int total)
      : m_pending(std::move(pending)), m_own(std::move(own)), m_active(remote_groups),
        m_ranks(ranks_per_shot), m_store(store), m_meta(meta), m_options(options), m_report(report),
        m_done(done), m_total(total) {}

  /// Rank 0's next shot (its own shots first), or -1 when none is left (or the run is stopping).
  int take() {
    const auto own =
        std::find_if(m_pending.begin(), m_pending.end(), [&](int s) { return is_own(s); });
    return take_at(own != m_pending.end() ? own : m_pending.begin());
  }
  /// Another group's next shot: one that is not rank 0's own, or -1.
  int take_remote() {
    return take_at(
        std::find_if(m_pending.begin(), m_pending.end(), [&](int s) { return !is_own(s); }));
  }
  /// Groups other than rank 0's not yet told to stop.
  int active() const { return m_active; }
  /// Shots of the run complete (resumed ones too), and shots not yet handed out.
  int done() const { return m_done; }
  int pending() const { return static_cast<int>(m_pending.size()); }

  /// SIGINT or SIGTERM: hand out no more shots and wait (at most kStopWait) until every other
  /// group has stopped, keeping the gathers that arrive meanwhile. Whether they all did.
  bool stop_groups() {
    m_stopping = true;
    const auto until = Clock::now() + kStopWait;
    for (;;) {
      serve();
      if (m_active == 0) return true;
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  /// Answer every request and take every result waiting; never blocks.
  void serve() {
    for (;;) {
      MPI_Status status;
      int ready = 0;
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ready, &status),
                "poll groups");
      if (!ready) break;
      if (status.MPI_TAG == kTagStopped) {
        int signal = 0;
        check_mpi(MPI_Recv(&signal, 1, MPI_INT, status.MPI_SOURCE, kTagStopped, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE),
                  "receive a stop");
        --m_active;
        if (m_stop_signal == 0) m_stop_signal = signal;
      } else if (status.MPI_TAG == kTagRequest) {
        int ignored = 0;
        check_mpi(MPI_Recv(&ignored, 1, MPI_INT, status.MPI_SOURCE, kTagRequest, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE),
                  "receive request");
        const int shot = take_remote();
        if (shot < 0) --m_active;
        check_mpi(MPI_Send(&shot, 1, MPI_INT, status.MPI_SOURCE, kTagAssign, MPI_COMM_WORLD),
                  "assign shot");
      } else {
        int bytes = 0;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        std::vector<char> buffer(static_cast<std::size_t>(bytes));
        check_mpi(MPI_Recv(buffer.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kTagResult,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "receive shot result");
        ShotResult r = deserialise(buffer);
        // A gather that cannot be written (a full disk) fails its own shot, not the one rank 0
        // is stepping when it arrives.
        try {
          record(r, nullptr);
        } catch (const std::exception& e) {
          r.ok = false;
          r.error = std::string("writing its gather on rank 0: ") + e.what();
          record(r, nullptr);
        }
      }
    }
    // A rank that SIGINT or SIGTERM stopped stops the run (rank 0 may not have had the signal).
    if (m_stop_signal != 0 && !m_stopping) throw Interrupted(m_stop_signal);
  }

  /// Write a shot's gather (and commit its snapshots), or record its failure.
  void record(ShotResult& r, OutputFile* snapshots) {
    const std::string who = ranks_text(r.timing.rank, m_ranks);
    if (!r.ok) {
      m_report.failed.emplace_back(r.timing.shot, r.error);
      if (m_options.hooks.notice)
        m_options.hooks.notice("shot " + std::to_string(r.timing.shot) + " failed on " + who +
                               ": " + r.error);
      return;
    }
    describe_backend(m_meta, r);
    const auto t0 = Clock::now();
    if (snapshots) snapshots->commit();
    m_store.write_shot(m_meta, r.gather);
    if (m_options.on_gather) m_options.on_gather(r.gather);
    r.timing.output_ms += ms_since(t0);
    m_report.shots.push_back(r.timing);
    m_report.last.backend = r.backend;
    m_report.last.device = r.device;
    m_report.last.kernels = r.kernels;
    m_report.last.timing = r.loop;
    ++m_done;
    if (m_options.hooks.notice) {
      m_options.hooks.notice("shot " + std::to_string(r.gather.shot) + " done on " + who + " (" +
                             std::to_string(m_done) + "/" + std::to_string(m_total) + " done)");
    }
  }

private:
  bool is_own(int shot) const { return std::binary_search(m_own.begin(), m_own.end(), shot); }
  int take_at(std::deque<int>::iterator at) {
    if (at == m_pending.end() || m_stopping) return -1;
    const int shot = *at;
    m_pending.erase(at);
    return shot;
  }

  std::deque<int> m_pending;
  std::vector<int> m_own;
  int m_active;
  int m_ranks;
  PartsStore& m_store;
  OutputMeta& m_meta;
  const SurveyRunOptions& m_options;
  SurveyRunReport& m_report;
  int m_done, m_total;
  bool m_stopping = false;
  int m_stop_signal = 0; ///< the signal that stopped another group, 0: none
};

/// A rank's worker, or why its group cannot model shots.
struct GroupWorker {
  std::unique_ptr<ShotWorker> worker;
  std::string setup_error; ///< a failure other than bad input, on some rank of the group
};

/// Every rank: build the worker for this rank's part of each shot. Input errors are thrown (the
/// caller agrees on them); any other failure is kept in setup_error.
GroupWorker make_group_worker(const Survey& survey, const std::shared_ptr<const Equation>& equation,
                              const SurveyRunOptions& local, const SurveyRunOptions& options,
                              const Split& split, MPI_Comm comm, SurveyRunReport& report) {
  const int rank = mpi_rank(), per_shot = split_ranks(split);
  GroupWorker group;
  // Parsed before any work, as in a decomposed run (decompose parses it there).
  std::optional<FaultInjection> fault;
  if (per_shot == 1) fault = fault_injection_from_environment();
  const auto t0 = Clock::now();
  try {
    if (per_shot == 1) {
      group.worker = std::make_unique<ShotWorker>(survey, equation, local);
      group.worker->set_fault(fault);
    } else {
      DecomposedRun run = decompose(equation, split, comm);
      group.worker =
          std::make_unique<ShotWorker>(survey, run.equation, local, std::move(run.hooks));
      group.worker->set_group(
          [comm](const std::string& error) {
            std::string joined;
            if (any_failed(comm, error, &joined)) throw RuntimeFailure(joined);
          },
          per_shot);
    }
    group.worker->set_first_setup_ms(ms_since(t0));
    if (rank == 0) {
      report.problem_ms = group.worker->simulation().problem_ms();
      report.device_ms = group.worker->simulation().device_ms();
      if (per_shot > 1 && group.worker->simulation().backend().kind() != BackendKind::Cpu &&
          options.hooks.notice) {
        options.hooks.notice(halo_exchange_notice());
      }
    }
  } catch (const InputError&) {
    throw;
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    group.worker.reset();
    group.setup_error = e.what();
  }
  return group;
}

/// Rank 0: the backend each rank of the run models on (BackendKind), -1 where it could not start.
/// Every rank calls it.
std::vector<int> gather_backends(ShotWorker* worker) {
  const int mine = worker ? static_cast<int>(worker->simulation().backend().kind()) : -1;
  std::vector<int> all(mpi_rank() == 0 ? static_cast<std::size_t>(mpi_size()) : 0);
  check_mpi(MPI_Gather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
            "gather the ranks' backends");
  return all;
}

/// What the ranks model on, from gather_backends: "one GPU each: 4 GPUs", "on the CPU: 2 CPU
/// ranks, no GPU", or the counts of each ("3 on GPUs, 1 on the CPU, 1 could not start").
std::string backends_text(const std::vector<int>& backends) {
  const auto count = [&](auto pick) {
    return static_cast<int>(std::count_if(backends.begin(), backends.end(), pick));
  };
  const int cpu = count([](int b) { return b == static_cast<int>(BackendKind::Cpu); });
  const int none = count([](int b) { return b < 0; });
  const int gpu = static_cast<int>(backends.size()) - cpu - none;
  const auto plural = [](int n, const std::string& what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  if (gpu == static_cast<int>(backends.size())) return "one GPU each: " + plural(gpu, "GPU");
  if (cpu == static_cast<int>(backends.size()))
    return "on the CPU: " + plural(cpu, "CPU rank") + ", no GPU";
  std::string text;
  if (gpu > 0) text += std::to_string(gpu) + " on GPUs";
  if (cpu > 0) text += (text.empty() ? "" : ", ") + std::to_string(cpu) + " on the CPU";
  if (none > 0) text += (text.empty() ? "" : ", ") + std::to_string(none) + " could not start";
  return text;
}

/// Rank 0's notices about how the run is spread and what it runs on.
void describe_farm(const Split& split, const std::vector<int>& backends,
                   const SurveyRunOptions& options) {
  if (!options.hooks.notice) return;
  const int world = mpi_size(), per_shot = split_ranks(split), groups = world / per_shot;
  if (per_shot > 1) {
    options.hooks.notice("MPI: " + std::to_string(world) + " ranks (" + backends_text(backends) +
                         "), " + std::to_string(groups) + " group" + (groups == 1 ? "" : "s") +
                         " of " + std::to_string(per_shot) +
                         " modelling one shot at a time, its grid split " + split_text(split) +
                         "; rank 0 also hands out shots and writes the output");
    return;
  }
  options.hooks.notice("MPI: " + std::to_string(world) + " ranks model shots (" +
                       backends_text(backends) +
                       "); rank 0 also hands out shots and writes the output");
}

/// Every rank of a run over MPI, once the model is on every rank: shots go to groups of
/// split_ranks(split) consecutive ranks (one rank each when shots are not split). Rank 0 is the
/// queue and the writer; each group's first rank asks it for shots and sends it the gathers.
/// Rank 0 is also the first group's first rank (the whole group where shots are not split): it
/// answers the others between every two of its steps.
void run_farm(const Survey& survey, const SurveyRunOptions& options, const Split& split,
              const std::shared_ptr<Equation>& equation, PartsStore* store, const SegyTarget& segy,
              SurveyRunReport& report) {
  const int world = mpi_size(), rank = mpi_rank(), per_shot = split_ranks(split);
  const int groups = world / per_shot, group = rank / per_shot;
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(MPI_COMM_WORLD, group, rank, &comm), "split ranks into groups");
  struct CommFree {
    MPI_Comm* c;
    ~CommFree() { MPI_Comm_free(c); }
  } free_comm{&comm};
  const bool root = rank % per_shot == 0;

  // Rank 0 answers the other groups while it steps: between every two of its steps.
  ShotDesk* desk = nullptr;
  SurveyRunOptions local = options;
  if (rank != 0) local.hooks.on_progress = {};

  // The rest of the input checks: the plan, every shot, rank 0's SEG-Y, and every rank's setup
  // (a cap too small for a subdomain, a kernel this GPU cannot run). An input error anywhere stops
  // the run on every rank; any other setup failure fails the group's shots.
  Plan plan;
  GroupWorker built;
  std::exception_ptr failed;
  try {
    plan = equation->make_plan(survey_for_shot(survey, 0), options.simulation.steps_override);
    for (const int s : selected_shots(survey, options))
      survey_for_shot(survey, s);
    if (rank == 0) check_segy_sampling(survey, segy, plan.dt_out);
    built = make_group_worker(survey, equation, local, options, split, comm, report);
  } catch (const Interrupted&) {
    throw;
  } catch (...) {
    failed = std::current_exception();
  }
  agree_checks(failed);
  std::unique_ptr<ShotWorker> worker = std::move(built.worker);
  if (rank == 0 && worker) {
    worker->simulation().set_between_steps([&desk] {
      if (desk) desk->serve();
    });
  }
  const std::vector<int> backends = gather_backends(worker.get());
  std::string setup_error, joined;
  if (any_failed(comm, built.setup_error, &joined)) {
    worker.reset();
    setup_error = ranks_text(group * per_shot, per_shot) + " could not start: " + joined;
  }

  auto failed_result = [&](int shot) {
    ShotResult r;
    r.timing.shot = shot;
    r.timing.rank = rank;
    r.timing.ranks = per_shot;
    r.error = setup_error;
    return r;
  };

  if (rank == 0) {
    OutputMeta meta = make_meta(survey, plan);
    tell_warnings(plan, equation->model_notice(), options);
    tell_snapshots(survey, plan, options);
    if (options.hooks.on_plan) options.hooks.on_plan(plan);
    describe_farm(split, backends, options);
    report.skipped = store->complete_shots();
    const std::vector<int> chosen = selected_shots(survey, options);
    std::deque<int> pending;
    for (const int s : chosen)
      if (!store->shot_complete(s)) pending.push_back(s);
    // Rank 0 writes the snapshots it takes with its group: the snapshot shots are its own.
    ShotDesk shot_desk(std::move(pending), snapshot_shots_of(survey, plan, chosen), groups - 1,
                       per_shot, *store, meta, options, report,
                       static_cast<int>(report.skipped.size()), static_cast<int>(chosen.size()));
    desk = &shot_desk;
    const auto farm_t0 = Clock::now();
    double own_s = 0; // the wall time of the shots rank 0's group modelled
    int own_shots = 0;
    try {
      // Rank 0's own group, where it models shots (it then has a worker or a setup error). A
      // signal ends the group's loop (and the other groups', through stop_groups).
      for (;;) {
        int message[2] = {interrupt_signal() != 0 ? -1 : shot_desk.take(), 0};
        // A snapshot shot's snapshots: taken by every rank of this group, written here.
        std::unique_ptr<OutputFile> snapshots;
        if (message[0] >= 0 && worker && takes_snapshots(survey, plan, message[0]) &&
            !store->snapshots_complete(message[0])) {
          snapshots = store->begin_snapshots(meta, message[0]);
          message[1] = 1;
        }
        // Rank 0 takes its shots from its own queue: its wait is the hand-out to its group.
        const auto handed = Clock::now();
        check_mpi(MPI_Bcast(message, 2, MPI_INT, 0, comm), "hand a shot to the group");
        if (message[0] < 0) break;
        const double wait_ms = ms_since(handed);
        if (options.on_shot_start) {
          // The survey's time left: this shot's, then rank 0's share of the shots not yet
          // handed out at its mean shot time (the groups model them side by side).
          options.on_shot_start(ShotStart{message[0], shot_desk.done(),
                                          static_cast<int>(chosen.size()),
                                          (shot_desk.pending() + groups - 1) / groups,
                                          own_shots > 0 ? own_s / own_shots : 0.0});
        }
        const auto shot_t0 = Clock::now();
        ShotResult r = worker ? worker->run(message[0], 0, snapshots.get(), false, message[1] != 0)
                              : failed_result(message[0]);
        r.timing.wait_ms = wait_ms;
        shot_desk.record(r, r.ok ? snapshots.get() : nullptr);
        if (r.ok) {
          own_s += ms_since(shot_t0) * 1e-3;
          ++own_shots;
        }
        shot_desk.serve();
      }
      throw_if_interrupted();
      // Poll rather than block, so that SIGINT or SIGTERM stops the run between messages.
      while (shot_desk.active() > 0) {
        shot_desk.serve();
        throw_if_interrupted();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    } catch (const Interrupted&) {
      // Every group stops between two steps; the gathers complete by then are kept. Groups of
      // several ranks may stop at different steps: they end through MPI_Abort.
      desk = nullptr;
      g_stopped_together = shot_desk.stop_groups() && per_shot == 1;
      throw;
    }
    desk = nullptr;
    report.farm_ms = ms_since(farm_t0);
    report.last.plan = plan;
    report.last.output_file = options.output;
    // Backend and kernels are those of the shots modelled now, or (every shot kept by --resume)
    // of the parts: assemble reads them there when meta has none.
    if (report.failed.empty()) {
      const auto a0 = Clock::now();
      store->assemble(meta, chosen, segy, [&](OutputFile& out) {
        out.write_model(equation->stored_model(make_grid(survey.grid)));
        out.set_attribute("precision", precision_name(survey.precision));
      });
      report.assemble_ms = ms_since(a0);
    } else {
      abandon_parts(*store, survey, options);
    }
    return;
  }

  auto previous_end = Clock::now();
  for (;;) {
    int message[2] = {-1, 0};
    if (root) {
      int request = 0;
      check_mpi(MPI_Send(&request, 1, MPI_INT, 0, kTagRequest, MPI_COMM_WORLD), "request a shot");
      check_mpi(MPI_Recv(&message[0], 1, MPI_INT, 0, kTagAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "receive a shot");
    }
    check_mpi(MPI_Bcast(message, 2, MPI_INT, 0, comm), "hand a shot to the group");
    if (message[0] < 0) break;
    const double wait_ms = ms_since(previous_end);
    ShotResult r;
    try {
      r = worker ? worker->run(message[0], rank, nullptr, false, message[1] != 0)
                 : failed_result(message[0]);
    } catch (const Interrupted& e) {
      // Rank 0 learns of it (it may not have had the signal) and stops the run.
      if (root) {
        const int signal = e.signal();
        check_mpi(MPI_Send(&signal, 1, MPI_INT, 0, kTagStopped, MPI_COMM_WORLD), "report a stop");
      }
      g_stopped_together = per_shot == 1;
      throw;
    }
    previous_end = Clock::now();
    r.timing.wait_ms = wait_ms;
    if (!root) continue;
    const std::vector<char> buffer = serialise(r);
    check_mpi(MPI_Send(buffer.data(), static_cast<int>(buffer.size()), MPI_BYTE, 0, kTagResult,
                       MPI_COMM_WORLD),
              "send shot result");
  }
  // Rank 0 handed out no more shots because a signal stopped the run.
  if (interrupt_signal() != 0) {
    g_stopped_together = per_shot == 1;
    throw_if_interrupted();
  }
}

/// Every rank of a run over MPI. The input checks (the split, rank 0's output, the model built on
/// rank 0) end in an agreement of every rank before the first broadcast, so that an error on any
/// rank (or one that stopped it earlier, in main: the command line, the survey) stops them all
/// alike; then the model goes to every rank and the shots to the ranks.
void run_over_ranks(const Survey& survey, const SurveyRunOptions& options,
                    SurveyRunReport& report) {
  SegyTarget segy;
  std::unique_ptr<PartsStore> store;
  try {
    const auto t0 = Clock::now();
    Split split{1, 1, 1};
    std::shared_ptr<Equation> equation;
    std::exception_ptr failed;
    try {
      check_precision_support(survey);
      split = checked_split(survey, options);
      // Rank 0 writes: its checks and its lock come before any work.
      if (mpi_rank() == 0) {
        segy = segy_target(survey, options);
        store = open_parts(survey, options, segy);
      }
      equation = make_equation(survey);
      if (mpi_rank() == 0) equation->build_model(survey);
    } catch (const Interrupted&) {
      throw;
    } catch (...) {
      failed = std::current_exception();
    }
    agree_checks(failed);
    broadcast_model(*equation);
    report.model_ms = ms_since(t0);
    run_farm(survey, options, split, equation, store.get(), segy, report);
  } catch (...) {
    if (store) abandon_parts(*store, survey, options);
    throw;
  }
}
#endif

} // namespace

void apply_precision_option(Survey& survey, const std::string& value, const std::string& what) {
  const std::optional<Precision> p = parse_precision(value);
  if (!p) {
    throw InputError(what + ": '" + value + "' is not allowed: one of " + precision_choices() +
                     " (how the run stores its wavefields and medium)");
  }
  survey.precision = *p;
  // Messages name the option: SourceLoc::where() of a file name alone is that name.
  survey.precision_loc = SourceLoc{what, 0, ""};
  check_precision_support(survey);
}

std::string snapshot_selection_warning(const Survey& survey, const Plan& plan,
                                       const std::vector<int>& selected) {
  if (plan.snapshot_every <= 0 || plan.snapshot_count <= 0 || selected.empty()) return "";
  if (!snapshot_shots_of(survey, plan, selected).empty()) return "";
  const std::vector<int>& chosen = survey.output.snapshot_shots;
  return survey.output.snapshot_shots_loc.where() + ": the snapshots are of shot" +
         (chosen.size() == 1 ? " " : "s ") + shot_selection_text(chosen) +
         ", none of them among the shots of this run (--shots " + shot_selection_text(selected) +
         "): it writes no snapshots; allowed: --shots with one of them, or " +
         "output.snapshots.shots naming a shot of the run";
}

std::vector<int> selected_shots(const Survey& survey, const SurveyRunOptions& options) {
  if (!options.shots.empty()) return options.shots;
  std::vector<int> all(survey.shots.size());
  for (std::size_t s = 0; s < all.size(); ++s)
    all[s] = static_cast<int>(s);
  return all;
}

// "shot 12 (3 of 10)": the shot number, then its place among the shots the run was asked for.
std::string shot_heading(int shot, const std::vector<int>& chosen) {
  const auto at = std::lower_bound(chosen.begin(), chosen.end(), shot) - chosen.begin();
  return "shot " + std::to_string(shot) + " (" + std::to_string(at + 1) + " of " +
         std::to_string(chosen.size()) + ")";
}

std::vector<int> parse_shot_selection(const std::string& text, int shots, const std::string& what) {
  const std::string allowed = "; allowed: shot numbers 0-" + std::to_string(shots - 1) +
                              " (0-based, as in /shots/NNNN), as a list of numbers and ranges, "
                              "e.g. 10-19 or 0,3,5-7";
  auto number = [&](const std::string& item, const std::string& digits) {
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      throw InputError(what + ": '" + text + "': '" + item + "' is not a shot number or range" +
                       allowed);
    }
    const int n = std::stoi(digits);
    if (n >= shots) {
      throw InputError(what + ": '" + text + "': shot " + digits + " is past the survey's last (" +
                       std::to_string(shots) + " shot" + (shots == 1 ? "" : "s") + ")" + allowed);
    }
    return n;
  };
  std::vector<int> chosen;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
    const std::size_t dash = item.find('-');
    if (dash == std::string::npos) {
      chosen.push_back(number(item, item));
    } else {
      const int first = number(item, item.substr(0, dash));
      const int last = number(item, item.substr(dash + 1));
      if (last < first) {
        throw InputError(what + ": '" + text + "': range '" + item + "' ends before it starts" +
                         allowed);
      }
      for (int s = first; s <= last; ++s)
        chosen.push_back(s);
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

bool launched_by_mpi() {
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

int mpi_begin(int* argc, char*** argv) {
#if defined(MINIMOD_HAVE_MPI)
  if (launched_by_mpi()) {
    const auto t0 = Clock::now();
    MPI_Init(argc, argv);
    g_mpi_init_ms = ms_since(t0);
    g_mpi_initialised = true;
  }
#else
  (void)argc;
  (void)argv;
#endif
  return mpi_rank();
}

void mpi_join_input_agreement(const std::exception_ptr& failed) {
#if defined(MINIMOD_HAVE_MPI)
  if (g_mpi_initialised && mpi_size() > 1 && g_checks_open) agree_checks(failed);
#else
  (void)failed;
#endif
}

bool mpi_failure_agreed() {
  return g_failure_agreed;
}

bool mpi_stopped_together() {
  return g_stopped_together;
}

bool mpi_prints_error() {
  return !g_failure_agreed || mpi_rank() == 0;
}

void mpi_abort(int code) {
#if defined(MINIMOD_HAVE_MPI)
  if (g_mpi_initialised) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

void mpi_end() {
#if defined(MINIMOD_HAVE_MPI)
  if (g_mpi_initialised) MPI_Finalize();
  g_mpi_initialised = false;
#endif
}

int mpi_rank() {
#if defined(MINIMOD_HAVE_MPI)
  if (g_mpi_initialised) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
  }
#endif
  return 0;
}

int mpi_size() {
#if defined(MINIMOD_HAVE_MPI)
  if (g_mpi_initialised) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
  }
#endif
  return 1;
}

int mpi_local_rank() {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

SegyTarget segy_target(const Survey& survey, const SurveyRunOptions& options) {
  SegyTarget target;
  if (!survey.output.segy) return target;
  const std::string key = survey.output.segy_loc.where();
  if (!segy_supported()) {
    throw InputError(key + ": this minimod-gpu was built without segyio, so it cannot write "
                           "SEG-Y; allowed: remove output.segy, or build with libsegyio-dev");
  }
  namespace fs = std::filesystem;
  target.path = *survey.output.segy;
  if (options.output_given) {
    // -o moves every output: the SEG-Y goes beside it, named after it, with output.segy's
    // extension, so that a run to another -o never overwrites this run's SEG-Y.
    std::string extension = fs::path(target.path).extension().string();
    if (extension.empty()) extension = ".sgy";
    target.path = fs::path(options.output).replace_extension(extension).string();
  }
  target.per_shot = survey.output.segy_per_shot;
  target.options.program = std::string("minimod-gpu ") + kProgramVersion;
  target.options.survey_name = survey.name;
  target.options.survey_path = survey.path;
  target.options.key = key;
  // CDP bins over the survey's grid, so that midpoints anywhere on it (a negative origin too)
  // get a bin: half the grid spacing, numbered from the grid's origin.
  const Grid grid = make_grid(survey.grid);
  target.options.cdp_bins = segy_cdp_bins({grid.ox, grid.oy, grid.oz}, {grid.dx, grid.dy, grid.dz},
                                          {grid.nx, grid.ny, grid.nz});
  return target;
}

void check_segy_sampling(const Survey& survey, const SegyTarget& segy, double dt_out) {
  if (!segy.path.empty()) segy_sample_interval_us(dt_out, survey.output.segy_loc.where());
}

std::unique_ptr<PartsStore> open_parts(const Survey& survey, const SurveyRunOptions& options,
                                       const SegyTarget& segy) {
  namespace fs = std::filesystem;
  RunFingerprint fingerprint =
      make_fingerprint(survey, options.simulation.steps_override, options.backend_option,
                       options.simulation.kernel_spec);
  fingerprint.program_version = kProgramVersion;
  fingerprint.git_commit = kGitCommit;
  fingerprint.selected = options.shots;
  PartsOptions parts;
  parts.resume = options.resume;
  parts.resume_command = options.resume_command;
  parts.notice = options.hooks.notice;
  parts.outputs.push_back(fs::path(options.output).replace_extension(".xmf").string());
  if (!options.summary.empty()) parts.outputs.push_back(options.summary);
  if (!segy.path.empty()) {
    if (segy.per_shot) {
      for (const int shot : selected_shots(survey, options))
        parts.outputs.push_back(segy_shot_path(segy.path, shot));
    } else {
      parts.outputs.push_back(segy.path);
    }
  }
  return std::make_unique<PartsStore>(options.output, fingerprint, parts);
}

void abandon_parts(PartsStore& store, const Survey& survey, const SurveyRunOptions& options) {
  const int shots = static_cast<int>(selected_shots(survey, options).size());
  // One shot that did not finish: nothing worth keeping, and nothing may be left behind. Many,
  // or every shot done (the assembly failed: a full disk, say): keep what is done for --resume.
  const bool keep = shots > 1 || static_cast<int>(store.complete_shots().size()) == shots;
  if (store.abandon(keep) && options.on_parts_kept) {
    options.on_parts_kept(static_cast<int>(store.complete_shots().size()), shots, store.folder());
  }
}

SurveyRunReport run_survey_shots(const Survey& survey, const SurveyRunOptions& options) {
  SurveyRunReport report;
  report.ranks = mpi_size();
  report.mpi_init_ms = g_mpi_init_ms;
  const auto start = Clock::now();

#if defined(MINIMOD_HAVE_MPI)
  if (mpi_size() > 1) {
    run_over_ranks(survey, options, report);
    report.total_ms = ms_since(start);
    return report;
  }
#endif
  check_precision_support(survey);
  checked_split(survey, options); // one process: a split of more than one rank is refused

  const std::vector<int> chosen = selected_shots(survey, options);
  const int shots = static_cast<int>(chosen.size());
  const SegyTarget segy = segy_target(survey, options);
  // Before any computation: output checks, the lock, the manifest (or the kept shots).
  const std::unique_ptr<PartsStore> store = open_parts(survey, options, segy);
  try {
    auto t0 = Clock::now();
    const Grid grid = make_grid(survey.grid);
    const std::shared_ptr<Equation> equation = make_equation(survey);
    equation->build_model(survey);
    // A model file resampled onto the grid says so.
    const std::string notice = equation->model_notice();
    report.model_ms = ms_since(t0);
    const StoredModel model = equation->stored_model(grid);
    // Receivers that move must stay inside the grid for every shot: check before any work.
    for (const int s : chosen)
      survey_for_shot(survey, s);

    t0 = Clock::now();
    ShotWorker worker(survey, equation, options);
    // The testing aid of the MPI runs, for one process too (and so for the Python module).
    worker.set_fault(fault_injection_from_environment());
    worker.set_first_setup_ms(ms_since(t0));
    Simulation& sim = worker.simulation();
    report.problem_ms = sim.problem_ms();
    report.device_ms = sim.device_ms();
    const Plan& plan = sim.plan();
    check_segy_sampling(survey, segy, plan.dt_out);
    tell_warnings(plan, notice, options);
    tell_snapshots(survey, plan, options);
    if (options.hooks.on_plan) options.hooks.on_plan(plan);

    const bool many = shots > 1;
    OutputMeta meta = make_meta(survey, plan);
    meta.backend = backend_name(sim.backend().kind());
    meta.device_name = sim.backend().device_name();
    meta.region_kernels = sim.kernel_names();
    report.skipped = store->complete_shots();

    std::vector<int> todo;
    for (const int s : chosen) {
      if (!store->shot_complete(s)) todo.push_back(s);
    }
    int done = static_cast<int>(report.skipped.size());
    double modelled_s = 0;
    const auto farm_t0 = Clock::now();
    for (std::size_t i = 0; i < todo.size(); ++i) {
      const int s = todo[i];
      throw_if_interrupted();
      if (many && options.hooks.notice) options.hooks.notice(shot_heading(s, chosen));
      if (options.on_shot_start) {
        options.on_shot_start(
            ShotStart{s, done, shots, static_cast<int>(todo.size() - i - 1),
                      report.shots.empty() ? 0.0 : modelled_s / report.shots.size()});
      }
      const auto shot_t0 = Clock::now();
      // A snapshot shot's snapshots go to a part of their own, complete once the shot is.
      std::unique_ptr<OutputFile> snapshots;
      if (takes_snapshots(survey, plan, s) && !store->snapshots_complete(s))
        snapshots = store->begin_snapshots(meta, s);
      ShotResult r = worker.run(s, 0, snapshots.get(), !many);
      if (!r.ok) {
        report.failed.emplace_back(s, r.error);
        if (options.hooks.notice) {
          options.hooks.notice("shot " + std::to_string(s) + " failed: " + r.error);
        }
        continue;
      }
      const auto w0 = Clock::now();
      if (snapshots) snapshots->commit();
      store->write_shot(meta, r.gather);
      if (options.on_gather) options.on_gather(r.gather);
      r.timing.output_ms += ms_since(w0);
      report.shots.push_back(r.timing);
      report.last.timing = r.loop;
      modelled_s += ms_since(shot_t0) * 1e-3;
      ++done;
      if (many && options.hooks.notice) {
        options.hooks.notice("shot " + std::to_string(s) + " done (" + std::to_string(done) + "/" +
                             std::to_string(shots) + " done)");
      }
    }

    report.last.plan = plan;
    report.last.backend = meta.backend;
    report.last.device = meta.device_name;
    report.last.kernels = meta.region_kernels;
    report.last.output_file = options.output;
    report.farm_ms = ms_since(farm_t0);
    report.last.final_field = field_stats(sim.wavefield());
    if (report.failed.empty()) {
      throw_if_interrupted();
      const auto a0 = Clock::now();
      store->assemble(meta, chosen, segy, [&](OutputFile& out) {
        out.write_model(model);
        out.set_attribute("precision", precision_name(survey.precision));
        out.set_attribute("run_ms_total", ms_since(start));
      });
      report.assemble_ms = ms_since(a0);
    } else {
      abandon_parts(*store, survey, options);
    }
  } catch (...) {
    abandon_parts(*store, survey, options);
    throw;
  }
  report.total_ms = ms_since(start);
  return report;
}

} // namespace minimod
