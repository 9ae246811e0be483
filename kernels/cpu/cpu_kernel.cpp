/// The CPU reference kernel `cpu`: the per-point math of stencil_K.hpp over any list of region
/// pieces in one OpenMP parallel region (cpu_sweep: (y, z) tiles, dynamic schedule, rows in memory
/// order), vectorised along x. Every point computes exactly the expressions of stencil_K.hpp in
/// their order, and the build keeps the compiler from fusing them (-ffp-contract=off), so results
/// do not depend on the tiling, the thread count or the vector width. Under a C-PML the layer
/// pieces take the C-PML update (kernels/cpu/cpu_cpml.cpp) and the inner pieces this sweep.
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_sweep.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

namespace minimod {
namespace {

/// Points a row goes in whole vectors (a 512-bit vector of floats; two 256-bit ones with AVX2).
constexpr int kRowVector = 16;

/// Calls body(s) for vectors of kRowVector points that cover [x0, x1) when the segment is at
/// least a vector long and not a whole number of them: the vectors from x0 in place, the last two
/// (the second ending at x1, so overlapping the first) through tail(s, slot) into a buffer of
/// 2 kRowVector, which `flush(first, count)` then stores. A segment's remainder runs in vector
/// code instead of the compiler's scalar epilogue (a 27-point layer slab has 11 such points, an
/// inner segment of 202 has 10). The overlapping points are computed twice from the same inputs,
/// none of which is written before the flush, so they get the same values.
/// Returns false (nothing done) for the other segments, which the caller sweeps with one loop.
template <class Body, class Tail, class Flush>
inline bool sweep_with_vector_tail(int x0, int x1, Body&& body, Tail&& tail, Flush&& flush) {
  const int n = x1 - x0, rest = n % kRowVector;
  if (n < kRowVector || rest == 0) return false;
  const int last = x1 - kRowVector - rest; // [x0, last): whole vectors, in place
  body(x0, last);
  tail(last, 0);
  tail(x1 - kRowVector, rest);
  flush(last, kRowVector + rest);
  return true;
}

/// Points [x0, x1) of the row starting at `row` (the linear index of x = 0), inner update.
inline void inner_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& coefs) {
  // A local copy: its coefficients stay in vector registers across the loop, where the caller's
  // (captured by reference) are broadcast from memory at every use.
  const StencilCoefs c = coefs;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  auto body = [&](int b0, int b1) {
#pragma omp simd
    for (int i = b0; i < b1; ++i) {
      const std::int64_t p = row + i;
      v[p] = inner_update(u[p], v[p], vp2dt2[p], laplacian_25(u, p, sy, sz, c));
    }
  };
  alignas(64) float out[2 * kRowVector];
  auto tail = [&](int s, int slot) {
#pragma omp simd
    for (int t = 0; t < kRowVector; ++t) {
      const std::int64_t p = row + s + t;
      out[slot + t] = inner_update(u[p], v[p], vp2dt2[p], laplacian_25(u, p, sy, sz, c));
    }
  };
  auto flush = [&](int first, int count) {
    for (int t = 0; t < count; ++t)
      v[row + first + t] = out[t];
  };
  if (!sweep_with_vector_tail(x0, x1, body, tail, flush)) body(x0, x1);
}

/// eta around the points of one row (j, k), each pointer indexed by i: the row itself (read at
/// i - 1, i, i + 1) and the rows at j - 1, j + 1, k - 1 and k + 1 (read at i).
struct EtaRowSet {
  const float* c;
  const float* ym;
  const float* yp;
  const float* zm;
  const float* zp;
};

/// eta_gradient_term of stencil_K.hpp, the same expression in the same order, with eta from a
/// row set instead of the padded array.
inline float eta_gradient_rows(const float* __restrict__ u, const EtaRowSet& e, std::int64_t p,
                               int i, std::int64_t sy, std::int64_t sz, const StencilCoefs& c) {
  return (e.c[i + 1] - e.c[i - 1]) * (u[p + 1] - u[p - 1]) * c.px +
         (e.yp[i] - e.ym[i]) * (u[p + sy] - u[p - sy]) * c.py +
         (e.zp[i] - e.zm[i]) * (u[p + sz] - u[p - sz]) * c.pz;
}

/// Points [x0, x1) of the row starting at `row`, absorbing-layer update (u and phi), eta from `e`.
inline void layer_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& coefs, const EtaRowSet& eta_rows) {
  const StencilCoefs c = coefs;
  const EtaRowSet e = eta_rows;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  float* __restrict__ phi = f.phi;
  auto body = [&](int b0, int b1) {
#pragma omp simd
    for (int i = b0; i < b1; ++i) {
      const std::int64_t p = row + i;
      const float lap = laplacian_25(u, p, sy, sz, c);
      const float grad = eta_gradient_rows(u, e, p, i, sy, sz, c);
      float phi_next;
      v[p] = layer_update(u[p], v[p], vp2dt2[p], lap, phi[p], e.c[i], grad, &phi_next);
      phi[p] = phi_next;
    }
  };
  alignas(64) float out_v[2 * kRowVector];
  alignas(64) float out_phi[2 * kRowVector];
  auto tail = [&](int s, int slot) {
#pragma omp simd
    for (int t = 0; t < kRowVector; ++t) {
      const int i = s + t;
      const std::int64_t p = row + i;
      const float lap = laplacian_25(u, p, sy, sz, c);
      const float grad = eta_gradient_rows(u, e, p, i, sy, sz, c);
      float phi_next;
      out_v[slot + t] = layer_update(u[p], v[p], vp2dt2[p], lap, phi[p], e.c[i], grad, &phi_next);
      out_phi[slot + t] = phi_next;
    }
  };
  auto flush = [&](int first, int count) {
    for (int t = 0; t < count; ++t) {
      v[row + first + t] = out_v[t];
      phi[row + first + t] = out_phi[t];
    }
  };
  if (!sweep_with_vector_tail(x0, x1, body, tail, flush)) body(x0, x1);
}

/// Every piece of regions[0, count) in one parallel region.
void update_regions(const IsoFields& f, const FieldLayout& l, const StencilCoefs& coefs,
                    const Region* regions, int count) {
  const std::int64_t sy = l.pitch, sz = l.plane;
  const StencilCoefs& c = coefs;
  cpu_sweep(regions, count, CpuTile{}, [&](const Region& r, int j, int k) {
    const std::int64_t row = l.index(0, j, k);
    if (r.kind() == RegionKind::Inner) {
      inner_row(f, row, r.box.x0, r.box.x1, sy, sz, c);
    } else if (f.eta_rows) {
      const EtaRows& t = *f.eta_rows;
      layer_row(f, row, r.box.x0, r.box.x1, sy, sz, c,
                EtaRowSet{t.row(j, k), t.row(j - 1, k), t.row(j + 1, k), t.row(j, k - 1),
                          t.row(j, k + 1)});
    } else {
      const float* e = f.eta + row;
      layer_row(f, row, r.box.x0, r.box.x1, sy, sz, c,
                EtaRowSet{e, e - sy, e + sy, e - sz, e + sz});
    }
  });
}

/// The CPU reference: handles every region kind, any list of boxes.
class CpuKernel final : public StencilKernel {
public:
  std::string name() const override { return "cpu"; }
  std::string family() const override { return "cpu"; }
  std::string description() const override {
    return "CPU reference: one OpenMP region over (y, z) tiles of all pieces, SIMD along x";
  }
  BackendKind backend() const override { return BackendKind::Cpu; }
  Physics physics() const override { return Physics::Acoustic; }
  bool handles(RegionKind) const override { return true; }
  bool handles_cpml() const override { return true; }
  void launch(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Region& r,
              void*) const override {
    launch_regions(f, l, c, &r, 1, nullptr);
  }
  void launch_regions(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                      const Region* regions, int count, void*) const override {
    if (f.cpml == nullptr) {
      update_regions(f, l, c, regions, count);
      return;
    }
    for (int i = 0; i < count; ++i) {
      const Region& r = regions[i];
      if (r.box.empty()) continue;
      if (r.kind() == RegionKind::Inner)
        update_regions(f, l, c, &r, 1);
      else
        cpml_update_layer_cpu(f, l, c, r.box);
    }
  }
};

} // namespace

void register_cpu_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<CpuKernel>(), true);
  register_cpu_tti_kernels(registry);
}

} // namespace minimod
