/// write_segy_gather's headers, read here byte by byte (big-endian, no segyio), for the fields an
/// imaging tool bins and sorts by: CDP bins, field record, offsets, coordinates and their scalar.
#include "core/errors.hpp"
#include "io/segy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

/// A SEG-Y file as bytes, with big-endian header fields by 1-based byte position.
struct SegyBytes {
  std::vector<unsigned char> bytes;
  int samples = 0;

  explicit SegyBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    samples = binary(3221, 2);
  }
  std::int32_t field(std::size_t at, int size) const {
    std::uint32_t v = 0;
    for (int b = 0; b < size; ++b)
      v = (v << 8) | bytes.at(at + b);
    if (size == 2) return static_cast<std::int16_t>(v);
    return static_cast<std::int32_t>(v);
  }
  std::int32_t binary(int byte, int size) const { return field(byte - 1, size); }
  std::int32_t trace(int t, int byte, int size = 4) const {
    return field(3600 + static_cast<std::size_t>(t) * (240 + 4 * samples) + byte - 1, size);
  }
  int traces() const {
    return static_cast<int>((bytes.size() - 3600) / (240 + 4 * static_cast<std::size_t>(samples)));
  }
};

/// Shot `shot` from a source at (120, 70, 10) to receivers at (100, 50), (150.125, 90), (200, 150).
ShotGather gather(int shot, double last_x = 200) {
  ShotGather g;
  g.shot = shot;
  g.source_positions = {{120, 70, 10}};
  g.receiver_positions = {{100, 50, 30}, {150.125, 90, 30}, {last_x, 150, 30}};
  g.dt_out = 0.002;
  g.samples = 5;
  g.traces.assign(15, 0.5f);
  return g;
}

class SegyHeaders : public ::testing::Test {
protected:
  void SetUp() override {
    if (!segy_supported()) GTEST_SKIP() << "this build has no segyio";
    m_dir = fs::temp_directory_path() /
            (std::string("minimod_segy_") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    if (!m_dir.empty()) fs::remove_all(m_dir);
  }
  std::string at(const std::string& name) const { return (m_dir / name).string(); }
  fs::path m_dir;
};

TEST(SegyCdpBins, HalfTheGridSpacingOverTheGrid) {
  const SegyCdpBins bins = segy_cdp_bins({100, 50, 0}, {10, 20, 5}, {11, 6, 4});
  EXPECT_EQ(bins.origin, (std::array<double, 2>{100, 50}));
  EXPECT_EQ(bins.size, (std::array<double, 2>{5, 10}));
  EXPECT_EQ(bins.columns, 21);
  EXPECT_EQ(bins.rows, 11);
  EXPECT_THROW(segy_cdp_bins({0, 0, 0}, {1, 1, 1}, {60000, 60000, 4}), InputError);
}

TEST_F(SegyHeaders, GridBinsFieldRecordOffsetsAndCoordinates) {
  SegyWriteOptions options;
  options.cdp_bins = segy_cdp_bins({100, 50, 0}, {10, 20, 5}, {11, 6, 4});
  write_segy_gather(at("g.sgy"), gather(7), options);
  options.mode = SegyWriteMode::Append;
  write_segy_gather(at("g.sgy"), gather(8), options);

  const SegyBytes f(at("g.sgy"));
  EXPECT_EQ(f.samples, 5);
  EXPECT_EQ(f.binary(3217, 2), 2000);
  EXPECT_EQ(f.binary(3225, 2), 5);
  ASSERT_EQ(f.traces(), 6);
  // Midpoints (110, 60), (135.0625, 80), (160, 110): bins (2, 1), (7, 3), (12, 6) of 21 a row.
  const int cdp[3] = {1 + 2 + 21 * 1, 1 + 7 + 21 * 3, 1 + 12 + 21 * 6};
  const int crossline[3] = {3, 8, 13}, inline_[3] = {2, 4, 7};
  const int offset[3] = {-28, 36, 113}; // hypot(-20, -20), hypot(30.125, 20), hypot(80, 80)
  const int cdp_x[3] = {11000, 13506, 16000}, group_x[3] = {10000, 15013, 20000};
  for (int t = 0; t < 6; ++t) {
    const int r = t % 3, shot = t < 3 ? 7 : 8;
    SCOPED_TRACE("trace " + std::to_string(t));
    EXPECT_EQ(f.trace(t, 1), t + 1);
    EXPECT_EQ(f.trace(t, 5), t + 1);
    EXPECT_EQ(f.trace(t, 9), shot + 1) << "field record = the shot number + 1";
    EXPECT_EQ(f.trace(t, 13), r + 1);
    EXPECT_EQ(f.trace(t, 17), shot + 1);
    EXPECT_EQ(f.trace(t, 21), cdp[r]);
    EXPECT_EQ(f.trace(t, 25), 0);
    EXPECT_EQ(f.trace(t, 29, 2), 1);
    EXPECT_EQ(f.trace(t, 37), offset[r]);
    EXPECT_EQ(f.trace(t, 41), -3000) << "receiver elevation: -z in cm";
    EXPECT_EQ(f.trace(t, 49), 1000) << "source depth: +z in cm";
    EXPECT_EQ(f.trace(t, 69, 2), -100);
    EXPECT_EQ(f.trace(t, 71, 2), -100);
    EXPECT_EQ(f.trace(t, 73), 12000);
    EXPECT_EQ(f.trace(t, 77), 7000);
    EXPECT_EQ(f.trace(t, 81), group_x[r]);
    EXPECT_EQ(f.trace(t, 115, 2), 5);
    EXPECT_EQ(f.trace(t, 117, 2), 2000);
    EXPECT_EQ(f.trace(t, 181), cdp_x[r]);
    EXPECT_EQ(f.trace(t, 189), inline_[r]);
    EXPECT_EQ(f.trace(t, 193), crossline[r]);
    EXPECT_EQ(f.trace(t, 197), shot + 1);
    EXPECT_EQ(f.trace(t, 201, 2), 1);
  }
}

TEST_F(SegyHeaders, DefaultBinsAreWholeMetres) {
  write_segy_gather(at("d.sgy"), gather(0), SegyWriteOptions{});
  const SegyBytes f(at("d.sgy"));
  EXPECT_EQ(f.trace(0, 21), 1 + 110 + 100000 * 60);
  EXPECT_EQ(f.trace(1, 21), 1 + 135 + 100000 * 80);
  EXPECT_EQ(f.trace(1, 193), 136);
  EXPECT_EQ(f.trace(1, 189), 81);
}

TEST_F(SegyHeaders, AMidpointOutsideTheBinsIsRefusedBeforeWriting) {
  SegyWriteOptions options;
  options.cdp_bins = segy_cdp_bins({100, 50, 0}, {10, 20, 5}, {11, 6, 4});
  options.key = "survey.yaml:9: output.segy";
  try {
    write_segy_gather(at("x.sgy"), gather(0, 1000), options); // midpoint x 560 > 200
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("survey.yaml:9: output.segy: source-receiver midpoint x 560 m", 0), 0u)
        << message;
    EXPECT_NE(message.find("outside the CDP bins (21 x 11 bins of 5 x 10 m"), std::string::npos)
        << message;
  }
  EXPECT_TRUE(fs::is_empty(m_dir)) << "something was written";
}

} // namespace
} // namespace minimod
