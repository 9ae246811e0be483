#pragma once
/// The CPU reference kernels `cpu` of each physics, registered together by register_cpu_kernels
/// (kernels/kernel.hpp): the acoustic one in kernels/cpu/cpu_kernel.cpp, the TTI one here.

#include "kernels/cpu/cpu_pass.hpp"
#include "kernels/kernel.hpp"

namespace minimod {

/// Register the TTI kernel `cpu` (kernels/cpu/cpu_tti_kernel.cpp).
void register_cpu_tti_kernels(KernelRegistry& registry);

/// Steps n .. n + steps - 1 of the acoustic equation in one pass over memory, with the `cpu`
/// kernel's per-point arithmetic (the same bits as single steps): u holds u^n and v u^(n-1) on
/// entry; on return the array step n + steps - 1 wrote holds u^(n+steps) (u when steps is even)
/// and the other u^(n+steps-1). `medium` gives vp2dt2, phi, eta and eta_rows (its u and v are
/// ignored). The pieces must be disjoint and make up the whole step (no halo exchange between the
/// steps). The (y, z) box of the pieces is cut into bands of about `band` rows (at least
/// (steps - 1) kHalo), balanced by cost among the threads (cpu_pass_bands); each band streams
/// through its planes, each step kHalo planes and kHalo rows behind the one before, and the
/// threads take bands in turn, each band at least one plane behind the band before it. With
/// `rates`, the bands follow the threads' measured rates, which the pass updates (CpuPassRates).
/// Under a C-PML (medium.cpml; the pieces then the whole grid, else std::logic_error) each step
/// updates the memory variables psi of its slabs in place kHalo planes and rows ahead of its
/// rows, the steps 2 kHalo planes and rows apart (bands of at least (2 steps - 1) kHalo rows):
/// the same bits as steps of cpml_fused_step_cpu.
void cpu_multi_step_pass(float* u, float* v, const IsoFields& medium, const FieldLayout& layout,
                         const StencilCoefs& coefs, const Region* regions, int count, int steps,
                         int band, const CpuPassPlaneHook& after_plane,
                         CpuPassRates* rates = nullptr);

/// The TTI equation's pass: steps n .. n + steps - 1 with the TTI `cpu` kernel's per-point
/// arithmetic, as cpu_multi_step_pass: p and q hold p^n and q^n, p_before and q_before the steps
/// before, on entry; on return the arrays the last step wrote hold p^(n+steps) and q^(n+steps)
/// (p and q when steps is even). `medium` gives the medium, eta and phi_p (its fields are
/// ignored); no C-PML (its memory pass runs between steps).
void cpu_tti_multi_step_pass(float* p, float* p_before, float* q, float* q_before,
                             const TtiFields& medium, const FieldLayout& layout,
                             const TtiCoefs& coefs, const Region* regions, int count, int steps,
                             int band, const CpuPassPlaneHook& after_plane,
                             CpuPassRates* rates = nullptr);

} // namespace minimod
