/// Splitting a survey over runs and joining it again: `run --shots`, `merge`, the shot numbering
/// of the progress and notice lines, the CPU-fallback notice, and SEG-Y of a grid whose origin is
/// negative. Through the real program, on small surveys (a second or so each).
#include "core/errors.hpp"
#include "io/h5_output.hpp"
#include "io/parts_store.hpp"
#include "solver/simulation.hpp"
#include "solver/survey_run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MINIMOD_BINARY;

class ShotsDir : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            (std::string("minimod_shots_") + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string at(const std::string& name) const { return (m_dir / name).string(); }

  /// Run the program with `args`; stdout and stderr go to `log` (read back by text()).
  int run(const std::string& args, const std::string& log = "run.log") const {
    const int status =
        std::system((kBinary + " " + args + " > " + at(log) + " 2> " + at(log + ".err")).c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string text(const std::string& name) const {
    std::ifstream in(at(name));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// The survey, written as s.yaml: `shots` shots along x, a fixed spread of 9 receivers.
  void write_survey(int shots, const std::string& grid_origin = "[0, 0, 0]",
                    const std::string& extra = "", const std::string& duration = "0.06") const {
    std::ofstream(at("s.yaml"))
        << "grid: {shape: [31, 21, 25], spacing: 10, origin: " << grid_origin << "}\n"
        << "model: {type: constant, velocity: 2000}\n"
        << "time: {duration: " << duration << "}\n"
        << "boundary: {width: 6}\n"
        << "shots:\n"
        << "  wavelet: {type: ricker, frequency: 20}\n"
        << "  positions: {lines: [{start: [100, 100, 60], end: [200, 100, 60], count: " << shots
        << "}]}\n"
        << "receivers:\n"
        << "  lines: [{start: [80, 100, 40], end: [240, 100, 40], count: 9}]\n"
        << "output:\n  dt_out: 0.002\n"
        << extra;
  }

  fs::path m_dir;
};

TEST(ShotSelection, ParsesListsAndRanges) {
  EXPECT_EQ(parse_shot_selection("10-13", 20, "--shots"), (std::vector<int>{10, 11, 12, 13}));
  EXPECT_EQ(parse_shot_selection("0,3,5-7", 8, "--shots"), (std::vector<int>{0, 3, 5, 6, 7}));
  EXPECT_EQ(parse_shot_selection("5,1-2,2", 8, "--shots"), (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(shot_selection_text({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9-10");
  EXPECT_EQ(shot_heading(12, {10, 11, 12, 13}), "shot 12 (3 of 4)");
}

TEST(ShotSelection, RefusesWhatIsNotASelectionOfThisSurvey) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"", "'' is not a shot number or range"},
                        Case{"3,", "'' is not a shot number or range"},
                        Case{"a-b", "'a-b' is not a shot number or range"},
                        Case{"-2", "'-2' is not a shot number or range"},
                        Case{"1.5", "'1.5' is not a shot number or range"},
                        Case{"7-3", "range '7-3' ends before it starts"},
                        Case{"2-8", "shot 8 is past the survey's last (8 shots)"}}) {
    try {
      parse_shot_selection(c.text, 8, "--shots");
      ADD_FAILURE() << "accepted '" << c.text << "'";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--shots: '" + std::string(c.text) + "': ", 0), 0u) << what;
      EXPECT_NE(what.find(c.says), std::string::npos) << what;
      EXPECT_NE(what.find("allowed: shot numbers 0-7"), std::string::npos) << what;
    }
  }
}

TEST(ShotSelection, ResumeComparesTheSelection) {
  RunFingerprint was, now;
  was.selected = {0, 1, 2};
  now.selected = {3, 4};
  const auto d = fingerprint_differences(was, now);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "--shots 3,4 vs --shots 0,1,2 of the interrupted run");
  now.selected.clear();
  EXPECT_EQ(fingerprint_differences(was, now).at(0),
            "every shot vs --shots 0,1,2 of the interrupted run");
  // The output's fingerprint leaves the selection (and the survey's path) out: parts of one
  // survey split by --shots carry the same one.
  EXPECT_EQ(fingerprint_text(was), fingerprint_text(now));
  EXPECT_EQ(fingerprint_text(was).find("shots_selected"), std::string::npos);
}

// output.snapshots.shots: the runs of a split write the snapshots of the snapshot shots they
// model, and merge joins them into the full run's /snapshots, shot after shot; a run with none of
// them says so at its start and writes none.
TEST_F(ShotsDir, SnapshotsOfChosenShotsMergeIntoTheFullRun) {
  write_survey(4, "[0, 0, 0]", "  snapshots: {every: 10, decimate: 2, shots: [3, 1]}\n");
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("all.h5") + " --backend cpu --quiet"), 0)
      << text("run.log.err");
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --backend cpu -q --shots 0-1"), 0)
      << text("run.log.err");
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("b.h5") + " --backend cpu -q --shots 2-3"), 0)
      << text("run.log.err");
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("c.h5") + " --backend cpu -q --shots 2"), 0)
      << text("run.log.err");
  EXPECT_NE(text("run.log.err")
                .find("warning: " + at("s.yaml") +
                      ":12: output.snapshots.shots: the snapshots are of shots 1,3, none of them "
                      "among the shots of this run (--shots 2): it writes no snapshots"),
            std::string::npos)
      << text("run.log.err");
  ASSERT_EQ(run("merge " + at("m.h5") + " " + at("b.h5") + " " + at("a.h5")), 0)
      << text("run.log.err");
  const std::string h5dump = "h5dump -d /snapshots/shot -d /snapshots/step -y -w 0 ";
  for (const char* name : {"all.h5", "m.h5"}) {
    ASSERT_EQ(std::system((h5dump + at(name) + " > " + at(std::string(name) + ".txt")).c_str()), 0);
  }
  const std::string all = text("all.h5.txt");
  EXPECT_NE(all.find("1, 1, 1, 3, 3, 3"), std::string::npos) << all; // 3 snapshots a shot
  EXPECT_EQ(std::system(("h5diff " + at("all.h5") + " " + at("m.h5") + " /snapshots").c_str()), 0)
      << "the merged snapshots differ from the full run's:\n"
      << all << text("m.h5.txt");
  EXPECT_EQ(std::system(("h5dump -g /snapshots " + at("c.h5") + " > /dev/null 2>&1").c_str()) == 0,
            false)
      << "a run without a snapshot shot wrote snapshots";
}

TEST_F(ShotsDir, SubsetsMergeIntoTheFullRun) {
  write_survey(4);
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("all.h5") + " --backend cpu --quiet"), 0)
      << text("run.log.err");
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --backend cpu --shots 1-2"), 0)
      << text("run.log.err");
  const std::string err = text("run.log.err");
  // One numbering: the group's number in the notices and on the progress lines.
  EXPECT_NE(err.find("shot 1 (1 of 2)\n"), std::string::npos) << err;
  EXPECT_NE(err.find("shot 2 (2 of 2)\n"), std::string::npos) << err;
  EXPECT_NE(err.find("shot 2 done (2/2 done)\n"), std::string::npos) << err;
  EXPECT_NE(err.find(", shot 2, 1/2 done, survey eta "), std::string::npos) << err;
  EXPECT_NE(err.find("2 shots (--shots 1-2 of 4)"), std::string::npos) << err;
  EXPECT_EQ(err.find("shot 0"), std::string::npos) << err;

  const OutputMeta a = read_output_meta(at("a.h5"));
  EXPECT_EQ(a.survey_shots, 4);
  EXPECT_EQ(a.shots_selected, (std::vector<int>{1, 2}));
  EXPECT_EQ(output_shot_numbers(at("a.h5")), (std::vector<int>{1, 2}));
  EXPECT_FALSE(a.run_fingerprint.empty());
  EXPECT_EQ(read_output_meta(at("all.h5")).shots_selected, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(read_output_meta(at("all.h5")).run_fingerprint, a.run_fingerprint);

  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("b.h5") + " --backend cpu --quiet --shots 0,3"),
            0)
      << text("run.log.err");
  ASSERT_EQ(run("merge " + at("m.h5") + " " + at("a.h5") + " " + at("b.h5")), 0)
      << text("run.log.err");
  EXPECT_EQ(text("run.log"), "merged 2 files, 4 shots, into " + at("m.h5") + "\n");
  EXPECT_EQ(output_shot_numbers(at("m.h5")), (std::vector<int>{0, 1, 2, 3}));
  const OutputMeta m = read_output_meta(at("m.h5"));
  EXPECT_EQ(m.shots_selected, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m.run_fingerprint, a.run_fingerprint);
  for (int shot = 0; shot < 4; ++shot) {
    const ShotGather merged = read_shot_gather(at("m.h5"), shot);
    const ShotGather full = read_shot_gather(at("all.h5"), shot);
    EXPECT_EQ(merged.traces, full.traces) << "shot " << shot;
    EXPECT_EQ(merged.source_positions, full.source_positions) << "shot " << shot;
  }
  // Nothing but the merged file (no temporary) was written.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(m_dir))
    names.push_back(entry.path().filename().string());
  for (const auto& name : names)
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}

TEST_F(ShotsDir, MergeRefusesOverlapsOtherRunsAndItsOwnInput) {
  write_survey(3);
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --backend cpu -q --shots 0-1"), 0);
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("b.h5") + " --backend cpu -q --shots 1-2"), 0);
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("c.h5") + " --backend cpu -q --shots 2 " +
                "--steps 30"),
            0);

  EXPECT_EQ(run("merge " + at("m.h5") + " " + at("a.h5") + " " + at("b.h5")), 2);
  EXPECT_EQ(text("run.log.err"), "error: merge: shot 1 is in both '" + at("a.h5") + "' and '" +
                                     at("b.h5") +
                                     "'; nothing was written; allowed: outputs of disjoint shot "
                                     "sets\n");
  EXPECT_FALSE(fs::exists(at("m.h5")));

  EXPECT_EQ(run("merge " + at("m.h5") + " " + at("a.h5") + " " + at("c.h5")), 2);
  std::string err = text("run.log.err");
  EXPECT_NE(err.find("merge: '" + at("c.h5") + "' is not of the same survey run as '" + at("a.h5") +
                     "'; nothing was written. Differences:\n  - steps: "),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(at("m.h5")));

  // Another survey (a different velocity): named as the survey text.
  std::string survey = text("s.yaml");
  survey.replace(survey.find("velocity: 2000"), 14, "velocity: 2100");
  std::ofstream(at("t.yaml")) << survey;
  ASSERT_EQ(run("run " + at("t.yaml") + " -o " + at("d.h5") + " --backend cpu -q --shots 2"), 0);
  EXPECT_EQ(run("merge " + at("m.h5") + " " + at("a.h5") + " " + at("d.h5")), 2);
  err = text("run.log.err");
  EXPECT_NE(err.find("  - the survey text (from line 2)"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(at("m.h5")));

  // The output may not be one of the inputs; a single input is a usage error.
  EXPECT_EQ(run("merge " + at("a.h5") + " " + at("a.h5") + " " + at("c.h5")), 2);
  EXPECT_NE(text("run.log.err").find("merge: the output '" + at("a.h5") + "' is also an input"),
            std::string::npos)
      << text("run.log.err");
  EXPECT_EQ(output_shot_numbers(at("a.h5")), (std::vector<int>{0, 1}));
  EXPECT_EQ(run("merge " + at("m.h5") + " " + at("a.h5")), 2);
  EXPECT_FALSE(fs::exists(at("m.h5")));
  // A file that is not an output of the program.
  std::ofstream(at("x.h5")) << "not hdf5";
  EXPECT_EQ(run("merge " + at("m.h5") + " " + at("a.h5") + " " + at("x.h5")), 2);
  EXPECT_NE(text("run.log.err").find("merge: '" + at("x.h5") + "' is not a readable output"),
            std::string::npos)
      << text("run.log.err");
  EXPECT_FALSE(fs::exists(at("m.h5")));
}

TEST_F(ShotsDir, BadShotsOptionIsRefusedBeforeAnyWork) {
  write_survey(3);
  EXPECT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --backend cpu --shots 2-5"), 2);
  EXPECT_EQ(text("run.log.err"),
            "error: --shots: '2-5': shot 5 is past the survey's last (3 shots); allowed: shot "
            "numbers 0-2 (0-based, as in /shots/NNNN), as a list of numbers and ranges, e.g. "
            "10-19 or 0,3,5-7\n");
  EXPECT_FALSE(fs::exists(at("a.h5")));
  EXPECT_FALSE(fs::exists(at("a.h5.parts")));
}

TEST_F(ShotsDir, ResumeWithAnotherSelectionIsRefused) {
  // Shots of 1105 steps (a few tenths of a second each on the CPU), so that the kill below, polled
  // every 20 ms, lands while shot 1 or 2 runs: with the 34-step shots of the other tests a fast
  // machine finished the whole run between two polls.
  write_survey(3, "[0, 0, 0]", "", "2.0");
  // A run of shots 0-2 killed (SIGKILL) once shot 1 started: shot 0's part and the manifest stay.
  const std::string killer =
      "(" + kBinary + " run " + at("s.yaml") + " -o " + at("k.h5") +
      " --backend cpu --shots 0-2 > " + at("k.log") +
      " 2>&1 & pid=$!; for i in $(seq 1 600); do grep -q 'shot 1 (2 of 3)' " + at("k.log") +
      " && break; sleep 0.02; done; kill -9 $pid; wait $pid; "
      "exit 0)";
  ASSERT_EQ(std::system(killer.c_str()), 0);
  ASSERT_FALSE(fs::exists(at("k.h5"))) << "the kill came after the run's end: " << text("k.log");
  ASSERT_TRUE(fs::exists(at("k.h5.parts/shot-0000.h5"))) << text("k.log");
  EXPECT_EQ(run("run " + at("s.yaml") + " -o " + at("k.h5") + " --backend cpu -q --resume " +
                "--shots 0-1"),
            2);
  const std::string err = text("run.log.err");
  EXPECT_NE(err.find("  - --shots 0,1 vs --shots 0,1,2 of the interrupted run"), std::string::npos)
      << err;
  EXPECT_TRUE(fs::exists(at("k.h5.parts/shot-0000.h5")));
  // The same selection resumes and completes.
  EXPECT_EQ(run("run " + at("s.yaml") + " -o " + at("k.h5") + " --backend cpu -q --resume " +
                "--shots 0-2"),
            0)
      << text("run.log.err");
  EXPECT_EQ(output_shot_numbers(at("k.h5")), (std::vector<int>{0, 1, 2}));
}

TEST_F(ShotsDir, CpuFallbackIsSaidPlainlyEvenWhenQuiet) {
  std::string why;
  if (cuda_device_available(&why)) GTEST_SKIP() << "a GPU is present: no fallback to see";
  write_survey(2);
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --quiet --shots 0"), 0)
      << text("run.log.err");
  const std::string err = text("run.log.err");
  EXPECT_EQ(err.rfind("no GPU found: running on the CPU backend (", 0), 0u) << err;
  EXPECT_EQ(text("run.log"), "");
}

/// A big-endian int32 of a SEG-Y file at byte `at` (0-based).
std::int32_t be32(const std::string& bytes, std::size_t at) {
  const auto b = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes.at(at + k)));
  };
  return static_cast<std::int32_t>(b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3));
}

TEST_F(ShotsDir, SegyOfAGridWithNegativeOriginGetsCdpBins) {
  // The grid spans x -300..0, y -200..0: every midpoint is at negative coordinates.
  std::ofstream(at("s.yaml")) << "grid: {shape: [31, 21, 25], spacing: 10, origin: [-300, -200, "
                                 "0]}\n"
                                 "model: {type: constant, velocity: 2000}\n"
                                 "time: {duration: 0.05}\n"
                                 "boundary: {width: 6}\n"
                                 "sources:\n"
                                 "  - position: [-150, -100, 60]\n"
                                 "    wavelet: {type: ricker, frequency: 20}\n"
                                 "receivers:\n"
                                 "  lines: [{start: [-230, -100, 40], end: [-70, -100, 40], "
                                 "count: 9}]\n"
                                 "output:\n  dt_out: 0.002\n  segy: "
                              << at("g.sgy") << "\n";
  const int code = run("run " + at("s.yaml") + " -o " + at("g.h5") + " --backend cpu -q");
  if (code == 2 && text("run.log.err").find("without segyio") != std::string::npos)
    GTEST_SKIP() << "this build has no segyio";
  ASSERT_EQ(code, 0) << text("run.log.err");
  const std::string bytes = text("g.sgy");
  ASSERT_EQ(bytes.size(), 3600u + 9u * (240u + 4u * 26u));
  for (int t = 0; t < 9; ++t) {
    const std::size_t header = 3600 + static_cast<std::size_t>(t) * (240 + 4 * 26);
    // Receiver x = -230 + 20 t, source x = -150: midpoint x = -190 + 10 t, y = -100.
    EXPECT_EQ(be32(bytes, header + 180), (-190 + 10 * t) * 100) << "CDP X of trace " << t;
    EXPECT_EQ(be32(bytes, header + 184), -100 * 100) << "CDP Y of trace " << t;
    // Bins of 5 m from the grid's origin: i = (x + 300) / 5, j = (y + 200) / 5, 61 columns.
    const int i = (-190 + 10 * t + 300) / 5, j = (-100 + 200) / 5;
    EXPECT_EQ(be32(bytes, header + 20), 1 + i + 61 * j) << "CDP number of trace " << t;
  }
}

} // namespace
} // namespace minimod
