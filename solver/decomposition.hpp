#pragma once
/// Domain decomposition: the run's grid split into px x py x pz subdomains, one an MPI rank, each
/// stepped by its own backend with a halo exchange of kHalo planes a step (docs/architecture.md,
/// "Domain decomposition"). The equation of a rank (DecomposedEquation, made by decompose) cuts the
/// whole grid's problem to its subdomain; its hooks (DomainHooks) exchange the halos and gather
/// fields, traces and scans to the rank of the shot that writes.

#include "kernels/backend.hpp"
#include "solver/equation.hpp"
#include "solver/simulation.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#if defined(MINIMOD_HAVE_MPI)
#include <mpi.h>
#endif

namespace minimod {

/// Subdomains along x, y and z.
using Split = std::array<int, 3>;

/// Parse "PXxPYxPZ" (each a positive integer, e.g. 2x1x2); InputError naming `what` otherwise.
Split parse_split(const std::string& text, const std::string& what);
/// "2x1x2".
std::string split_text(const Split& split);
/// Subdomains of a split.
inline int split_ranks(const Split& s) {
  return s[0] * s[1] * s[2];
}

/// Parse a memory size: a number with B, KB, MB, GB or TB (powers of 1000) or KiB, MiB, GiB or
/// TiB (powers of 1024), e.g. 20GB; InputError naming `what` otherwise, or for zero.
std::size_t parse_memory_size(const std::string& text, const std::string& what);

/// One subdomain: the index in the run's grid of its first point and its points per axis.
struct SubdomainBox {
  std::array<int, 3> offset{};
  std::array<int, 3> size{};
  std::size_t points() const {
    return static_cast<std::size_t>(size[0]) * static_cast<std::size_t>(size[1]) *
           static_cast<std::size_t>(size[2]);
  }
};

/// The place of rank `rank` in the split: rank = cx + px (cy + py cz).
std::array<int, 3> split_coords(const Split& split, int rank);
/// The box of rank `rank`: each axis cut into near-equal pieces, the first ones a point longer.
SubdomainBox subdomain_box(const Grid& grid, const Split& split, int rank);
/// The faces rank `rank` shares with another subdomain (Subdomain::neighbour order).
std::array<bool, 6> subdomain_neighbours(const Split& split, int rank);

/// Refuse a split that the grid cannot take: InputError naming `what`, the split and the grid when
/// an axis has more pieces than points, or a subdomain is thinner than the halo (kHalo points)
/// along a split axis: its neighbours would need planes of the subdomain beyond it.
void check_split(const Grid& grid, const Split& split, const std::string& what);

/// The split of `ranks` subdomains with the fewest halo points, among those check_split accepts
/// (z, then y, then x preferred on ties: whole xy planes are contiguous in memory). InputError
/// naming `what` when none is.
Split auto_split(const Grid& grid, int ranks, const std::string& what);

/// The split of a run of `survey` on `grid`: `override` (--decompose, named `override_what`) when
/// given, else the survey's `decomposition` (`auto`: auto_split over ranks_per_shot, or over
/// `world_ranks` when that is not given), else auto_split over ranks_per_shot when only that is
/// given, else no split (1x1x1). Checked with check_split (InputError naming the key).
Split run_split(const Survey& survey, const Grid& grid, const std::optional<Split>& override,
                const std::string& override_what, int world_ranks);

/// Floats a rank exchanges a step (sent; as many are received) for `fields` halo fields: the
/// kHalo-deep planes of each shared face, and with `edges` (TTI: its mixed derivatives read the
/// diagonals of the xy, xz and yz planes) the edges and corners between them.
std::size_t halo_floats_per_step(const Grid& grid, const Split& split, int rank, int fields,
                                 bool edges);

/// The problem of a subdomain cut from the whole grid's problem `global`: the subgrid with its
/// offset and neighbours, the regions and layer widths of the subgrid, the medium on the subgrid's
/// padded layout (ghost planes included, so the neighbours' values are there), and the taps
/// (cut_taps). Acoustic and TTI problems.
std::unique_ptr<Problem> cut_problem(const Problem& global, const Split& split, int rank);

/// Where the traces of the run's receivers come from, once the taps are cut: a receiver whose taps
/// lie in one subdomain is a receiver of that rank; one whose taps span subdomains is a receiver of
/// weight 1 a tap on the rank owning the tap, weighted and summed at the writing rank in the
/// original order (the sum the whole grid's backend forms, bit for bit).
struct ReceiverSource {
  int rank = 0;        ///< the rank recording it
  int local = 0;       ///< its receiver number there
  float weight = 1.0f; ///< the tap's weight (a receiver split over ranks)
};
struct ReceiverMap {
  /// Per receiver of the run: one entry with `whole`, else one a tap.
  std::vector<std::vector<ReceiverSource>> sources;
  std::vector<bool> whole;
  std::vector<int> local_count; ///< receivers each rank records
};

/// Replace the taps of `local` (a problem cut_problem made for `rank`) with those of `global`
/// (the whole grid's, the same shot): every source's taps on the subgrid or its ghost planes
/// (the ghost ones repeat the neighbour's injection after the exchange; with a free surface the
/// taps of the surface plane are left out, as the surface zeroes them), and the receivers of
/// `map`. Returns the map (the same on every rank).
ReceiverMap cut_taps(const Problem& global, const Split& split, int rank, Problem& local);

/// A failure injected for tests of a run over MPI (MINIMOD_FAULT_INJECT="rank=R,shot=S,step=N",
/// docs/architecture.md): rank R of the group modelling shot S (0 for the group's first) throws
/// a RuntimeFailure as step N starts, so that the other ranks are left waiting for its halo. A
/// rank alone on its shots (solver/survey_run.cpp) throws at its first progress report from step N.
struct FaultInjection {
  int rank = 0;
  int shot = 0;
  int step = 0;
};

/// Parse the value of MINIMOD_FAULT_INJECT: each of rank, shot and step exactly once, as
/// non-negative integers, separated by commas; InputError naming the variable otherwise.
FaultInjection parse_fault_injection(const std::string& text);

#if defined(MINIMOD_HAVE_MPI)
/// A run's side of one subdomain.
struct DecomposedRun {
  std::shared_ptr<const Equation> equation; ///< builds and reshoots the subdomain's problem
  std::unique_ptr<DomainHooks> hooks;       ///< for Simulation::set_domain_hooks
};

/// Whether this MPI can send from and receive into CUDA device memory (Open MPI's
/// MPIX_Query_cuda_support, asked at run time; false where the library cannot say). A GPU run
/// then hands its device halo buffers to MPI; otherwise it stages them through pinned host memory.
/// MINIMOD_HALO_HOST_STAGING=1 forces the staging.
bool mpi_reads_device_memory();

/// How a GPU run's halos may travel, from MINIMOD_HALO_TRANSPORT: "auto" (unset: GPU to GPU peer
/// copies when every rank of a shot is on one node and each can open its neighbours' device
/// memory, else MPI), "peer" (peer copies or an error saying why not) or "mpi" (MPI only: device
/// buffers to a CUDA-aware MPI, else staged through pinned host memory). InputError naming the
/// variable for any other value. MINIMOD_HALO_HOST_STAGING=1 means "mpi" with staging.
std::string halo_transport_request();

/// The line `run` prints for a GPU run whose grid is split: how its halos travel.
std::string halo_exchange_notice();

/// Decompose the runs of `equation` over the ranks of `comm` (split_ranks(split) of them, rank r
/// taking subdomain r; rank 0 of comm writes). Every rank of comm builds a Simulation with the
/// returned equation, then sets the returned hooks on it.
DecomposedRun decompose(std::shared_ptr<const Equation> equation, const Split& split,
                        MPI_Comm comm);
#endif

} // namespace minimod
