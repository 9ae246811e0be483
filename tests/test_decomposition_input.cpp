/// What a decomposed run takes as input, checked without MPI: the survey keys decomposition and
/// ranks_per_shot, --decompose and --max-device-memory, the split of the grid (pieces, neighbours,
/// the halo refused when thicker than a piece, auto), the cut of a problem's taps (every source
/// reaching a subdomain or its ghost planes, receivers split per tap across subdomains), and what
/// validate prints. tests/mpi/ runs the decomposed runs themselves under mpirun.
#include "core/errors.hpp"
#include "io/survey.hpp"
#include "solver/decomposition.hpp"
#include "solver/equation.hpp"
#include "solver/validate.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace minimod {
namespace {

const std::string kSurvey = "grid: {shape: [40, 30, 24], spacing: 10}\n"
                            "model: {type: constant, velocity: 2000}\n"
                            "time: {steps: 10}\n"
                            "boundary: {width: 5}\n"
                            "sources: [{position: [200, 150, 120], wavelet: {type: ricker, "
                            "frequency: 10}}]\n"
                            "receivers: {points: [[197, 150, 120], [60, 60, 60]]}\n";

std::string error_of(const std::string& text) {
  try {
    parse_survey(text, "d.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return "";
}

void expect_has(const std::string& text, std::initializer_list<const char*> pieces) {
  for (const char* piece : pieces)
    EXPECT_NE(text.find(piece), std::string::npos) << "'" << piece << "' not in: " << text;
}

TEST(DecompositionInput, SurveyKeys) {
  const Survey s =
      parse_survey(kSurvey + "decomposition: [2, 1, 3]\nranks_per_shot: 6\n", "d.yaml", ".");
  ASSERT_TRUE(s.decomposition);
  EXPECT_EQ(*s.decomposition, (std::array<int, 3>{2, 1, 3}));
  EXPECT_EQ(s.ranks_per_shot, 6);
  const Survey a = parse_survey(kSurvey + "decomposition: auto\n", "d.yaml", ".");
  EXPECT_EQ(*a.decomposition, (std::array<int, 3>{0, 0, 0}));
  EXPECT_FALSE(parse_survey(kSurvey, "d.yaml", ".").decomposition);

  expect_has(error_of(kSurvey + "decomposition: [2, 1]\n"),
             {"d.yaml:7: decomposition", "[2, 1]", "allowed: auto, or [px, py, pz]"});
  expect_has(error_of(kSurvey + "decomposition: [2, 0, 1]\n"),
             {"decomposition[1]", "0", "an integer >= 1"});
  expect_has(error_of(kSurvey + "decomposition: two\n"), {"decomposition", "two", "auto"});
  expect_has(error_of(kSurvey + "ranks_per_shot: 0\n"), {"ranks_per_shot", "0", ">= 1"});
  expect_has(error_of(kSurvey + "decomposition: [2, 1, 1]\nranks_per_shot: 3\n"),
             {"d.yaml:8: ranks_per_shot", "3", "allowed: 2, the subdomains of decomposition"});
}

TEST(DecompositionInput, CommandLineValues) {
  EXPECT_EQ(parse_split("4x1x2", "--decompose"), (Split{4, 1, 2}));
  for (const char* bad : {"4x1", "4x1x2x1", "0x1x1", "ax1x1", "", "4X1X2", "-1x1x1"}) {
    try {
      parse_split(bad, "--decompose");
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      expect_has(e.what(), {"--decompose", "PXxPYxPZ"});
    }
  }
  EXPECT_EQ(parse_memory_size("20GB", "--max-device-memory"), 20000000000u);
  EXPECT_EQ(parse_memory_size("512MiB", "--max-device-memory"), 512u << 20);
  EXPECT_EQ(parse_memory_size("1.5KB", "--max-device-memory"), 1500u);
  for (const char* bad : {"20", "20 GB", "GB", "0GB", "20gb", "x"}) {
    try {
      parse_memory_size(bad, "--max-device-memory");
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      expect_has(e.what(), {"--max-device-memory", "allowed: a positive size with a unit"});
    }
  }
}

TEST(DecompositionInput, FaultInjectionIsParsedStrictly) {
  const FaultInjection f = parse_fault_injection("shot=3,rank=1,step=25");
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.shot, 3);
  EXPECT_EQ(f.step, 25);
  for (const char* bad :
       {"", "rank=1,shot=3", "rank=1,shot=3,step=2,rank=0", "rank=-1,shot=0,step=0",
        "rank=1,shot=3,step=", "rank=1,shot=3,step=2x", "rank=1,shot=3,steps=2",
        "rank 1,shot=3,step=2", "rank=1,,shot=3,step=2", "rank=1,shot=3,step=2,"}) {
    try {
      parse_fault_injection(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const InputError& e) {
      expect_has(e.what(), {"MINIMOD_FAULT_INJECT='", "allowed: rank=R,shot=S,step=N"});
    }
  }
}

TEST(DecompositionInput, SplitPiecesNeighboursAndRefusals) {
  const Grid g{40, 30, 24, 10, 10, 10, 0, 0, 0};
  const Split s{3, 1, 2};
  // 40 = 14 + 13 + 13 along x; 24 = 12 + 12 along z; rank = cx + 3 (cy + cz).
  const SubdomainBox b4 = subdomain_box(g, s, 4);
  EXPECT_EQ(b4.offset, (std::array<int, 3>{14, 0, 12}));
  EXPECT_EQ(b4.size, (std::array<int, 3>{13, 30, 12}));
  EXPECT_EQ(subdomain_neighbours(s, 4),
            (std::array<bool, 6>{true, true, false, false, true, false}));
  std::size_t points = 0;
  for (int r = 0; r < 6; ++r)
    points += subdomain_box(g, s, r).points();
  EXPECT_EQ(points, g.points());
  // Faces only: x planes 4 x 30 x 12 on both sides, one z plane 13 x 30 x 4; TTI adds the edges.
  EXPECT_EQ(halo_floats_per_step(g, s, 4, 1, false), 2u * 4 * 30 * 12 + 13u * 30 * 4);
  EXPECT_EQ(halo_floats_per_step(g, s, 4, 2, true),
            2u * (2 * 4 * 30 * 12 + 13 * 30 * 4 + 2 * 4 * 30 * 4));

  EXPECT_NO_THROW(check_split(g, {10, 7, 6}, "decomposition"));
  try {
    check_split(g, {1, 1, 7}, "d.yaml:9: decomposition");
    FAIL() << "pieces of 3 points accepted";
  } catch (const InputError& e) {
    expect_has(e.what(), {"d.yaml:9: decomposition: 1x1x7", "24 points along z cut into 7",
                          "thinner than the halo (4 points", "allowed: at most 6 pieces along z"});
  }
  EXPECT_EQ(auto_split(g, 2, "decomposition"), (Split{2, 1, 1})); // the smallest cut plane
  try {
    auto_split(Grid{9, 9, 9, 10, 10, 10, 0, 0, 0}, 64, "decomposition");
    FAIL() << "64 pieces of a 9^3 grid";
  } catch (const InputError& e) {
    expect_has(e.what(), {"no split", "into 64 subdomains"});
  }
}

TEST(DecompositionInput, RunSplitFollowsTheCommandLineThenTheSurvey) {
  const Grid g{40, 30, 24, 10, 10, 10, 0, 0, 0};
  const Survey none = parse_survey(kSurvey, "d.yaml", ".");
  const Survey fixed = parse_survey(kSurvey + "decomposition: [1, 2, 1]\n", "d.yaml", ".");
  const Survey automatic = parse_survey(kSurvey + "decomposition: auto\n", "d.yaml", ".");
  const Survey ranks = parse_survey(kSurvey + "ranks_per_shot: 2\n", "d.yaml", ".");
  EXPECT_EQ(run_split(none, g, std::nullopt, "--decompose", 8), (Split{1, 1, 1}));
  EXPECT_EQ(run_split(fixed, g, std::nullopt, "--decompose", 8), (Split{1, 2, 1}));
  EXPECT_EQ(run_split(fixed, g, Split{1, 1, 1}, "--decompose", 8), (Split{1, 1, 1}));
  EXPECT_EQ(run_split(automatic, g, std::nullopt, "--decompose", 4), (Split{2, 2, 1}));
  EXPECT_EQ(run_split(ranks, g, std::nullopt, "--decompose", 8), (Split{2, 1, 1}));
  EXPECT_THROW(run_split(none, g, Split{1, 1, 8}, "--decompose", 8), InputError);
}

TEST(DecompositionInput, TapsOfSourcesAndReceiversAcrossACut) {
  // Cut at x = 20 (200 m). The source's sinc (4 points a side: i = 17..24) and the
  // first receiver's (i = 16..23) span it; the second receiver is on a grid point of rank 0.
  const Survey s = parse_survey(
      "grid: {shape: [40, 30, 24], spacing: 10}\n"
      "model: {type: constant, velocity: 2000}\n"
      "time: {steps: 10}\n"
      "boundary: {width: 5}\n"
      "sources: [{position: [203, 147, 121], wavelet: {type: ricker, frequency: 10}}]\n"
      "receivers: {points: [[197, 150, 120], [60, 60, 60]]}\n",
      "d.yaml", ".");
  std::shared_ptr<Equation> eq = make_equation(s);
  eq->build_model(s);
  const Plan plan = eq->make_plan(s, 0);
  const std::unique_ptr<Problem> whole = eq->build_problem(s, plan);
  const Split split{2, 1, 1};
  std::size_t source_taps = 0;
  std::vector<int> recorded(2, 0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::unique_ptr<Problem> part = cut_problem(*whole, split, rank);
    const ReceiverMap map = cut_taps(*whole, split, rank, *part);
    EXPECT_EQ(part->sources.owners(), 1u);
    EXPECT_EQ(part->source_samples, whole->source_samples);
    // Each rank injects every tap on its 20 columns and its 4 ghost columns: rank 0 those at
    // i = 17..23 (7 of 8 along x), rank 1 all 8 (its ghost columns start at 16).
    EXPECT_EQ(part->sources.index.size(), (rank == 0 ? 7u : 8u) * 8 * 8) << "rank " << rank;
    source_taps += part->sources.index.size();
    ASSERT_EQ(map.sources.size(), 2u);
    EXPECT_FALSE(map.whole[0]);           // across the cut: one receiver a tap
    EXPECT_TRUE(map.whole[1]);            // at 60 m: rank 0's own
    EXPECT_EQ(map.sources[0].size(), 8u); // y and z on grid points: 8 taps along x
    EXPECT_EQ(map.sources[1].front().rank, 0);
    recorded[static_cast<std::size_t>(rank)] = static_cast<int>(part->receivers.owners());
    EXPECT_EQ(map.local_count[static_cast<std::size_t>(rank)],
              recorded[static_cast<std::size_t>(rank)]);
  }
  EXPECT_EQ(source_taps, 15u * 8 * 8);
  EXPECT_EQ(recorded[0], 4 + 1); // the first receiver's taps at x < 200 m, and the second
  EXPECT_EQ(recorded[1], 4);
}

TEST(DecompositionInput, ValidatePrintsTheSplitAndTheCap) {
  const Survey s = parse_survey(kSurvey + "decomposition: [2, 1, 1]\n", "d.yaml", ".");
  ValidateOptions o;
  o.backend = "cpu";
  const std::string text = validate_survey(s, o);
  expect_has(text, {"decomposition 2x1x1: 2 ranks a shot",
                    "rank 0: [0, 20) x [0, 30) x [0, 24), 20 x 30 x 24 points; halo 4 planes "
                    "toward x+, 11.25 KiB sent a step; device memory about",
                    "rank 1: [20, 40)", "halo        11.25 KiB a step", "memory      about"});
  // With a cap: the figure `run` checks (the cut problem's Problem::device_bytes), refused as
  // `run` refuses it when a rank's exceeds the cap.
  o.max_device_memory = "1GB";
  expect_has(validate_survey(s, o),
             {"cap         --max-device-memory 953.67 MiB: fits (1.48 MiB a rank at most",
              "as `run` computes it"});
  o.max_device_memory = "1MB";
  try {
    validate_survey(s, o);
    ADD_FAILURE() << "a cap of 1MB accepted";
  } catch (const InputError& e) {
    expect_has(e.what(),
               {"--max-device-memory: 976.56 KiB: rank 0", "'s subdomain (split 2x1x1) of ",
                " points needs 1.48 MiB", "allowed: a cap of at least that"});
  }
  o.decompose = "1x1x1";
  o.max_device_memory.clear();
  expect_has(validate_survey(s, o), {"decomposition none"});
}

} // namespace
} // namespace minimod
