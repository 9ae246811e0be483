/// Resumable output files: a failed multi-shot run keeps `<file>.partial`, and --resume continues
/// it, keeping complete shots and removing incomplete ones.
#include "io/errors.hpp"
#include "io/h5_output.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace minimod {
namespace {

namespace fs = std::filesystem;

OutputMeta meta_for(const std::string& survey) {
  OutputMeta m;
  m.survey_text = survey;
  m.physics = "acoustic";
  m.backend = "cpu";
  m.grid_shape = {10, 10, 10};
  m.steps = 5;
  return m;
}

ShotGather gather(int shot) {
  ShotGather g;
  g.shot = shot;
  g.source_positions = {{1, 2, 3}};
  g.receiver_positions = {{4, 5, 6}, {7, 8, 9}};
  g.dt_out = 0.01;
  g.samples = 3;
  g.traces = {1.0f * shot, 2, 3, 4, 5, 6};
  return g;
}

int shots_in(const std::string& path) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  const hid_t g = H5Gopen2(f, "shots", H5P_DEFAULT);
  H5G_info_t info;
  H5Gget_info(g, &info);
  H5Gclose(g);
  H5Fclose(f);
  return static_cast<int>(info.nlinks);
}

class OutputResume : public ::testing::Test {
protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("minimod_resume_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string path() const { return (m_dir / "survey.h5").string(); }
  fs::path m_dir;
};

TEST_F(OutputResume, FailedRunKeepsPartialAndResumeContinues) {
  const OutputOptions resumable{true, false};
  {
    OutputFile out(path(), meta_for("survey A"), resumable);
    EXPECT_EQ(out.temp_path(), path() + ".partial");
    out.write_shot(gather(0));
    out.write_shot(gather(1));
    // destroyed without commit: the run failed
  }
  EXPECT_FALSE(fs::exists(path()));
  ASSERT_TRUE(fs::exists(path() + ".partial"));

  {
    OutputFile out(path(), meta_for("survey A"), OutputOptions{true, true});
    EXPECT_EQ(out.complete_shots(), (std::vector<int>{0, 1}));
    out.write_shot(gather(2));
    out.commit();
  }
  EXPECT_TRUE(fs::exists(path()));
  EXPECT_FALSE(fs::exists(path() + ".partial"));
  EXPECT_EQ(shots_in(path()), 3);
}

TEST_F(OutputResume, IncompleteShotIsRemovedOnResume) {
  {
    OutputFile out(path(), meta_for("survey A"), OutputOptions{true, false});
    out.write_shot(gather(0));
  }
  { // A shot group left without its completion mark, as a killed run leaves it.
    const hid_t f = H5Fopen((path() + ".partial").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t g = H5Gcreate2(f, "shots/0001", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Fclose(f);
  }
  OutputFile out(path(), meta_for("survey A"), OutputOptions{true, true});
  EXPECT_EQ(out.complete_shots(), (std::vector<int>{0}));
  out.write_shot(gather(1)); // would fail if the incomplete group were still there
  out.commit();
  EXPECT_EQ(shots_in(path()), 2);
}

TEST_F(OutputResume, OtherSurveyIsRefused) {
  {
    OutputFile out(path(), meta_for("survey A"), OutputOptions{true, false});
    out.write_shot(gather(0));
  }
  EXPECT_THROW(OutputFile(path(), meta_for("survey B"), OutputOptions{true, true}), InputError);
  EXPECT_TRUE(fs::exists(path() + ".partial")) << "a refused resume must not delete the file";
}

TEST_F(OutputResume, ResumeWithoutPartialStartsAfresh) {
  OutputFile out(path(), meta_for("survey A"), OutputOptions{true, true});
  EXPECT_TRUE(out.complete_shots().empty());
  out.write_shot(gather(0));
  out.commit();
  EXPECT_EQ(shots_in(path()), 1);
}

TEST_F(OutputResume, NonResumableFailureLeavesNothing) {
  {
    OutputFile out(path(), meta_for("survey A"));
    out.write_shot(gather(0));
  }
  EXPECT_TRUE(fs::is_empty(m_dir));
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int count_of(const std::string& text, const std::string& piece) {
  int n = 0;
  for (auto at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1))
    ++n;
  return n;
}

SnapshotGeometry small_geometry() {
  SnapshotGeometry g;
  g.shape = {4, 3, 2};
  g.origin = {10, 20, 30};
  g.spacing = {5, 6, 7};
  g.expected_count = 3;
  return g;
}

TEST_F(OutputResume, SnapshotsGetAnXdmfSidecarNamingTheFinalFile) {
  {
    OutputFile out(path(), meta_for("survey A"));
    out.begin_snapshots(small_geometry());
    for (int n = 1; n <= 3; ++n)
      out.append_snapshot(10 * n, 0.01 * n, std::vector<float>(24, 1.0f * n));
    out.write_shot(gather(0));
    out.commit();
  }
  const std::string xmf = read_all((m_dir / "survey.xmf").string());
  EXPECT_EQ(count_of(xmf, "GridType=\"Uniform\""), 3) << xmf;
  EXPECT_EQ(count_of(xmf, "survey.h5:/snapshots/wavefield"), 3) << xmf;
  EXPECT_NE(xmf.find("Dimensions=\"2 3 4\""), std::string::npos) << xmf; // z y x
  EXPECT_NE(xmf.find("30 20 10"), std::string::npos) << xmf;             // origin z y x
  EXPECT_NE(xmf.find("7 6 5"), std::string::npos) << xmf;                // spacing z y x
  EXPECT_NE(xmf.find("<Time Value=\"0.03\"/>"), std::string::npos) << xmf;
}

TEST_F(OutputResume, SidecarAfterResumeListsTheEarlierSnapshots) {
  {
    OutputFile out(path(), meta_for("survey A"), OutputOptions{true, false});
    out.begin_snapshots(small_geometry());
    out.append_snapshot(10, 0.01, std::vector<float>(24, 1.0f));
    out.append_snapshot(20, 0.02, std::vector<float>(24, 2.0f));
    out.write_shot(gather(0));
  }
  OutputFile out(path(), meta_for("survey A"), OutputOptions{true, true});
  EXPECT_TRUE(out.snapshots_complete());
  out.write_shot(gather(1));
  out.commit();
  const std::string xmf = read_all((m_dir / "survey.xmf").string());
  EXPECT_EQ(count_of(xmf, "GridType=\"Uniform\""), 2) << xmf;
  EXPECT_NE(xmf.find("step_20"), std::string::npos) << xmf;
}

} // namespace
} // namespace minimod
