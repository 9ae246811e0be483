/// Domain decomposition (solver/decomposition.hpp) on the CPU backend, run under
/// `mpirun --oversubscribe -np N`: every split of N subdomains below gives traces and fields bit
/// for bit those of one process stepping the whole grid, for the acoustic and the TTI equation,
/// with the absorbing layer, a free surface, sources and receivers on and across subdomain
/// boundaries, subdomains exactly as thin as the halo, and a second shot loaded into the same run.
#include "core/errors.hpp"
#include "io/survey.hpp"
#include "solver/decomposition.hpp"
#include "solver/equation.hpp"
#include "solver/simulation.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace minimod {
namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// 30 x 26 x 24 points of 10 m: cut in two along x at i = 15 (150 m), along y at j = 13 (130 m),
/// along z at k = 12 (120 m); in three along x at 100 and 200 m. The first source sits exactly on
/// the x, y and z cuts, the second between grid points near the y cut and across the z cut;
/// receivers lie on, across and away from every cut (the sinc's 8 points a side span two subdomains
/// and more).
std::string survey_text(bool tti, bool free_surface) {
  std::string s = tti ? "physics: tti\n"
                        "anisotropy: {angle_unit: degrees, epsilon: 0.2, delta: 0.1, theta: 30, "
                        "phi: 40}\n"
                      : "";
  s += "grid: {shape: [30, 26, 24], spacing: 10}\n"
       "model: {type: layered, layers: [{top: 0, velocity: 1800}, {top: 110, velocity: 2400}]}\n"
       "time: {steps: 36}\n";
  s += free_surface ? "boundary: {width: 5, free_surface: true}\n" : "boundary: {width: 5}\n";
  s += "shots:\n"
       "  wavelet: {type: ricker, frequency: 25}\n"
       "  positions: {points: [[150, 130, 120], [201, 127.5, 88.5]]}\n"
       "receivers:\n"
       "  points: [[150, 130, 120], [147, 133, 118], [100, 60, 121], [200, 200, 40], "
       "[60, 50, 60], [148.5, 129, 60]]\n"
       "  lines: [{start: [60, 128, 30], end: [240, 128, 30], count: 19}]\n";
  return s;
}

SimulationOptions cpu() {
  SimulationOptions o;
  o.backend = BackendChoice::Cpu;
  return o;
}

struct Outcome {
  std::vector<std::vector<float>> traces; ///< per shot
  std::vector<std::vector<float>> fields; ///< per shot, each field after the last step
};

/// Both shots of `survey` on `sim`: raw traces and every field.
Outcome run_shots(const Survey& survey, Simulation& sim, int fields) {
  Outcome out;
  for (int shot = 0; shot < 2; ++shot) {
    if (shot > 0) sim.load_shot(survey_for_shot(survey, shot));
    sim.run({}, nullptr);
    out.traces.push_back(sim.raw_traces());
    for (int f = 0; f < fields; ++f)
      out.fields.push_back(sim.field(f));
  }
  return out;
}

/// The split run on the first split_ranks(split) ranks of the world against one process on rank 0.
void expect_split_equals_whole(const Split& split, bool tti, bool free_surface) {
  const int n = split_ranks(split);
  ASSERT_LE(n, world_size());
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < n ? 0 : MPI_UNDEFINED, world_rank(), &comm);
  if (comm == MPI_COMM_NULL) return;
  const Survey survey = parse_survey(survey_text(tti, free_surface), "d.yaml", ".");
  std::shared_ptr<Equation> equation = make_equation(survey);
  equation->build_model(survey);
  const int fields = tti ? 2 : 1;

  DecomposedRun run = decompose(equation, split, comm);
  Simulation split_sim(survey_for_shot(survey, 0), run.equation, cpu());
  split_sim.set_domain_hooks(std::move(run.hooks));
  const Outcome got = run_shots(survey, split_sim, fields);
  MPI_Comm_free(&comm);
  if (world_rank() != 0) return;

  Simulation whole(survey_for_shot(survey, 0), equation, cpu());
  const Outcome want = run_shots(survey, whole, fields);
  const std::string what = split_text(split) + (tti ? " tti" : " acoustic") +
                           (free_surface ? " with a free surface" : "");
  ASSERT_EQ(got.traces.size(), want.traces.size()) << what;
  for (std::size_t s = 0; s < want.traces.size(); ++s) {
    ASSERT_EQ(got.traces[s].size(), want.traces[s].size()) << what << " shot " << s;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < want.traces[s].size(); ++i)
      differ += got.traces[s][i] != want.traces[s][i];
    EXPECT_EQ(differ, 0u) << what << ": traces of shot " << s << " differ at " << differ
                          << " samples";
  }
  double peak = 0;
  for (std::size_t f = 0; f < want.fields.size(); ++f) {
    ASSERT_EQ(got.fields[f].size(), want.fields[f].size()) << what;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < want.fields[f].size(); ++i) {
      differ += got.fields[f][i] != want.fields[f][i];
      peak = std::max(peak, std::abs(static_cast<double>(want.fields[f][i])));
    }
    EXPECT_EQ(differ, 0u) << what << ": field " << f << " differs at " << differ << " points";
  }
  EXPECT_GT(peak, 0.0) << what << ": the fields are all zero, the comparison proves nothing";
}

/// The splits of the world's size: along each axis, along two and three, and as thin as the halo.
std::vector<Split> splits_of(int ranks) {
  switch (ranks) {
  case 2:
    return {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}};
  case 3:
    return {{3, 1, 1}, {1, 3, 1}, {1, 1, 3}};
  case 4:
    return {{2, 2, 1}, {2, 1, 2}, {1, 2, 2}, {1, 1, 4}};
  case 8:
    return {{2, 2, 2}, {1, 1, 6}, {7, 1, 1}};
  default:
    return {};
  }
}

TEST(Decomposition, AcousticSplitsEqualOneProcess) {
  for (const Split& s : splits_of(world_size()))
    expect_split_equals_whole(s, false, false);
}

TEST(Decomposition, AcousticFreeSurfaceSplitsEqualOneProcess) {
  for (const Split& s : splits_of(world_size()))
    expect_split_equals_whole(s, false, true);
}

TEST(Decomposition, TtiSplitsEqualOneProcess) {
  for (const Split& s : splits_of(world_size()))
    expect_split_equals_whole(s, true, false);
}

TEST(Decomposition, SplitsThinnerThanTheHaloAreRefused) {
  const Grid g{30, 26, 24, 10, 10, 10, 0, 0, 0};
  try {
    check_split(g, {8, 1, 1}, "decomposition");
    FAIL() << "8 pieces of 30 points accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("8x1x1"), std::string::npos) << m;
    EXPECT_NE(m.find("thinner than the halo"), std::string::npos) << m;
    EXPECT_NE(m.find("at most 7 pieces along x"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(check_split(g, {7, 1, 6}, "decomposition"));
  EXPECT_THROW(parse_split("2x2", "--decompose"), InputError);
  EXPECT_THROW(parse_split("2x0x1", "--decompose"), InputError);
  EXPECT_EQ(parse_split("2x1x3", "--decompose"), (Split{2, 1, 3}));
  EXPECT_EQ(auto_split(g, 4, "decomposition"), (Split{2, 2, 1}));
  EXPECT_EQ(auto_split(g, 2, "decomposition"), (Split{2, 1, 1}));
}

} // namespace
} // namespace minimod

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  // One rank prints: the others' results reach the exit code.
  if (minimod::world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
