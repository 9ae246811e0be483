/// minimod_gpu._core: the program's library seen from Python (docs/python.md). Surveys are parsed
/// and checked by io/survey, planned by solver/plan and validate, and run by
/// solver/survey_run, exactly as the command line does; this file only converts arguments and
/// results and maps the program's exceptions onto Python's. The pure-Python package around it
/// (python/minimod_gpu/) builds surveys from dicts and arrays, shows progress and reads outputs.
#include "core/errors.hpp"
#include "io/memory_file.hpp"
#include "io/survey.hpp"
#include "kernels/device_array.hpp"
#include "kernels/kernel.hpp"
#include "models/velocity.hpp"
#include "solver/decomposition.hpp"
#include "solver/equation.hpp"
#include "solver/interrupt.hpp"
#include "solver/plan.hpp"
#include "solver/simulation.hpp"
#include "solver/survey_run.hpp"
#include "solver/validate.hpp"
#include "version.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace minimod {
namespace {

/// The Python exception classes, created at import (errors of the program's kinds).
PyObject* g_error = nullptr;        ///< MinimodError: every error below
PyObject* g_input_error = nullptr;  ///< InputError: exit code 2
PyObject* g_runtime = nullptr;      ///< RuntimeFailure: exit code 3
PyObject* g_device_error = nullptr; ///< DeviceError (a RuntimeFailure): exit code 3
PyObject* g_output_error = nullptr; ///< OutputError: exit code 4
PyObject* g_internal = nullptr;     ///< InternalError: exit code 1 (a bug)

PyObject* new_error(nb::module_& m, const char* name, PyObject* base, int code, const char* doc) {
  const std::string qualified = std::string("minimod_gpu.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (type == nullptr) throw nb::python_error();
  nb::handle(type).attr("exit_code") = code;
  m.attr(name) = nb::handle(type);
  return type;
}

/// Raise the Python exception of the program's error `p` (the message as the command line prints
/// it after "error: "); other exceptions go on to nanobind's own translators.
void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const nb::python_error&) {
    throw;
  } catch (const nb::builtin_exception&) {
    throw;
  } catch (const Interrupted& e) {
    PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
  } catch (const InputError& e) {
    PyErr_SetString(g_input_error, e.what());
  } catch (const RuntimeFailure& e) {
    PyErr_SetString(g_runtime, e.what());
  } catch (const OutputError& e) {
    PyErr_SetString(g_output_error, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(g_runtime, "out of host memory (an allocation failed); run on a host with "
                               "more memory, or make the grid smaller");
  } catch (const std::exception& e) {
    PyErr_SetString(g_internal, (std::string("internal error: ") + e.what()).c_str());
  }
}

/// A survey as the program holds it, with the memory files (arrays) it names.
struct SurveyHandle {
  Survey survey;
  std::vector<std::shared_ptr<const MemoryFile>> arrays;
};

/// A memory file kept alive by the Python object that holds this.
struct MemoryFileHandle {
  std::shared_ptr<const MemoryFile> file;
};

/// A DLPack array in CUDA memory as a GPU array file (io/memory_file.hpp), its axes in the
/// survey's `order` (zyx: the array is v[x, y, z]; xyz: v[z, y, x]). The file keeps a
/// reference to the producer's array, released with the GIL held.
MemoryFileHandle device_array_file(const std::string& stem, nb::ndarray<nb::ro, nb::ndim<3>> a,
                                   const std::string& order, const std::string& owner) {
#if defined(MINIMOD_HAVE_CUDA)
  constexpr int kDevice = nb::device::cuda::value;
#elif defined(MINIMOD_HAVE_HIP)
  constexpr int kDevice = nb::device::rocm::value;
#else
  constexpr int kDevice = -1;
#endif
  if (static_cast<int>(a.device_type()) != kDevice) {
    throw InputError(stem + ": " + owner +
                     " is not allowed as a GPU array: it is not in this build's GPU memory "
                     "(DLPack device type " +
                     std::to_string(a.device_type()) + ")");
  }
  const bool f64 = a.dtype() == nb::dtype<double>();
  if (!f64 && a.dtype() != nb::dtype<float>()) {
    throw InputError(stem + ": " + owner + " is not allowed: a float32 or float64 array");
  }
  if (order != "zyx" && order != "xyz") throw InputError(stem + ": order '" + order + "'");
  DeviceArray d;
  d.data = a.data();
  d.f64 = f64;
  d.device = static_cast<int>(a.device_id());
  d.owner = owner;
  // The model axis of each array axis: zyx holds v[x, y, z], xyz v[z, y, x].
  d.array_axes = order == "zyx" ? std::array<int, 3>{0, 1, 2} : std::array<int, 3>{2, 1, 0};
  for (std::size_t n = 0; n < 3; ++n) {
    const auto axis = static_cast<std::size_t>(d.array_axes[n]);
    if (a.shape(n) > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw InputError(stem + ": " + owner + ": more than 2^31 - 1 points along an axis");
    d.shape[axis] = static_cast<int>(a.shape(n));
    d.stride[axis] = static_cast<std::int64_t>(a.stride(n));
  }
  auto* ref = new nb::ndarray<nb::ro, nb::ndim<3>>(a);
  d.keep_alive = std::shared_ptr<const void>(ref, [](const void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<const nb::ndarray<nb::ro, nb::ndim<3>>*>(p);
  });
  {
    nb::gil_scoped_release release;
    scan_device_array(d);
  }
  return MemoryFileHandle{register_device_array(stem, std::move(d))};
}

/// A float array of `shape` that owns `values` (no copy): NumPy's view keeps the vector alive.
nb::object owning_array(std::vector<float> values, std::vector<std::size_t> shape) {
  auto* owned = new std::vector<float>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  return nb::ndarray<nb::numpy, float>(owned->data(), shape.size(), shape.data(), owner).cast();
}

/// Positions in metres as an (n, 3) float64 array.
nb::object positions_array(const std::vector<Vec3>& points) {
  std::vector<double>* owned = new std::vector<double>();
  owned->reserve(points.size() * 3);
  for (const Vec3& p : points)
    owned->insert(owned->end(), p.begin(), p.end());
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  const std::size_t shape[2] = {points.size(), 3};
  return nb::ndarray<nb::numpy, double>(owned->data(), 2, shape, owner).cast();
}

nb::dict plan_dict(const Plan& p) {
  nb::dict d;
  d["shape"] = nb::make_tuple(p.grid.nx, p.grid.ny, p.grid.nz);
  d["spacing"] = nb::make_tuple(p.grid.dx, p.grid.dy, p.grid.dz);
  d["origin"] = nb::make_tuple(p.grid.ox, p.grid.oy, p.grid.oz);
  d["layer_widths"] = nb::make_tuple(p.layer.x_lo, p.layer.x_hi, p.layer.y_lo, p.layer.y_hi,
                                     p.layer.z_lo, p.layer.z_hi);
  d["model_vmin"] = p.model_vmin;
  d["model_vmax"] = p.model_vmax;
  d["vmax"] = p.vmax;
  d["fmax"] = p.fmax;
  d["dt"] = p.dt;
  d["dt_limit"] = p.dt_limit;
  d["cfl"] = p.cfl;
  d["steps"] = p.steps;
  d["duration"] = p.duration;
  d["points_per_wavelength"] = p.points_per_wavelength;
  d["dt_out"] = p.dt_out;
  d["trace_samples"] = p.trace_samples;
  d["snapshot_every"] = p.snapshot_every;
  d["snapshot_count"] = p.snapshot_count;
  d["snapshot_shape"] = nb::make_tuple(p.snapshot_geometry.shape[0], p.snapshot_geometry.shape[1],
                                       p.snapshot_geometry.shape[2]);
  d["device_bytes"] = p.device_bytes;
  d["output_bytes"] = p.output_bytes;
  d["host_bytes"] = p.host_bytes;
  d["warnings"] = p.warnings;
  return d;
}

/// The plan of shot 0 as `run` makes it, after validate_survey has checked the survey: from the
/// velocity range alone for a model that varies with depth only (as validate does), else from the
/// built model.
Plan survey_plan(const Survey& s, int steps) {
  const Grid grid = make_grid(s.grid);
  const Survey first = survey_for_shot(s, 0);
  if (s.physics != "tti") {
    if (const auto range = model_range(s.model, grid))
      return make_plan(first, VelocityRange{range->first, range->second}, steps);
  }
  const std::shared_ptr<Equation> equation = make_equation(s);
  equation->build_model(s);
  return equation->make_plan(first, steps);
}

nb::dict validate(const SurveyHandle& h, const std::string& backend, const std::string& kernel,
                  int steps, const std::string& decompose, const std::string& max_device_memory,
                  int ranks) {
  ValidateOptions options;
  options.backend = backend;
  options.kernel = kernel;
  options.steps = steps;
  options.decompose = decompose;
  options.max_device_memory = max_device_memory;
  options.ranks = ranks;
  std::string text;
  Plan plan;
  {
    nb::gil_scoped_release release;
    text = validate_survey(h.survey, options);
    plan = survey_plan(h.survey, steps);
  }
  nb::dict d = plan_dict(plan);
  d["text"] = text;
  return d;
}

/// What run() collects while the GIL is released: the gathers, moved out of the run.
struct Collected {
  ShotGather gather;
  const void* address = nullptr; ///< where the traces were in the run (to show they are not copied)
};

nb::dict run(const SurveyHandle& h, const std::string& backend, const std::string& kernel,
             int steps, const std::string& shots, const std::string& output, bool resume,
             const std::string& resume_command, const std::string& decompose,
             const std::string& max_device_memory, nb::object progress, nb::object notice) {
  const Survey& s = h.survey;
  SurveyRunOptions options;
  options.simulation.backend = parse_backend_choice(backend, "backend");
  options.simulation.kernel_spec = kernel;
  options.simulation.steps_override = steps;
  if (!decompose.empty()) options.decompose = parse_split(decompose, "decompose");
  if (!max_device_memory.empty())
    options.simulation.max_device_bytes = parse_memory_size(max_device_memory, "max_device_memory");
  options.output = output;
  options.output_given = true; // SEG-Y and XDMF go beside `output`, named after it
  options.backend_option = backend;
  options.resume = resume;
  options.resume_command = resume_command;
  if (!shots.empty())
    options.shots = parse_shot_selection(shots, static_cast<int>(s.shots.size()), "shots");

  // Python callbacks run with the GIL taken again; an exception they raise stops the run as an
  // interrupt does (complete shots kept) and is raised again once the run has unwound.
  std::optional<nb::python_error> callback_error;
  auto call = [&](const nb::object& f, auto&&... args) {
    if (!f.is_valid() || f.is_none() || callback_error) return;
    nb::gil_scoped_acquire acquire;
    try {
      f(args...);
    } catch (nb::python_error& e) {
      callback_error.emplace(std::move(e));
    }
    if (callback_error) throw Interrupted(2);
  };
  int shot_now = -1, steps_per_shot = 0;
  options.hooks.on_plan = [&](const Plan& plan) { steps_per_shot = plan.steps; };
  options.on_shot_start = [&](const ShotStart& start) {
    shot_now = start.shot;
    call(progress, "shot", start.shot, start.done, start.total);
  };
  options.hooks.on_progress = [&](int done) {
    call(progress, "step", shot_now, done, steps_per_shot);
  };
  options.hooks.notice = [&](const std::string& line) { call(notice, line); };
  // As the command line prints it, even when quiet: what the user needs to continue.
  options.on_parts_kept = [&](int complete, int total, const std::string& folder) {
    call(notice, std::to_string(complete) + " of " + std::to_string(total) +
                     " shots are complete and kept in '" + folder +
                     "'; resume with: " + resume_command);
  };
  std::vector<Collected> gathers;
  options.on_gather = [&](ShotGather& g) {
    Collected c;
    c.address = g.traces.data();
    c.gather = std::move(g);
    gathers.push_back(std::move(c));
  };

  SurveyRunReport report;
  std::exception_ptr failed;
  {
    nb::gil_scoped_release release;
    InterruptScope interrupts; // Ctrl-C: stop at the next step, as the command line does
    try {
      report = run_survey_shots(s, options);
    } catch (...) {
      failed = std::current_exception();
    }
  }
  if (callback_error) {
    gathers.clear();
    callback_error->restore();
    throw nb::python_error();
  }
  if (failed) std::rethrow_exception(failed);

  nb::list out_gathers;
  for (Collected& c : gathers) {
    ShotGather& g = c.gather;
    const std::size_t receivers = g.receiver_positions.size();
    nb::dict d;
    d["shot"] = g.shot;
    d["dt_out"] = g.dt_out;
    d["samples"] = g.samples;
    d["traces_address"] = reinterpret_cast<std::uintptr_t>(c.address);
    d["traces"] =
        owning_array(std::move(g.traces), {receivers, static_cast<std::size_t>(g.samples)});
    d["receivers"] = positions_array(g.receiver_positions);
    d["sources"] = positions_array(g.source_positions);
    d["wavelet_dt"] = g.wavelet_dt;
    d["wavelet"] =
        owning_array(std::move(g.wavelet),
                     {g.source_positions.size(), static_cast<std::size_t>(g.wavelet_samples)});
    out_gathers.append(d);
  }
  nb::dict r;
  r["gathers"] = out_gathers;
  r["plan"] = plan_dict(report.last.plan);
  r["backend"] = report.last.backend;
  r["device"] = report.last.device;
  nb::dict kernels;
  for (int k = 0; k < kRegionCount; ++k)
    kernels[region_name(static_cast<RegionId>(k))] = report.last.kernels[k];
  r["kernels"] = kernels;
  nb::list timings;
  for (const ShotTiming& t : report.shots) {
    nb::dict d;
    d["shot"] = t.shot;
    d["setup_ms"] = t.setup_ms;
    d["step_ms"] = t.step_ms;
    d["output_ms"] = t.output_ms;
    timings.append(d);
  }
  r["shot_timings"] = timings;
  r["skipped"] = report.skipped;
  nb::list failures;
  for (const auto& [shot, why] : report.failed)
    failures.append(nb::make_tuple(shot, why));
  r["failed"] = failures;
  r["model_ms"] = report.model_ms;
  r["problem_ms"] = report.problem_ms;
  r["device_ms"] = report.device_ms;
  r["total_ms"] = report.total_ms;
  r["assemble_ms"] = report.assemble_ms;
  r["median_step_ms"] = report.last.timing.median_step_ms;
  r["mpoints_per_s"] = report.last.timing.mpoints_per_s;
  return r;
}

nb::dict survey_facts(const SurveyHandle& h) {
  const Survey& s = h.survey;
  nb::dict d;
  d["path"] = s.path;
  d["text"] = s.text;
  d["name"] = s.name;
  d["physics"] = s.physics;
  d["shape"] = nb::make_tuple(s.grid.shape[0], s.grid.shape[1], s.grid.shape[2]);
  d["spacing"] = nb::make_tuple(s.grid.spacing[0], s.grid.spacing[1], s.grid.spacing[2]);
  d["origin"] = nb::make_tuple(s.grid.origin[0], s.grid.origin[1], s.grid.origin[2]);
  d["shots"] = s.shots.size();
  d["output_file"] = s.output.file;
  std::vector<Vec3> receivers;
  for (const ReceiverSpec& r : s.receivers)
    receivers.push_back(r.position);
  d["receivers"] = positions_array(receivers);
  d["receivers_move"] = s.receivers_move;
  std::vector<Vec3> sources;
  for (const ShotSpec& shot : s.shots)
    sources.push_back(shot.sources.empty() ? Vec3{} : shot.sources.front().position);
  d["sources"] = positions_array(sources);
  return d;
}

} // namespace
} // namespace minimod

NB_MODULE(_core, m) {
  using namespace minimod;
  m.doc() = "minimod-gpu's library: surveys, plans and runs (see the package minimod_gpu)";
  m.attr("__version__") = kProgramVersion;
  m.attr("__commit__") = kGitCommit;

  g_error = new_error(m, "MinimodError", PyExc_Exception, 1,
                      "Any error of minimod-gpu; `exit_code` is the command line's exit code.");
  g_input_error = new_error(m, "InputError", g_error, kExitBadInput,
                            "Bad input (exit 2): the survey, a model or wavelet, an argument; the "
                            "message names the file, line, field, value and what is allowed.");
  g_runtime = new_error(m, "RuntimeFailure", g_error, kExitRuntime,
                        "A runtime failure (exit 3): out of memory, a wavefield that became NaN "
                        "or Inf, shots that failed.");
  g_device_error = new_error(m, "DeviceError", g_runtime, kExitRuntime,
                             "A GPU that cannot be used (exit 3): no GPU for device arrays, an "
                             "array on a device this build cannot read.");
  g_output_error = new_error(m, "OutputError", g_error, kExitOutput,
                             "The output could not be written (exit 4), or another run holds it.");
  g_internal = new_error(m, "InternalError", g_error, kExitInternal,
                         "A bug (exit 1): please report it with the message.");
  nb::register_exception_translator(translate);

  nb::class_<MemoryFileHandle>(m, "MemoryFile", "An array held in memory as an input file.")
      .def_prop_ro("name", [](const MemoryFileHandle& h) { return h.file->name; });
  m.def(
      "register_memory_file",
      [](const std::string& stem, const std::string& extension, nb::bytes data) {
        return MemoryFileHandle{
            register_memory_file(stem, extension, std::string(data.c_str(), data.size()))};
      },
      "stem"_a, "extension"_a, "data"_a,
      "Hold `data` (a file's bytes) as an input file; its name is what a survey gives as a file.");

#if defined(MINIMOD_HAVE_GPU)
  m.attr("gpu_backend") = backend_name(kGpuBackend);
#else
  m.attr("gpu_backend") = "";
#endif
  m.def(
      "resolve_backend",
      [](const std::string& backend) {
        // What a run of `backend` would use here; a GPU that is asked for but absent fails at
        // the run's start as on the command line, so it counts as that GPU here.
        const BackendChoice choice = parse_backend_choice(backend, "backend");
        if (choice != BackendChoice::Auto) return std::string(backend);
        return std::string(backend_name(resolve_backend_choice(choice, {})));
      },
      "backend"_a, "The backend a run of `backend` (cpu, cuda, hip, auto) uses on this machine.");
  m.def(
      "register_device_array",
      [](const std::string& stem, nb::ndarray<nb::ro, nb::ndim<3>> array, const std::string& order,
         const std::string& owner) { return device_array_file(stem, array, order, owner); },
      "stem"_a, "array"_a, "order"_a, "owner"_a,
      "Hold a 3-D float32 or float64 array in CUDA memory (DLPack) as a velocity model file: "
      "checked, ranged and summed on its GPU, never copied to the host.");
  m.def(
      "device_array_checksum",
      [](const MemoryFileHandle& h) {
        if (!h.file->device) throw nb::value_error("not a GPU array");
        return h.file->device->checksum;
      },
      "h"_a, "The checksum of a registered GPU array's values (its scan at registration).");

  nb::class_<SurveyHandle>(m, "SurveyHandle", "A parsed and checked survey.")
      .def("facts", &survey_facts, "The survey's grid, shots, receivers and text.");
  m.def(
      "load_survey",
      [](const std::string& path) {
        auto h = std::make_shared<SurveyHandle>();
        h->survey = load_survey(path);
        return h;
      },
      "path"_a, "Parse and check a survey file (InputError with the program's message).");
  m.def(
      "parse_survey",
      [](const std::string& text, const std::string& path, const std::string& base_dir,
         std::vector<MemoryFileHandle> arrays) {
        auto h = std::make_shared<SurveyHandle>();
        for (const MemoryFileHandle& a : arrays)
          h->arrays.push_back(a.file);
        h->survey = parse_survey(text, path, base_dir);
        return h;
      },
      "text"_a, "path"_a, "base_dir"_a, "arrays"_a,
      "Parse and check survey text; relative file names resolve against base_dir.");
  m.def("validate", &validate, "survey"_a, "backend"_a, "kernel"_a, "steps"_a, "decompose"_a,
        "max_device_memory"_a, "ranks"_a,
        "Every check `run` makes before its first step; the plan as a dict, its text as `validate` "
        "prints it under 'text'.");
  m.def("run", &run, "survey"_a, "backend"_a, "kernel"_a, "steps"_a, "shots"_a, "output"_a,
        "resume"_a, "resume_command"_a, "decompose"_a, "max_device_memory"_a, "progress"_a.none(),
        "notice"_a.none(),
        "Run the survey into `output` (its parts, then the assembled file); the gathers come back "
        "as NumPy arrays that own the run's buffers.");
  m.def(
      "kernels",
      [] {
        nb::list out;
        for (const StencilKernel* k : kernel_registry().all()) {
          nb::dict d;
          d["name"] = k->name();
          d["family"] = k->family();
          d["backend"] = backend_name(k->backend());
          d["physics"] = physics_name(k->physics());
          d["description"] = k->description();
          out.append(d);
        }
        return out;
      },
      "The registered kernels, as `minimod-gpu kernels` lists them.");
}
