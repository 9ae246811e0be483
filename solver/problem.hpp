#pragma once
/// Building the backend-neutral AcousticProblem from a survey, its plan and its model.

#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "solver/plan.hpp"

#include <vector>

namespace minimod {

/// Minimod's damping as its three 1D profiles (kernels/backend.hpp, EtaProfiles): along each axis
/// A (d/n)^2 at depth d into a layer n points wide, A = dt 3 vmax ln(1000) / (2 n h), zero outside
/// the layers; grid points and one ghost point beyond each face.
EtaProfiles eta_profiles(const Grid& grid, const LayerWidths& layer, double dt, double vmax);

/// eta in the padded layout from its profiles: float((x + y) + z) summed in double, at the grid
/// points and the one ghost ring; zero elsewhere.
std::vector<float> build_eta(const Grid& grid, const EtaProfiles& profiles,
                             const FieldLayout& layout);

/// Minimod's damping profile in the padded layout (docs/physics.md section 3): eta = sum over axes
/// of A (d/n)^2, A = dt 3 vmax ln(1000) / (2 n h), for grid points and one ghost point beyond each
/// face.
std::vector<float> build_eta(const Grid& grid, const LayerWidths& layer, const FieldLayout& layout,
                             double dt, double vmax);

/// The C-PML parameters of a survey's boundary (docs/physics.md, "C-PML"): the survey's values,
/// else reflection 1e-4, power 2, alpha = pi fmax / 2.5 (pi times the Ricker peak frequency that
/// fmax stands for), kappa 1.
CpmlParams cpml_params(const BoundarySpec& boundary, double fmax);

/// The absorbing layer of a problem from its survey and plan: `p.boundary`, and Minimod's eta
/// (returned, in the padded layout) or the C-PML profile (`p.cpml`; eta empty). No layer: empty.
std::vector<float> build_layer(const Survey& survey, const Plan& plan, Problem& p);

/// (Re)build the source and receiver taps and the source samples of `survey` (one shot) in `p`,
/// and its field scale: at float16 (p.precision) half_field_scale of the largest |weight x
/// sample| of its source taps (1 without sources), else 1.
void set_shot_taps(const Survey& survey, const Plan& plan, const std::vector<float>& velocity,
                   AcousticProblem& p);

/// set_shot_taps with a model in GPU memory: the velocities at the sources' taps are gathered on
/// its device (kernels/device_array.hpp), the same taps as from the same model on the host, and
/// the same field scale.
void set_shot_taps(const Survey& survey, const Plan& plan, const DeviceArray& velocity,
                   AcousticProblem& p);

/// The problem a backend runs: fields in the padded layout, taps and source samples. At float16
/// (survey.precision; docs/physics.md, "16-bit storage") the medium is also coded in 16 bits:
/// vp2dt2_code and medium_code, and vp2dt2 holds the codes' decoded values; a C-PML is refused
/// (InputError naming `precision`). Float32 problems are unchanged by the precision's code.
AcousticProblem build_acoustic_problem(const Survey& survey, const Plan& plan,
                                       const std::vector<float>& velocity);

/// The problem of a model in GPU memory: no host medium (vp2dt2 empty); `device_velocity`
/// points at `velocity`, which must outlive the problem, and a GPU backend builds (c dt)^2 from
/// it on the device, equal to the host's medium of the same values. Refused at float16
/// (InputError naming `precision` and the model).
AcousticProblem build_acoustic_problem(const Survey& survey, const Plan& plan,
                                       const DeviceArray& velocity);

} // namespace minimod
