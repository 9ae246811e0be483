#pragma once
/// The kernel registry: every stencil kernel, keyed by the name users type (`gmem_3d_32x4x4`).
/// Name grammar (docs/kernels.md): FAMILY[_TILE] where TILE is DXxDY[xDZ]; FAMILY alone selects the
/// family's default tile. The CPU reference is the kernel `cpu`.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "core/precision.hpp"
#include "kernels/cpml.hpp"
#include "kernels/stencil_K.hpp"
#include "kernels/tti_K.hpp"

#include <memory>
#include <string>
#include <vector>

namespace minimod {

/// Where a kernel runs. A binary holds the CPU backend and at most one GPU backend (kGpuBackend):
/// the portable kernels under kernels/gpu/ (with kernels/cuda/ for cuda) compiled by nvcc (cuda)
/// or by hipcc (hip).
enum class BackendKind : int { Cpu = 0, Cuda = 1, Hip = 2 };

#if defined(MINIMOD_HAVE_CUDA) && defined(MINIMOD_HAVE_HIP)
#error "one GPU backend a binary: MINIMOD_HAVE_CUDA and MINIMOD_HAVE_HIP are both defined"
#endif
#if defined(MINIMOD_HAVE_CUDA) || defined(MINIMOD_HAVE_HIP)
#define MINIMOD_HAVE_GPU 1
#endif
/// The GPU backend this binary's kernels/gpu/ sources were compiled into.
#if defined(MINIMOD_HAVE_HIP)
inline constexpr BackendKind kGpuBackend = BackendKind::Hip;
#else
inline constexpr BackendKind kGpuBackend = BackendKind::Cuda;
#endif
/// Which equation a kernel advances.
enum class Physics : int { Acoustic = 0, Tti = 1 };

/// "cpu" / "cuda" / "hip".
const char* backend_name(BackendKind b);
/// "acoustic" / "tti".
const char* physics_name(Physics p);

class EtaRows;

/// eta of Minimod's layer as a small table of rows on the device (kernels/cpu/cpu_eta_rows.hpp,
/// EtaRows::padded_rows): eta(i, j, k) = rows[(y_class[j + 1] * z_values + z_class[k + 1]) *
/// pitch + x_offset + i], the bits of the padded array. Null `rows`: none.
struct EtaTableView {
  const float* rows = nullptr;
  const int* y_class = nullptr;
  const int* z_class = nullptr;
  int z_values = 0;
};

/// Pointers (host or device, matching the kernel's backend) to the isotropic fields, all in one
/// FieldLayout. u is u^n, v holds u^{n-1} on entry and u^{n+1} on exit; phi and eta may be null
/// when no region of kind Layer is launched. cpml, when set, makes the layer regions C-PML
/// regions (kernels/cpml.hpp): phi and eta are then unused, and the backend has run the memory
/// pass of the step before any layer region.
struct IsoFields {
  const float* u = nullptr;
  float* v = nullptr;
  const float* vp2dt2 = nullptr;
  float* phi = nullptr;
  const float* eta = nullptr;
  const CpmlView* cpml = nullptr;
  /// CPU kernel only: eta formed from its profiles (kernels/cpu/cpu_eta_rows.hpp), read instead
  /// of `eta` where set. GPU kernels read `eta`, except where they read `eta_table`.
  const EtaRows* eta_rows = nullptr;
  /// GPU only: eta's table of rows on the device, where the problem has eta's profiles; read by
  /// gmem_3d_f4's layer update instead of `eta` (the same bits, 4 bytes a point less from DRAM).
  /// Where it is set, `eta` may be null (StencilKernel::reads_eta_array).
  EtaTableView eta_table{};
};

/// The isotropic fields of a float16 run (core/precision.hpp) on a GPU, all in one FieldLayout, the
/// fields in binary16 times Problem::field_scale: u^n (`u`), u^{n+1} (`u_next`, written), the step
/// d (d^n on entry, d^{n+1} = u^{n+1} - u^n on exit), (c dt)^2 as MediumCode codes and, in
/// Minimod's layer, phi (binary16, read and written in place) and eta (float32, or its table).
/// A point reads u^{n-1} as u^n - d^n in float32, updates in float32 with the expressions of
/// stencil_K.hpp, and stores round_to_half of u^{n+1}, of u^{n+1} - u^n and of phi^{n+1}.
struct IsoFields16 {
  const std::uint16_t* u = nullptr;
  std::uint16_t* u_next = nullptr;
  std::uint16_t* d = nullptr;
  const std::uint16_t* vp2dt2 = nullptr;
  MediumCode code{};
  std::uint16_t* phi = nullptr;
  const float* eta = nullptr;
  EtaTableView eta_table{};
};

/// A stencil kernel for one backend and one physics, able to update regions of one or both kinds.
class StencilKernel {
public:
  virtual ~StencilKernel() = default;
  /// Full registered name, tile included (`gmem_3d_32x4x4`).
  virtual std::string name() const = 0;
  /// Family name (`gmem_3d`).
  virtual std::string family() const = 0;
  /// One line for `minimod-gpu kernels`.
  virtual std::string description() const = 0;
  /// Backend the kernel runs on.
  virtual BackendKind backend() const = 0;
  /// Physics the kernel advances.
  virtual Physics physics() const = 0;
  /// Whether the kernel implements the update of regions of this kind.
  virtual bool handles(RegionKind kind) const = 0;
  /// Whether the kernel's layer update implements the C-PML (kernels/cpml.hpp) for its physics.
  /// Kernels that do not are refused for the layer regions of a C-PML run.
  virtual bool handles_cpml() const { return false; }
  /// Whether the kernel has a form for runs of precision `p` (core/precision.hpp): every kernel
  /// runs float32; the `cpu` kernel (its backend keeps binary16 values) and the GPU kernels with
  /// launch16 run float16. The backend refuses a kernel without the run's precision by name
  /// before any step.
  virtual bool handles_precision(Precision p) const { return p == Precision::Float32; }
  /// Enqueue one float16 update of `region` (GPU kernels whose handles_precision(Float16) is
  /// true). The default throws std::logic_error.
  virtual void launch16(const IsoFields16& f, const FieldLayout& layout, const StencilCoefs& coefs,
                        const Region& region, void* stream) const;
  /// Whether its layer update reads eta's 3D array (IsoFields::eta) even where the backend gives
  /// it eta's table (IsoFields::eta_table) or the kernel forms eta from its profiles. The GPU
  /// backend keeps the array on the device only while a layer region's kernel reads it.
  virtual bool reads_eta_array() const { return true; }
  /// Empty when the kernel can update `region` of a field with `layout`; else the reason it cannot.
  /// Called before time stepping so that a kernel never silently computes wrong numbers.
  virtual std::string can_run(const Region& region, const FieldLayout& layout) const;
  /// Enqueue one update of `region` (asynchronous on GPU backends; `stream` is a gpuStream_t).
  /// Kernels of Physics::Tti throw std::logic_error: they are launched with launch_tti.
  virtual void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                      const Region& region, void* stream) const = 0;
  /// Enqueue one update of each of `count` disjoint regions (the pieces of a step part). The
  /// default launches them one by one with launch; the CPU kernels sweep them all in one parallel
  /// region.
  virtual void launch_regions(const IsoFields& f, const FieldLayout& layout,
                              const StencilCoefs& coefs, const Region* regions, int count,
                              void* stream) const;
  /// Enqueue one TTI update of `region` (p and q together; azimuth terms when f.axis_y is set).
  /// A layer region needs f.eta, and f.phi_p where a point of it is driven (TtiFields): with a
  /// null f.phi_p the kernel runs its layer form without phi, which has no drive. The default,
  /// for the isotropic kernels, throws std::logic_error.
  virtual void launch_tti(const TtiFields& f, const FieldLayout& layout, const TtiCoefs& coefs,
                          const Region& region, void* stream) const;
  /// Enqueue one TTI update of each of `count` regions of one kind (the layer slabs). The default
  /// launches them one by one with launch_tti; kernels that can cover several boxes with one grid
  /// (the streaming TTI kernels) launch once.
  virtual void launch_tti_regions(const TtiFields& f, const FieldLayout& layout,
                                  const TtiCoefs& coefs, const Region* regions, int count,
                                  void* stream) const;
};

/// All registered kernels. Registration is explicit (`register_*_kernels`), never static objects,
/// so the linker cannot drop a family.
class KernelRegistry {
public:
  /// Add a kernel; `family_default` marks the tile that the bare family name selects.
  void add(std::unique_ptr<StencilKernel> kernel, bool family_default = false);
  /// Kernel registered under `name` (full name, or family name for its default) for the backend
  /// and physics; nullptr when none.
  const StencilKernel* find(const std::string& name, BackendKind backend, Physics physics) const;
  /// Every kernel, in registration order.
  std::vector<const StencilKernel*> all() const;
  /// Registered names for a backend and physics (for error messages).
  std::vector<std::string> names(BackendKind backend, Physics physics) const;

private:
  struct Entry {
    std::unique_ptr<StencilKernel> kernel;
    bool family_default;
  };
  std::vector<Entry> m_entries;
};

/// The process-wide registry, filled with every family built into this binary on first use.
KernelRegistry& kernel_registry();

/// Registration functions, one per backend (defined in kernels/cpu and kernels/gpu).
void register_cpu_kernels(KernelRegistry& registry);
#if defined(MINIMOD_HAVE_GPU)
/// The GPU backend's kernels (kGpuBackend), whichever compiler built them.
void register_cuda_kernels(KernelRegistry& registry);
#endif

} // namespace minimod
