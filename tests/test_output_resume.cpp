/// The parts folder of a run (io/parts_store.hpp): complete shots kept for --resume, the lock,
/// the manifest's fingerprint and what --resume refuses, the checks of the output path, and the
/// assembly of the final file.
#include "core/errors.hpp"
#include "io/durable_file.hpp"
#include "io/h5_output.hpp"
#include "io/parts_store.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <tuple>

namespace minimod {
namespace {

namespace fs = std::filesystem;

OutputMeta meta_for() {
  OutputMeta m;
  m.survey_text = "survey A";
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

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Every file under `dir` with its content: "nothing touched" compares two of these.
std::map<std::string, std::string> snapshot_of(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files[entry.path().string()] = read_all(entry.path().string());
  }
  return files;
}

class PartsStoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("minimod_parts_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    std::ofstream(input()) << "model bytes";
    std::ofstream(survey()) << "survey A";
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string path() const { return (m_dir / "out" / "survey.h5").string(); }
  std::string parts() const { return path() + ".parts"; }
  std::string input() const { return (m_dir / "model.bin").string(); }
  std::string survey() const { return (m_dir / "survey.yaml").string(); }

  RunFingerprint fingerprint(int steps = 0) const {
    RunFingerprint f;
    f.program_version = "0.1.0";
    f.git_commit = "abc";
    f.survey_path = survey();
    f.survey_text = "survey A\nline 2\n";
    f.inputs.push_back(InputFilePrint{"model.file", input(), 11, 0x1234});
    f.steps = steps;
    f.backend = "cpu";
    f.shots = 3;
    return f;
  }
  PartsOptions options(bool resume) {
    PartsOptions o;
    o.resume = resume;
    o.resume_command = "minimod-gpu run survey.yaml -o out/survey.h5 --resume";
    o.notice = [this](const std::string& line) { m_notices += line + "\n"; };
    return o;
  }
  fs::path m_dir;
  std::string m_notices;
};

TEST_F(PartsStoreTest, InterruptedRunKeepsItsShotsAndResumeContinues) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    EXPECT_TRUE(fs::exists(parts() + "/manifest")) << "the manifest exists from the start";
    store.write_shot(meta_for(), gather(0));
    store.write_shot(meta_for(), gather(1));
    EXPECT_TRUE(store.abandon(true));
  }
  EXPECT_FALSE(fs::exists(path()));
  EXPECT_TRUE(fs::exists(parts() + "/shot-0000.h5"));
  EXPECT_TRUE(fs::exists(parts() + "/shot-0001.h5"));
  {
    PartsStore store(path(), fingerprint(), options(true));
    EXPECT_EQ(store.complete_shots(), (std::vector<int>{0, 1}));
    EXPECT_NE(m_notices.find("2 complete shot(s) of 3 kept"), std::string::npos) << m_notices;
    store.write_shot(meta_for(), gather(2));
    store.assemble(meta_for(), 3, SegyTarget{});
  }
  EXPECT_EQ(shots_in(path()), 3);
  EXPECT_EQ(read_shot_gather(path(), 1).traces, gather(1).traces);
  EXPECT_FALSE(fs::exists(parts())) << "assembly removes the parts";
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(m_dir / "out"))
    left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"survey.h5"});
}

TEST_F(PartsStoreTest, OneShotRunLeavesNothingWhenAbandoned) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    store.write_shot(meta_for(), gather(0));
    EXPECT_FALSE(store.abandon(false));
  }
  EXPECT_FALSE(fs::exists(parts()));
  EXPECT_TRUE(fs::is_empty(m_dir / "out"));
}

TEST_F(PartsStoreTest, NoCompleteShotLeavesNothingEvenWhenKeeping) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    EXPECT_FALSE(store.abandon(true));
  }
  EXPECT_FALSE(fs::exists(parts()));
}

TEST_F(PartsStoreTest, UnreadablePartIsModelledAgain) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    store.write_shot(meta_for(), gather(0));
    store.write_shot(meta_for(), gather(1));
    store.abandon(true);
  }
  std::ofstream(parts() + "/shot-0001.h5", std::ios::trunc) << "damaged";
  PartsStore store(path(), fingerprint(), options(true));
  EXPECT_EQ(store.complete_shots(), (std::vector<int>{0}));
  EXPECT_FALSE(fs::exists(parts() + "/shot-0001.h5"));
  EXPECT_NE(m_notices.find("shot-0001.h5' cannot be read ("), std::string::npos) << m_notices;
  EXPECT_NE(m_notices.find("; shot 1 is modelled again"), std::string::npos) << m_notices;
}

/// Flip one bit of the first occurrence of `pattern` in the file at `path`, at byte `at` of it.
void flip_inside(const std::string& path, const std::string& pattern, std::size_t at) {
  std::string bytes = read_all(path);
  const std::size_t found = bytes.find(pattern);
  ASSERT_NE(found, std::string::npos) << "pattern not in " << path;
  ASSERT_EQ(bytes.find(pattern, found + 1), std::string::npos) << "pattern twice in " << path;
  bytes[found + at] = static_cast<char>(bytes[found + at] ^ 0x04);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// The bytes of floats as the file stores them (little-endian, as the host).
std::string float_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

TEST_F(PartsStoreTest, PartWithAFlippedByteInItsTracesIsModelledAgain) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    for (int shot = 0; shot < 3; ++shot)
      store.write_shot(meta_for(), gather(shot));
    store.abandon(true);
  }
  // One bit of trace sample 3 of shot 1 (4.0f) on disk: the file still opens and reads.
  flip_inside(parts() + "/shot-0001.h5", float_bytes({2, 3, 4, 5, 6}), 9);
  EXPECT_TRUE(h5_object_readable(parts() + "/shot-0001.h5", "/shots/0001"));
  EXPECT_THROW(read_shot_gather(parts() + "/shot-0001.h5", 1), DamagedDataError);
  {
    PartsStore store(path(), fingerprint(), options(true));
    EXPECT_EQ(store.complete_shots(), (std::vector<int>{0, 2}));
    EXPECT_NE(m_notices.find("shot-0001.h5' is damaged: the CRC-32 of its content is "),
              std::string::npos)
        << m_notices;
    EXPECT_NE(m_notices.find("; shot 1 is modelled again"), std::string::npos) << m_notices;
    EXPECT_FALSE(fs::exists(parts() + "/shot-0001.h5"));
    store.write_shot(meta_for(), gather(1));
    store.assemble(meta_for(), 3, SegyTarget{});
  }
  for (int shot = 0; shot < 3; ++shot)
    EXPECT_EQ(read_shot_gather(path(), shot).traces, gather(shot).traces) << "shot " << shot;
}

TEST_F(PartsStoreTest, TruncatedPartIsModelledAgain) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    for (int shot = 0; shot < 3; ++shot)
      store.write_shot(meta_for(), gather(shot));
    store.abandon(true);
  }
  const std::string part = parts() + "/shot-0002.h5";
  fs::resize_file(part, fs::file_size(part) / 2);
  {
    PartsStore store(path(), fingerprint(), options(true));
    EXPECT_EQ(store.complete_shots(), (std::vector<int>{0, 1}));
    EXPECT_NE(m_notices.find("shot-0002.h5' cannot be read"), std::string::npos) << m_notices;
    EXPECT_NE(m_notices.find("; shot 2 is modelled again"), std::string::npos) << m_notices;
    store.write_shot(meta_for(), gather(2));
    store.assemble(meta_for(), 3, SegyTarget{});
  }
  for (int shot = 0; shot < 3; ++shot)
    EXPECT_EQ(read_shot_gather(path(), shot).traces, gather(shot).traces) << "shot " << shot;
}

TEST_F(PartsStoreTest, PartWithoutAChecksumIsModelledAgain) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    store.write_shot(meta_for(), gather(0));
    store.write_shot(meta_for(), gather(1));
    store.abandon(true);
  }
  // As a part of a version that recorded no checksum.
  const std::string part = parts() + "/shot-0000.h5";
  const hid_t f = H5Fopen(part.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_GE(H5Adelete_by_name(f, "/shots/0000", "content_crc32", H5P_DEFAULT), 0);
  H5Fclose(f);
  PartsStore store(path(), fingerprint(), options(true));
  EXPECT_EQ(store.complete_shots(), (std::vector<int>{1}));
  EXPECT_NE(m_notices.find("shot-0000.h5' carries no checksum"), std::string::npos) << m_notices;
}

TEST_F(PartsStoreTest, AssemblyStopsAtADamagedPartAndKeepsTheParts) {
  PartsStore store(path(), fingerprint(), options(false));
  for (int shot = 0; shot < 3; ++shot)
    store.write_shot(meta_for(), gather(shot));
  // Damaged between its write and the assembly.
  flip_inside(parts() + "/shot-0002.h5", float_bytes({2, 3, 4, 5, 6}), 1);
  try {
    store.assemble(meta_for(), 3, SegyTarget{});
    ADD_FAILURE() << "a damaged part was assembled";
  } catch (const DamagedDataError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("shot-0002.h5' /shots/0002 is damaged"), std::string::npos) << m;
    EXPECT_NE(m.find("was not written"), std::string::npos) << m;
    EXPECT_NE(m.find("--resume"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(path()));
  for (const auto& entry : fs::directory_iterator(m_dir / "out"))
    EXPECT_EQ(entry.path().filename().string(), "survey.h5.parts") << "left: " << entry.path();
  EXPECT_TRUE(store.abandon(true)) << "the complete shots stay for --resume";
}

TEST_F(PartsStoreTest, DamagedSnapshotsAreModelledAgainWithShotZero) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    auto snapshots = store.begin_snapshots(meta_for());
    SnapshotGeometry geometry;
    geometry.shape = {4, 3, 2};
    geometry.expected_count = 1;
    snapshots->begin_snapshots(geometry);
    std::vector<float> volume(24);
    for (std::size_t n = 0; n < volume.size(); ++n)
      volume[n] = 100.0f + static_cast<float>(n);
    snapshots->append_snapshot(10, 0.01, volume);
    snapshots->commit();
    store.write_shot(meta_for(), gather(0));
    store.write_shot(meta_for(), gather(1));
    store.abandon(true);
  }
  flip_inside(parts() + "/snapshots-0000.h5", float_bytes({110, 111, 112}), 5);
  PartsStore store(path(), fingerprint(), options(true));
  EXPECT_FALSE(store.snapshots_complete());
  EXPECT_EQ(store.complete_shots(), (std::vector<int>{1}));
  EXPECT_NE(m_notices.find("snapshots-0000.h5' is damaged"), std::string::npos) << m_notices;
  EXPECT_NE(m_notices.find("shot 0 is modelled again for its snapshots"), std::string::npos)
      << m_notices;
}

TEST_F(PartsStoreTest, ResumeRefusesAnotherSetupAndTouchesNothing) {
  {
    PartsStore store(path(), fingerprint(100), options(false));
    store.write_shot(meta_for(), gather(0));
    store.abandon(true);
  }
  const auto before = snapshot_of(m_dir);
  struct Case {
    const char* name;
    RunFingerprint f;
    std::string expected;
  };
  std::vector<Case> cases;
  cases.push_back({"steps", fingerprint(200), "--steps 200 vs 100 of the interrupted run"});
  RunFingerprint text = fingerprint(100);
  text.survey_text = "survey A\nline two\n";
  cases.push_back({"survey", text,
                   "the survey text differs (first at line 2: 'line two' vs "
                   "'line 2' of the interrupted run)"});
  RunFingerprint model = fingerprint(100);
  model.inputs[0].crc = 0x99;
  cases.push_back({"model", model,
                   "model.file '" + input() +
                       "' changed (11 bytes, CRC-32 "
                       "00000099 vs 11 bytes, CRC-32 00001234"});
  RunFingerprint kernel = fingerprint(100);
  kernel.kernel = "gmem_3d_32x4x4";
  cases.push_back({"kernel", kernel, "--kernel gmem_3d_32x4x4 vs (not given)"});
  RunFingerprint backend = fingerprint(100);
  backend.backend = "auto";
  cases.push_back({"backend", backend, "--backend auto vs cpu"});
  RunFingerprint precision = fingerprint(100);
  precision.precision = "float16";
  cases.push_back({"precision", precision, "precision float16 vs float32 of the interrupted run"});
  RunFingerprint build = fingerprint(100);
  build.git_commit = "def";
  cases.push_back({"build", build, "minimod-gpu 0.1.0 (commit def) vs 0.1.0 (commit abc)"});
  for (const auto& c : cases) {
    try {
      PartsStore store(path(), c.f, options(true));
      ADD_FAILURE() << c.name << ": expected InputError";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(c.expected), std::string::npos) << c.name << ": " << message;
      EXPECT_NE(message.find("Nothing was changed"), std::string::npos) << message;
      EXPECT_NE(message.find("rm -r '" + parts() + "'"), std::string::npos) << message;
    }
    EXPECT_EQ(snapshot_of(m_dir), before) << c.name << ": a refused resume changed files";
  }
}

TEST_F(PartsStoreTest, RunWithoutResumeRefusesToDropCompleteShots) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    store.write_shot(meta_for(), gather(0));
    store.abandon(true);
  }
  const auto before = snapshot_of(m_dir);
  try {
    PartsStore store(path(), fingerprint(), options(false));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("holds 1 complete shot of an interrupted run of 3"), std::string::npos)
        << message;
    EXPECT_NE(message.find("To continue it: minimod-gpu run survey.yaml -o out/survey.h5 --resume"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("remove the folder first: rm -r '" + parts() + "'"), std::string::npos)
        << message;
  }
  EXPECT_EQ(snapshot_of(m_dir), before);
}

TEST_F(PartsStoreTest, LeftoversWithoutCompleteShotsAreCleared) {
  fs::create_directories(parts());
  std::ofstream(parts() + "/shot-0002.h5.tmp-4242") << "half a shot";
  std::ofstream(path() + ".tmp-4242") << "half an assembly";
  PartsStore store(path(), fingerprint(), options(true));
  EXPECT_NE(m_notices.find("holds no interrupted run of this output; starting afresh"),
            std::string::npos)
      << m_notices;
  EXPECT_TRUE(store.complete_shots().empty());
  EXPECT_FALSE(fs::exists(parts() + "/shot-0002.h5.tmp-4242"));
  EXPECT_FALSE(fs::exists(path() + ".tmp-4242"));
  EXPECT_TRUE(fs::exists(parts() + "/manifest"));
}

TEST_F(PartsStoreTest, SecondWriterIsRefusedWhileTheFirstHoldsTheLock) {
  PartsStore first(path(), fingerprint(), options(false));
  first.write_shot(meta_for(), gather(0));
  const auto before = snapshot_of(m_dir);
  for (const bool resume : {false, true}) {
    try {
      PartsStore second(path(), fingerprint(), options(resume));
      FAIL() << "expected OutputError";
    } catch (const OutputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("being written by another run (process " + std::to_string(getpid())),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("nothing was changed"), std::string::npos) << message;
    }
    EXPECT_EQ(snapshot_of(m_dir), before);
  }
  first.write_shot(meta_for(), gather(1));
  first.write_shot(meta_for(), gather(2));
  first.assemble(meta_for(), 3, SegyTarget{});
  EXPECT_EQ(shots_in(path()), 3);
}

TEST_F(PartsStoreTest, OutputThatIsAnInputIsRefused) {
  for (const std::string& out : {input(), survey(), (m_dir / "." / "model.bin").string()}) {
    EXPECT_THROW(PartsStore(out, fingerprint(), options(false)), InputError) << out;
  }
  EXPECT_EQ(read_all(input()), "model bytes");
  EXPECT_FALSE(fs::exists(input() + ".parts"));
  // Through a symbolic link too.
  fs::create_symlink(input(), m_dir / "link.h5");
  EXPECT_THROW(PartsStore((m_dir / "link.h5").string(), fingerprint(), options(false)), InputError);
}

TEST_F(PartsStoreTest, UnwritableOutputPathsAreRefused) {
  fs::create_directories(m_dir / "folder.h5");
  EXPECT_THROW(PartsStore((m_dir / "folder.h5").string(), fingerprint(), options(false)),
               OutputError);
  std::ofstream((m_dir / "file").string()) << "x";
  EXPECT_THROW(
      PartsStore((m_dir / "file" / "sub" / "o.h5").string(), fingerprint(), options(false)),
      OutputError);
}

SnapshotGeometry small_geometry() {
  SnapshotGeometry g;
  g.shape = {4, 3, 2};
  g.origin = {10, 20, 30};
  g.spacing = {5, 6, 7};
  g.expected_count = 3;
  return g;
}

int count_of(const std::string& text, const std::string& piece) {
  int n = 0;
  for (auto at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1))
    ++n;
  return n;
}

TEST_F(PartsStoreTest, SnapshotsOfAResumedRunReachTheFileAndItsSidecar) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    auto snapshots = store.begin_snapshots(meta_for());
    snapshots->begin_snapshots(small_geometry());
    snapshots->append_snapshot(10, 0.01, std::vector<float>(24, 1.0f));
    snapshots->append_snapshot(20, 0.02, std::vector<float>(24, 2.0f));
    snapshots->commit();
    store.write_shot(meta_for(), gather(0));
    store.abandon(true);
  }
  EXPECT_FALSE(fs::exists(m_dir / "out" / "survey.xmf")) << "parts get no sidecar";
  {
    PartsStore store(path(), fingerprint(), options(true));
    EXPECT_TRUE(store.snapshots_complete());
    store.write_shot(meta_for(), gather(1));
    store.write_shot(meta_for(), gather(2));
    store.assemble(meta_for(), 3, SegyTarget{});
  }
  const std::string xmf = read_all((m_dir / "out" / "survey.xmf").string());
  EXPECT_EQ(count_of(xmf, "GridType=\"Uniform\""), 2) << xmf;
  EXPECT_EQ(count_of(xmf, "survey.h5:/snapshots/wavefield"), 2) << xmf;
  EXPECT_NE(xmf.find("Dimensions=\"2 3 4\""), std::string::npos) << xmf; // z y x
  EXPECT_NE(xmf.find("30 20 10"), std::string::npos) << xmf;             // origin z y x
  EXPECT_NE(xmf.find("7 6 5"), std::string::npos) << xmf;                // spacing z y x
  EXPECT_NE(xmf.find("step_20"), std::string::npos) << xmf;
  const hid_t f = H5Fopen(path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t d = H5Dopen2(f, "/snapshots/wavefield", H5P_DEFAULT);
  EXPECT_GE(d, 0);
  std::vector<float> values(48);
  EXPECT_GE(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[47], 2.0f);
  H5Dclose(d);
  H5Fclose(f);
}

TEST_F(PartsStoreTest, SnapshotsWithoutTheirShotAreDropped) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    auto snapshots = store.begin_snapshots(meta_for());
    snapshots->begin_snapshots(small_geometry());
    snapshots->append_snapshot(10, 0.01, std::vector<float>(24, 1.0f));
    snapshots->commit();
    store.write_shot(meta_for(), gather(1)); // shot 0 never finished
    store.abandon(true);
  }
  PartsStore store(path(), fingerprint(), options(true));
  EXPECT_FALSE(store.snapshots_complete());
  EXPECT_FALSE(fs::exists(parts() + "/snapshots-0000.h5"));
  EXPECT_EQ(store.complete_shots(), (std::vector<int>{1}));
}

// The snapshots of several shots: each in its own part, kept with its shot by a resume, and
// assembled into the one /snapshots in shot order, /snapshots/shot naming each snapshot's shot;
// the sidecar has a temporal collection a shot.
TEST_F(PartsStoreTest, SnapshotsOfSeveralShotsAreAssembledInShotOrder) {
  const auto snapshot_shot = [&](PartsStore& store, int shot) {
    auto snapshots = store.begin_snapshots(meta_for(), shot);
    snapshots->begin_snapshots(small_geometry());
    snapshots->append_snapshot(10, 0.01, std::vector<float>(24, 1.0f + shot));
    snapshots->append_snapshot(20, 0.02, std::vector<float>(24, 2.0f + shot));
    snapshots->commit();
    store.write_shot(meta_for(), gather(shot));
  };
  {
    PartsStore store(path(), fingerprint(), options(false));
    snapshot_shot(store, 2);
    store.abandon(true);
  }
  EXPECT_TRUE(fs::exists(parts() + "/snapshots-0002.h5"));
  {
    PartsStore store(path(), fingerprint(), options(true));
    EXPECT_TRUE(store.snapshots_complete(2));
    EXPECT_FALSE(store.snapshots_complete(0));
    snapshot_shot(store, 0);
    store.write_shot(meta_for(), gather(1));
    store.assemble(meta_for(), 3, SegyTarget{});
  }
  const hid_t f = H5Fopen(path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  std::vector<int> shots(4), steps(4);
  std::vector<float> values(4 * 24);
  for (const auto& [name, type, data] :
       {std::tuple<const char*, hid_t, void*>{"/snapshots/shot", H5T_NATIVE_INT, shots.data()},
        {"/snapshots/step", H5T_NATIVE_INT, steps.data()},
        {"/snapshots/wavefield", H5T_NATIVE_FLOAT, values.data()}}) {
    const hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    ASSERT_GE(d, 0) << name;
    EXPECT_GE(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0) << name;
    H5Dclose(d);
  }
  H5Fclose(f);
  EXPECT_EQ(shots, (std::vector<int>{0, 0, 2, 2}));
  EXPECT_EQ(steps, (std::vector<int>{10, 20, 10, 20}));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[3 * 24], 4.0f);
  const std::string xmf = read_all((m_dir / "out" / "survey.xmf").string());
  EXPECT_EQ(count_of(xmf, "CollectionType=\"Temporal\""), 2) << xmf;
  EXPECT_NE(xmf.find("wavefield of shot 2 (z is depth"), std::string::npos) << xmf;
  EXPECT_NE(xmf.find(">3 0 0 0 1 1 1 1 1 "), std::string::npos) << xmf; // shot 2's second
}

// A resume finds a damaged snapshot part: its shot is modelled again, with its snapshots.
TEST_F(PartsStoreTest, ADamagedSnapshotPartSendsItsShotBackToBeModelled) {
  {
    PartsStore store(path(), fingerprint(), options(false));
    auto snapshots = store.begin_snapshots(meta_for(), 1);
    snapshots->begin_snapshots(small_geometry());
    snapshots->append_snapshot(10, 0.01, std::vector<float>(24, 1.0f));
    snapshots->commit();
    store.write_shot(meta_for(), gather(1));
    store.write_shot(meta_for(), gather(2));
    store.abandon(true);
  }
  std::ofstream(parts() + "/snapshots-0001.h5", std::ios::trunc) << "not HDF5";
  PartsStore store(path(), fingerprint(), options(true));
  EXPECT_FALSE(store.snapshots_complete(1));
  EXPECT_EQ(store.complete_shots(), (std::vector<int>{2}));
  EXPECT_FALSE(fs::exists(parts() + "/snapshots-0001.h5"));
  EXPECT_FALSE(fs::exists(parts() + "/shot-0001.h5"));
}

TEST(Fingerprint, NamesTheInputFilesOfASurvey) {
  const fs::path dir = fs::temp_directory_path() / ("minimod_print_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream((dir / "w.txt").string()) << "0\n1\n0\n";
  Survey s;
  s.path = (dir / "s.yaml").string();
  s.text = "receivers: {csv: r.csv}\n";
  s.model.kind = ModelSpec::Kind::File;
  s.model.file = (dir / "w.txt").string();
  SourceSpec src;
  src.wavelet.kind = WaveletSpec::Kind::File;
  src.wavelet.file = (dir / "w.txt").string();
  s.shots.push_back(ShotSpec{{src}, {}});
  std::ofstream((dir / "r.csv").string()) << "1,2,3\n";
  const auto files = survey_input_files(s);
  ASSERT_EQ(files.size(), 2u); // the wavelet is the model file: named once
  EXPECT_EQ(files[0], std::make_pair(std::string("model.file"), (dir / "w.txt").string()));
  EXPECT_EQ(files[1], std::make_pair(std::string("receivers.csv"), (dir / "r.csv").string()));
  const RunFingerprint f = make_fingerprint(s, 0, "auto", "");
  EXPECT_EQ(f.precision, "float32");
  ASSERT_EQ(f.inputs.size(), 2u);
  EXPECT_EQ(f.inputs[0].size, 6u);
  EXPECT_EQ(f.inputs[0].crc, 0x859b7b50u) << std::hex << f.inputs[0].crc; // crc32 of "0\n1\n0\n"
  // A shots CSV decides the source positions: it is an input too.
  s.text = "shots: {positions: {csv: sub/shots.csv}}\nreceivers: {csv: r.csv}\n";
  const auto with_shots = survey_input_files(s);
  ASSERT_EQ(with_shots.size(), 3u);
  EXPECT_EQ(with_shots[2], std::make_pair(std::string("shots.positions.csv"),
                                          (dir / "sub" / "shots.csv").string()));
  fs::remove_all(dir);
}

} // namespace
} // namespace minimod
