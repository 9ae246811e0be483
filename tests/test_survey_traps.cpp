/// Surveys that run but would silently give useless results: the plan warns (or refuses) with
/// the count and the first offender, and `validate` says what it estimates and resamples.

#include "core/errors.hpp"
#include "io/segy.hpp"
#include "io/survey.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "solver/plan.hpp"
#include "solver/validate.hpp"
#include "solver/wavelet.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

const std::string kGrid = "grid:\n  shape: [40, 40, 40]\n  spacing: 10\n";
const std::string kModel = "model: {type: constant, velocity: 2000}\n";
const std::string kTime = "time:\n  steps: 10\n";
const std::string kRicker = "{type: ricker, frequency: 10}";
constexpr double kTestPi = 3.14159265358979323846;

Plan plan_of(const std::string& text) {
  const Survey s = parse_survey(text, "t.yaml", ".");
  return make_plan(survey_for_shot(s, 0), VelocityRange{2000, 2000});
}

/// The warnings of the plan, one a line.
std::string warnings_of(const std::string& text) {
  std::string out;
  for (const std::string& w : plan_of(text).warnings)
    out += w + "\n";
  return out;
}

std::string error_of(const std::string& text) {
  try {
    plan_of(text);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return "";
}

TEST(FreeSurfaceTraps, SourceOnTheSurfaceIsRefusedInEveryShot) {
  // Shot 0 lies below the surface, shots 1 and 2 on it: the error names shot 1 and the count.
  const std::string m =
      error_of(kGrid + kModel + kTime + "boundary: {width: 5, free_surface: true}\n" +
               "shots:\n  wavelet: " + kRicker +
               "\n  positions:\n    points: [[200, 200, 20], [210, 200, "
               "0], [220, 200, 0]]\n");
  EXPECT_NE(m.find("(shot 1) at [210, 200, 0]: a source on the free surface"), std::string::npos)
      << m;
  EXPECT_NE(m.find("2 of 3 sources lie there"), std::string::npos) << m;
  EXPECT_NE(m.find("allowed: z > 0 m"), std::string::npos) << m;
  // Without a free surface the top face is a layer, and z = 0 is inside it: a warning only.
  const std::string w =
      warnings_of(kGrid + kModel + kTime + "boundary: {width: 5}\n" +
                  "sources:\n  - position: [200, 200, 0]\n    wavelet: " + kRicker + "\n");
  EXPECT_NE(w.find("1 of 1 sources (the first: t.yaml:9: sources[0].position at [200, 200, 0]) "
                   "lie inside the absorbing layer"),
            std::string::npos)
      << w;
}

TEST(FreeSurfaceTraps, ReceiversOnOrNearTheSurfaceAreWarnedWithTheCount) {
  const std::string w = warnings_of(
      kGrid + kModel + kTime + "boundary: {width: 5, free_surface: true}\n" +
      "sources:\n  - position: [200, 200, 100]\n    wavelet: " + kRicker +
      "\nreceivers:\n  points: [[100, 200, 100], [110, 200, 0], [120, 200, 0], [130, 200, 15]]\n");
  EXPECT_NE(w.find("2 of 4 receivers (the first: t.yaml:12: receivers.points[1] at [110, 200, 0]) "
                   "lie on the free surface (z = 0 m), where the pressure is zero: their traces "
                   "are exactly zero"),
            std::string::npos)
      << w;
  // 15 m is within the sinc's 4 points (40 m) of the surface.
  EXPECT_NE(w.find("1 of 4 receivers (the first: t.yaml:12: receivers.points[3] at [130, 200, "
                   "15]) lie within 4 grid point(s) of the free surface"),
            std::string::npos)
      << w;
  // Trilinear reaches one cell: 15 m is beyond it.
  const std::string t = warnings_of(
      kGrid + kModel + kTime + "interpolation: trilinear\n" +
      "boundary: {width: 5, free_surface: true}\n" + "sources:\n  - position: [200, 200, 100]\n" +
      "    wavelet: " + kRicker + "\nreceivers:\n  points: [[130, 200, 15], [130, 200, 5]]\n");
  EXPECT_NE(t.find("1 of 2 receivers (the first: t.yaml:13: receivers.points[1] at [130, 200, "
                   "5]) lie within 1 grid point(s)"),
            std::string::npos)
      << t;
}

TEST(LayerTraps, EveryShotAndEveryMovingReceiverIsChecked) {
  // Shot 0 is inside; shots 1 and 2 lie in the x-high layer (x index >= 35), and their moving
  // receiver (offset +20 m) with them.
  const std::string w = warnings_of(
      kGrid + kModel + kTime + "boundary: {width: 5}\n" + "shots:\n  wavelet: " + kRicker +
      "\n  positions:\n    points: [[200, 200, 200], [360, 200, 200], [370, 200, 200]]\n" +
      "receivers:\n  moving: true\n  points: [[20, 0, 0]]\n");
  EXPECT_NE(w.find("2 of 3 sources (the first: t.yaml:11: shots.positions.points[1]"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("(shot 1) at [360, 200, 200]) lie inside the absorbing layer"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("2 of 3 receivers (the first: "), std::string::npos) << w;
  EXPECT_NE(w.find("(shot 1) at [380, 200, 200]) lie inside the absorbing layer; they record "
                   "damped waves"),
            std::string::npos)
      << w;
}

TEST(LayerTraps, InteriorShorterThanAWavelengthIsWarned) {
  // 40 points at 10 m, layers of 15: 10 interior points (90 m) < 200 m (2000 m/s at 10 Hz).
  const std::string w =
      warnings_of(kGrid + kModel + kTime + "boundary: {width: 15}\n" +
                  "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker + "\n");
  EXPECT_NE(w.find("the absorbing layer leaves 10 interior points along x (90 m), less than one "
                   "wavelength (200 m at vmin 2000 m/s and the dominant frequency 10 Hz)"),
            std::string::npos)
      << w;
  // Layers of 5 leave 30 points (290 m): no warning.
  EXPECT_EQ(warnings_of(kGrid + kModel + kTime + "boundary: {width: 5}\n" +
                        "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker + "\n")
                .find("interior"),
            std::string::npos);
}

/// A marine-like survey at 10 m: 2000 m of interior along x, `crossline` metres along y, 1000 m
/// of depth under a free surface, 16-point layers of `type`, a reflector at 500 m (1500 over 2500
/// m/s), one second of record; the source and three receivers 10 m deep, centred along y.
Plan marine_plan(int crossline, const std::string& type) {
  const int ny = crossline / 10 + 1 + 32;
  const double y = 160 + crossline / 2.0;
  const std::string yt = std::to_string(static_cast<int>(y));
  const Survey s = parse_survey(
      "grid:\n  shape: [233, " + std::to_string(ny) +
          ", 117]\n  spacing: 10\n"
          "model: {type: layered, layers: [{top: 0, velocity: 1500}, {top: 500, velocity: "
          "2500}]}\ntime:\n  duration: 1.0\nboundary: {type: " +
          type + ", width: 16, free_surface: true}\nsources:\n  - position: [1160, " + yt +
          ", 10]\n    wavelet: " + kRicker + "\nreceivers:\n  points: [[660, " + yt +
          ", 10], [1160, " + yt + ", 10], [1660, " + yt + ", 10]]\n",
      "t.yaml", ".");
  return make_plan(survey_for_shot(s, 0), VelocityRange{1500, 2500});
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines)
    out += l + "\n";
  return out;
}

TEST(LayerTraps, NarrowCrosslineInteriorWarnsOfGrazingReturns) {
  // y: 200 m between the layers, the source and receivers 100 m from each face; 2503 m of path
  // (1.00135 s of record, the steps' span, at 2500 m/s) meets a y face at acos(200 / 2503) = 85.4
  // degrees, where Minimod's 16-point layer returns -15.4 dB x cos(85.4) / cos(70) = -3.6 dB (it
  // passes -20 dB at 63.8 degrees, so 2503 cos(63.8) = 1106 m across would do).
  const Plan plan = marine_plan(200, "minimod");
  const std::string w = joined(plan.warnings);
  EXPECT_NE(w.find("within the record (1 s, up to 2503 m of path at vmax 2500 m/s) waves return "
                   "from absorbing faces to the receivers where the layer reflects more than -20 "
                   "dB (docs/physics-checks.md, \"Absorbing layer by angle\"): along y (200 m, 21 "
                   "points of interior between its absorbing faces) from the y- face at up to 85.4 "
                   "degrees from its normal (sources and receivers 200 m from it together), where "
                   "Minimod's layer (16 points) reflects about -3.6 dB, more than -20 dB beyond "
                   "63.8 degrees"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("; widen the interior along y (sources and receivers together at least 1106 m "
                   "from each absorbing face), use boundary.type: cpml (-14.6 dB there at 16 "
                   "points), or a wider layer"),
            std::string::npos)
      << w;
  // x (1500 m across, 53 degrees) and z (1980 m, 38 degrees) are within the layer's limit.
  EXPECT_EQ(w.find("along x ("), std::string::npos) << w;
  EXPECT_EQ(w.find("along z ("), std::string::npos) << w;
}

TEST(LayerTraps, WideSurveyHasNoGrazingWarning) {
  // The same survey 2000 m wide along y: 1500 m across at the most, 53 degrees.
  const Plan plan = marine_plan(2000, "minimod");
  EXPECT_EQ(joined(plan.warnings).find("waves return from absorbing faces"), std::string::npos)
      << joined(plan.warnings);
  // The C-PML's limit lies beyond 80 degrees: a 1000 m crossline interior (600 m across at the
  // least, 76 degrees) passes with it and warns with Minimod's layer.
  EXPECT_EQ(joined(marine_plan(1000, "cpml").warnings).find("along y ("), std::string::npos);
  EXPECT_NE(joined(marine_plan(1000, "minimod").warnings).find("along y ("), std::string::npos);
}

TEST(LayerTraps, ReturnByAngleFollowsTheMeasuredTable) {
  // The measured points (docs/physics-checks.md), between them and beyond them.
  EXPECT_DOUBLE_EQ(layer_return_db(BoundaryType::Minimod, 16, 60), -22.8);
  EXPECT_DOUBLE_EQ(layer_return_db(BoundaryType::Cpml, 10, 0), -49.4);
  EXPECT_DOUBLE_EQ(layer_return_db(BoundaryType::Minimod, 18, 45), 0.5 * (-32.1 - 37.9));
  EXPECT_NEAR(layer_return_db(BoundaryType::Minimod, 16, 65), -19.1, 1e-9);
  EXPECT_NEAR(layer_return_db(BoundaryType::Cpml, 16, 80),
              -62.6 * std::cos(80 * kTestPi / 180) / std::cos(70 * kTestPi / 180), 1e-9);
  EXPECT_NEAR(layer_return_db(BoundaryType::Minimod, 16, 90), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(layer_return_db(BoundaryType::Minimod, 40, 30), -55.2) << "the widest row";
  EXPECT_NEAR(layer_return_db(BoundaryType::Minimod, 4, 0), -30.0 + 11.3, 1e-9)
      << "the 10-16 slope extended";
  // Where each passes -20 dB: Minimod's layer 49 to 77 degrees, the C-PML past 80.
  EXPECT_DOUBLE_EQ(layer_limit_angle(BoundaryType::Minimod, 10, -20), 49.2);
  EXPECT_DOUBLE_EQ(layer_limit_angle(BoundaryType::Minimod, 16, -20), 63.8);
  EXPECT_GT(layer_limit_angle(BoundaryType::Cpml, 16, -20), 83.0);
}

TEST(LayerTraps, CpmlWidthIsTheSmallestThatMeetsTheTarget) {
  // The 10-point layer's largest return to 60 degrees is its normal incidence's; 9 points, the
  // 10-16 slope extended, return 12.4 / 6 dB more.
  EXPECT_DOUBLE_EQ(layer_worst_return_db(BoundaryType::Cpml, 10), -49.4);
  EXPECT_NEAR(layer_worst_return_db(BoundaryType::Cpml, 9), -49.4 + 12.4 / 6, 1e-9);
  EXPECT_DOUBLE_EQ(layer_worst_return_db(BoundaryType::Cpml, 30), -78.2);
  // Minimod's layer is held at its 60-degree return.
  EXPECT_DOUBLE_EQ(layer_worst_return_db(BoundaryType::Minimod, 16), -22.8);
  EXPECT_EQ(cpml_width_for_return(kDefaultCpmlReturnDb), 10) << "the default: the 10-point row";
  EXPECT_EQ(cpml_width_for_return(-49.4), 10) << "at the target is enough";
  EXPECT_EQ(cpml_width_for_return(-49.5), 11);
  EXPECT_EQ(cpml_width_for_return(-50), 11);
  EXPECT_EQ(cpml_width_for_return(-47), 9);
  EXPECT_EQ(cpml_width_for_return(-45), 8);
  EXPECT_EQ(cpml_width_for_return(-60), 16) << "15 points: -59.7 dB";
  EXPECT_EQ(cpml_width_for_return(-61.8), 16);
  EXPECT_EQ(cpml_width_for_return(-70), 23);
  EXPECT_EQ(cpml_width_for_return(-78.2), 30) << "the widest row";
  EXPECT_EQ(cpml_width_for_return(-78.3), 0) << "beyond the table";
  EXPECT_EQ(cpml_width_for_return(-5), 1);
}

TEST(LayerTraps, PlanChoosesTheCpmlWidthFromTheTarget) {
  const std::string src = "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker + "\n";
  const auto layer_of = [&](const std::string& boundary) {
    const LayerWidths l =
        plan_of(kGrid + kModel + kTime + src + "boundary: " + boundary + "\n").layer;
    return std::array<int, 6>{l.x_lo, l.x_hi, l.y_lo, l.y_hi, l.z_lo, l.z_hi};
  };
  const auto all = [](int w) { return std::array<int, 6>{w, w, w, w, w, w}; };
  EXPECT_EQ(layer_of("{type: cpml}"), all(10)) << "the default target";
  EXPECT_EQ(layer_of("{type: cpml, fmax: 100}"), all(10)) << "the target needs no fmax";
  EXPECT_EQ(layer_of("{type: cpml, reflection_db: -60}"), all(16));
  EXPECT_EQ(layer_of("{type: cpml, reflection_db: -47}"), all(9));
  EXPECT_EQ(layer_of("{type: cpml, reflection_db: -60, free_surface: true}"),
            (std::array<int, 6>{16, 16, 16, 16, 0, 16}));
  // A width or ntaper given: no target. ntaper 3 x 2000 / 100 / 10 = 6 points.
  EXPECT_EQ(layer_of("{type: cpml, width: 7}"), all(7));
  EXPECT_EQ(layer_of("{type: cpml, ntaper: 3, fmax: 100}"), all(6));
  // Minimod's layer as before: ntaper 3 of the fmax.
  EXPECT_EQ(layer_of("{fmax: 100}"), all(6));
  EXPECT_EQ(layer_of("{type: minimod, fmax: 100}"), all(6));
  EXPECT_EQ(layer_target_db(parse_survey(kGrid + kModel + kTime + src, "t.yaml", ".").boundary),
            std::nullopt)
      << "the default boundary type chooses no target";
}

TEST(LayerTraps, TargetsTheTableCannotMeetOrTheGridCannotHoldAreRefused) {
  const std::string src = "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker + "\n";
  const std::string unreachable =
      error_of(kGrid + kModel + kTime + src + "boundary:\n  type: cpml\n  reflection_db: -80\n");
  for (const char* piece :
       {"t.yaml:12: boundary.reflection_db: -80 dB is not allowed",
        "no C-PML width meets it from 0 to 60 degrees", "the best reachable is -78.2 dB (30 points",
        "allowed: a target >= -78.2 dB"})
    EXPECT_NE(unreachable.find(piece), std::string::npos) << unreachable << "\nlacks: " << piece;
  // 2 x 16 points on a grid of 30 along x, as the ntaper path refuses it.
  const std::string grid = "grid:\n  shape: [30, 40, 40]\n  spacing: 10\n";
  const std::string wide =
      error_of(grid + kModel + kTime + src + "boundary:\n  type: cpml\n  reflection_db: -60\n");
  EXPECT_NE(wide.find("t.yaml:12: boundary.reflection_db: a layer of 16 points (chosen for "
                      "boundary.reflection_db -60 dB to 60 degrees) on each x face is wider than "
                      "half the grid (30 points along x); allowed: 2 x width < 30"),
            std::string::npos)
      << wide;
  const std::string fallback =
      error_of("grid:\n  shape: [20, 40, 40]\n  spacing: 10\n" + kModel + kTime +
               "sources:\n  - position: [100, 200, 200]\n    wavelet: " + kRicker +
               "\nboundary: {type: cpml}\n");
  EXPECT_NE(fallback.find("a layer of 10 points (chosen for the default -49 dB to 60 degrees) on "
                          "each x face is wider than half the grid (20 points along x)"),
            std::string::npos)
      << fallback;
}

TEST(UnitTraps, KilometresAndLongDurationsAreWarned) {
  const std::string src = "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker +
                          "\nboundary: {width: 5}\n";
  // Velocities in km/s: the plan is made from the model's range.
  const Survey s = parse_survey(kGrid + "model: {type: constant, velocity: 2}\n" +
                                    "time:\n  steps: 10\n  dt: 0.001\n" + src,
                                "t.yaml", ".");
  std::string w;
  for (const auto& line : make_plan(survey_for_shot(s, 0), VelocityRange{2, 2}).warnings)
    w += line + "\n";
  EXPECT_NE(w.find("velocities look like km/s: the model's largest is 2 m/s"), std::string::npos)
      << w;
  // Spacing in km.
  const std::string km =
      warnings_of("grid:\n  shape: [40, 40, 40]\n  spacing: 0.01\n" + kModel + kTime +
                  "sources:\n  - position: [0.2, 0.2, 0.2]\n    wavelet: " + kRicker +
                  "\nboundary: {width: 5}\n");
  EXPECT_NE(km.find("spacings look like km: the largest is 0.01 m"), std::string::npos) << km;
  // 1200 s on a 390 m grid: a wave at 2000 m/s crosses its diagonal in 0.34 s.
  const std::string d = warnings_of(kGrid + kModel + "time:\n  duration: 1200\n" + src);
  EXPECT_NE(d.find("t.yaml:6: time.duration: the run lasts 1200 s"), std::string::npos) << d;
  EXPECT_NE(d.find("times the time a wave at vmin 2000 m/s needs to cross the grid's diagonal"),
            std::string::npos)
      << d;
  // Plainly: the unit, what milliseconds would have been, and what the run costs as written.
  EXPECT_NE(d.find("durations are in seconds (1200 ms would be 1.2)"), std::string::npos) << d;
  EXPECT_NE(d.find("as written the run is 1 shot(s) x "), std::string::npos) << d;
  EXPECT_NE(d.find(" of time stepping on the CPU backend ("), std::string::npos) << d;
  EXPECT_NE(d.find(" on one H100"), std::string::npos) << d;
  // One second is a few crossings: no warning.
  EXPECT_EQ(warnings_of(kGrid + kModel + "time:\n  duration: 1\n" + src).find("duration"),
            std::string::npos);
}

TEST(SegyTraps, IntervalNotWholeMicrosecondsProposesARoundOne) {
  if (!segy_supported()) GTEST_SKIP() << "built without segyio";
  // dt from cfl 0.8 is 0.00181142 s: not whole microseconds, and dt_out defaults to it.
  const std::string m =
      error_of(kGrid + kModel + kTime + "boundary: {width: 5}\n" +
               "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker +
               "\noutput:\n  segy: out.sgy\n");
  EXPECT_NE(m.find("t.yaml:12: output.segy"), std::string::npos) << m;
  EXPECT_NE(m.find("(dt_out defaults to dt) set output.dt_out to a round interval, e.g. 0.002 s "
                   "(2 ms)"),
            std::string::npos)
      << m;
  // With dt 0.0001 both 1 and 2 ms sample the Ricker's 25 Hz.
  const std::string fine =
      error_of(kGrid + kModel + "time:\n  steps: 10\n  dt: 0.0001\n" + "boundary: {width: 5}\n" +
               "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker +
               "\noutput:\n  dt_out: 0.0000015\n  segy: out.sgy\n");
  EXPECT_NE(fine.find("output.dt_out"), std::string::npos) << fine;
  EXPECT_NE(fine.find("e.g. 0.001 s (1 ms) or 0.002 s (2 ms), which sample the band up to 25 Hz"),
            std::string::npos)
      << fine;
}

class TempDir {
public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "minimod_traps_XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) m_path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

TEST(WaveletTraps, TextSamplesAreNeverReadAsFloat32WhateverTheName) {
  const TempDir dir;
  const fs::path file = dir.path() / "wavelet.bin";
  std::ofstream(file) << "# samples\n0\n0.5\n1\n-0.25\n";
  const std::vector<float> samples = read_wavelet_file(file.string(), "k");
  EXPECT_EQ(samples, (std::vector<float>{0, 0.5f, 1, -0.25f}));
  // Float32 bytes stay float32: 0.0f is four zero bytes.
  const fs::path raw = dir.path() / "raw.bin";
  const float values[2] = {0.0f, 1.0f};
  std::ofstream(raw, std::ios::binary).write(reinterpret_cast<const char*>(values), 8);
  EXPECT_EQ(read_wavelet_file(raw.string(), "k"), (std::vector<float>{0, 1}));
}

TEST(ValidateTraps, PrintsTheEstimateAndTheResamplingNotice) {
  const TempDir dir;
  // A 9^3 model at 10 m on a grid of 17^3 at 5 m over the same 80 m: resampled, covered.
  std::vector<float> v(9 * 9 * 9, 2000.0f);
  std::ofstream(dir.path() / "vp.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  const std::string text = "grid:\n  shape: [17, 17, 17]\n  spacing: 5\n"
                           "model: {type: file, file: vp.bin, shape: [9, 9, 9], spacing: 10}\n" +
                           kTime +
                           "boundary: {width: 4}\nsources:\n  - position: [40, 40, 40]\n"
                           "    wavelet: " +
                           kRicker + "\n";
  const Survey s = parse_survey(text, "t.yaml", dir.path().string());
  ValidateOptions options;
  options.backend = "cpu";
  const std::string out = validate_survey(s, options);
  EXPECT_NE(out.find("warning: t.yaml:4: model.file: model "), std::string::npos) << out;
  EXPECT_NE(out.find("resampled trilinearly onto the grid's 17 x 17 x 17 points"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("estimate    about "), std::string::npos) << out;
  EXPECT_NE(out.find("1 shot(s) x 10 steps x 4913 points at "), std::string::npos) << out;
  // The measured rate, scaled to this host's threads when they are not 2.
  EXPECT_NE(out.find(" Gpoints/s: the acoustic CPU backend at 256^3 on 2 threads"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(", in docs/perf); an estimate, not a measurement"), std::string::npos) << out;
}

/// What `minimod-gpu ARGS` (run in `dir`) prints, and its exit status.
struct CommandResult {
  int status = -1;
  std::string out;
};

CommandResult run_in(const fs::path& dir, const std::string& args) {
  const std::string command =
      "cd '" + dir.string() + "' && '" + MINIMOD_BINARY + "' " + args + " 2>&1";
  CommandResult result;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    result.out.append(buffer, got);
  result.status = WEXITSTATUS(pclose(pipe));
  return result;
}

/// How many times `what` occurs in `text`.
std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

/// `run` prints the plan's warnings, the resampling notice among them.
TEST(RunTraps, PrintsTheResamplingNoticeAndTheWarnings) {
  const TempDir dir;
  std::vector<float> v(9 * 9 * 9, 2000.0f);
  std::ofstream(dir.path() / "vp.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  std::ofstream(dir.path() / "s.yaml")
      << "grid:\n  shape: [17, 17, 17]\n  spacing: 5\n"
         "model: {type: file, file: vp.bin, shape: [9, 9, 9], spacing: 10}\n"
         "time:\n  steps: 2\nboundary: {width: 4, free_surface: true}\n"
         "sources:\n  - position: [40, 40, 40]\n    wavelet: {type: ricker, frequency: 10}\n"
         "receivers:\n  points: [[30, 40, 0], [50, 40, 0]]\n";
  const std::string command = "cd '" + dir.path().string() + "' && '" + MINIMOD_BINARY +
                              "' run s.yaml -o out.h5 --backend cpu 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, got);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("warning: s.yaml:4: model.file: model "), std::string::npos) << out;
  EXPECT_NE(out.find("resampled trilinearly onto the grid's 17 x 17 x 17 points"),
            std::string::npos)
      << out;
  // The plan's notice and the one of reading the file are one line, printed once.
  EXPECT_EQ(count_of(out, "resampled trilinearly onto"), 1u) << out;
  EXPECT_NE(out.find("warning: 2 of 2 receivers (the first: s.yaml:12: receivers.points[0] at "
                     "[30, 40, 0]) lie on the free surface"),
            std::string::npos)
      << out;
  EXPECT_TRUE(fs::exists(dir.path() / "out.h5")) << out;
}

/// A 9^3 HDF5 model at 10 m (dataset /vp) for a grid of 17^3 at 5 m: resampled.
void write_h5_model(const fs::path& file) {
  const std::vector<float> v(9 * 9 * 9, 2000.0f);
  const hsize_t dims[3] = {9, 9, 9};
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t d =
      H5Dcreate2(f, "/vp", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  EXPECT_GE(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Dclose(d);
  H5Sclose(space);
  H5Fclose(f);
}

/// An HDF5 model (whose shape the plan does not read from a header) says it was resampled in
/// `run` as in `validate`, once, for the acoustic and the TTI equation.
TEST(RunTraps, PrintsTheResamplingNoticeOfAnHdf5Model) {
  const TempDir dir;
  write_h5_model(dir.path() / "vp.h5");
  const std::string body =
      "grid:\n  shape: [17, 17, 17]\n  spacing: 5\n"
      "model: {type: file, file: vp.h5, format: hdf5, order: xyz, spacing: 10}\n"
      "time:\n  steps: 2\nboundary: {width: 4}\n"
      "sources:\n  - position: [40, 40, 40]\n    wavelet: {type: ricker, frequency: 10}\n"
      "receivers:\n  points: [[50, 40, 40]]\n";
  const std::string tti =
      "physics: tti\nanisotropy: {angle_unit: degrees, epsilon: 0.1, delta: 0.05, theta: 0}\n";
  std::ofstream(dir.path() / "a.yaml") << body;
  std::ofstream(dir.path() / "t.yaml") << tti + body;
  const std::string notice = "resampled trilinearly onto the grid's 17 x 17 x 17 points";
  for (const std::string name : {"a", "t"}) {
    const CommandResult run =
        run_in(dir.path(), "run " + name + ".yaml -o " + name + ".h5 --backend cpu --steps 2");
    EXPECT_EQ(run.status, 0) << run.out;
    EXPECT_NE(run.out.find("warning: " + name + ".yaml:" + (name == "a" ? "4" : "6") +
                           ": model.file: model "),
              std::string::npos)
        << run.out;
    EXPECT_EQ(count_of(run.out, notice), 1u) << run.out;
    EXPECT_TRUE(fs::exists(dir.path() / (name + ".h5"))) << run.out;
    const CommandResult validate =
        run_in(dir.path(), "validate " + name + ".yaml --backend cpu --steps 2");
    EXPECT_EQ(validate.status, 0) << validate.out;
    EXPECT_EQ(count_of(validate.out, notice), 1u) << validate.out;
  }
}

/// A TTI survey gets the survey checks of the acoustic plan: receivers in the absorbing layer
/// (with the count and the first), in `validate` and in `run`.
TEST(TtiTraps, ReceiversInTheLayerAreWarnedInValidateAndRun) {
  const TempDir dir;
  std::ofstream(dir.path() / "s.yaml")
      << "physics: tti\n"
         "grid: {shape: [25, 25, 25], spacing: 10}\n"
         "model: {type: constant, velocity: 2000}\n"
         "anisotropy: {angle_unit: degrees, epsilon: 0.1, delta: 0.05, theta: 0}\n"
         "time: {steps: 2}\n"
         "boundary: {width: 4}\n"
         "sources: [{position: [120, 120, 120], wavelet: {type: ricker, frequency: 10}}]\n"
         "receivers: {points: [[120, 120, 120], [20, 120, 120], [10, 120, 120]]}\n";
  const std::string warning =
      "warning: 2 of 3 receivers (the first: s.yaml:8: receivers.points[1] at [20, 120, 120]) "
      "lie inside the absorbing layer; they record damped waves";
  const CommandResult validate = run_in(dir.path(), "validate s.yaml --backend cpu");
  EXPECT_EQ(validate.status, 0) << validate.out;
  EXPECT_NE(validate.out.find(warning), std::string::npos) << validate.out;
  const CommandResult run = run_in(dir.path(), "run s.yaml -o out.h5 --backend cpu --steps 2");
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find(warning), std::string::npos) << run.out;
  EXPECT_TRUE(fs::exists(dir.path() / "out.h5")) << run.out;
  // The source sits inside: no source warning.
  EXPECT_EQ(run.out.find("sources (the first"), std::string::npos) << run.out;
}

/// Velocities in km/s are warned for a TTI survey too (the plan of the TTI equation).
TEST(TtiTraps, KilometresPerSecondAreWarned) {
  const Survey s =
      parse_survey("physics: tti\n" + kGrid +
                       "model: {type: constant, velocity: 2}\n"
                       "anisotropy: {angle_unit: degrees, epsilon: 0.1, delta: 0.05, theta: 0}\n"
                       "time:\n  steps: 2\n  dt: 0.001\nboundary: {width: 5}\n"
                       "sources:\n  - position: [200, 200, 200]\n    wavelet: " +
                       kRicker + "\n",
                   "t.yaml", ".");
  ValidateOptions options;
  options.backend = "cpu";
  const std::string out = validate_survey(s, options);
  EXPECT_NE(out.find("warning: velocities look like km/s: the model's largest is 2 m/s"),
            std::string::npos)
      << out;
  // In m/s: no such warning.
  const Survey m =
      parse_survey("physics: tti\n" + kGrid + kModel +
                       "anisotropy: {angle_unit: degrees, epsilon: 0.1, delta: 0.05, theta: 0}\n"
                       "time:\n  steps: 2\nboundary: {width: 5}\n"
                       "sources:\n  - position: [200, 200, 200]\n    wavelet: " +
                       kRicker + "\n",
                   "t.yaml", ".");
  EXPECT_EQ(validate_survey(m, options).find("km/s"), std::string::npos);
}

/// A model in km/s makes dt a thousand times too long, and the first error is then a wavelet
/// above the time step's Nyquist: the error names the likely cause first.
TEST(UnitTraps, KilometresPerSecondAreNamedBeforeTheNyquistTheyCause) {
  const Survey s = parse_survey(kGrid + "model: {type: constant, velocity: 2}\n" + kTime +
                                    "boundary: {width: 5}\nsources:\n  - position: [200, 200, "
                                    "200]\n    wavelet: " +
                                    kRicker + "\n",
                                "t.yaml", ".");
  std::string m;
  try {
    make_plan(survey_for_shot(s, 0), VelocityRange{2, 2});
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    m = e.what();
  }
  const auto cause = m.find("t.yaml:4: model: velocities look like km/s");
  const auto nyquist = m.find("sources[0].wavelet.frequency: 10 Hz is not allowed");
  EXPECT_EQ(cause, 0u) << m;
  EXPECT_NE(nyquist, std::string::npos) << m;
  EXPECT_LT(cause, nyquist) << m;
  EXPECT_NE(m.find("a thousand times too long"), std::string::npos) << m;
  // In m/s the same wavelet plans without a word about the unit.
  EXPECT_EQ(warnings_of(kGrid + kModel + kTime +
                        "boundary: {width: 5}\nsources:\n  - position: [200, 200, 200]\n"
                        "    wavelet: " +
                        kRicker + "\n")
                .find("km/s"),
            std::string::npos);
}

/// A trace interval whose Nyquist lies below the sources' band is warned, with both.
TEST(TraceTraps, DtOutBelowTheBandIsWarnedWithTheBandAndTheNyquist) {
  const std::string survey = kGrid + kModel + kTime +
                             "boundary: {width: 5}\nsources:\n  - position: [200, 200, 200]\n"
                             "    wavelet: {type: ricker, frequency: 25}\n"
                             "receivers:\n  points: [[100, 100, 100]]\n";
  // 2.5 x 25 Hz = 62.5 Hz against 1/(2 x 0.01 s) = 50 Hz.
  const std::string w = warnings_of(survey + "output: {dt_out: 0.01}\n");
  EXPECT_NE(w.find("t.yaml:13: output.dt_out: the sources' band reaches 62.5 Hz "
                   "(sources[0].wavelet: 2.5 x the Ricker's 25 Hz), above the traces' Nyquist "
                   "frequency 1/(2 dt_out) = 50 Hz at dt_out 0.01 s: the traces are low-passed"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("unchanged up to 40.9 Hz, nothing above 50 Hz"), std::string::npos) << w;
  EXPECT_NE(w.find("to keep it, dt_out at most 0.00655 s"), std::string::npos) << w;
  // 4 ms: Nyquist 125 Hz, above the band: no warning; nor without dt_out.
  EXPECT_EQ(warnings_of(survey + "output: {dt_out: 0.004}\n").find("dt_out"), std::string::npos);
  EXPECT_EQ(warnings_of(survey).find("dt_out"), std::string::npos);
}

/// The estimate counts the boundary (the C-PML costs more) and the CPU backend's threads.
TEST(ValidateTraps, EstimateCountsTheBoundaryAndTheThreads) {
  const std::string base = kGrid + kModel + kTime +
                           "sources:\n  - position: [200, 200, 200]\n    wavelet: " + kRicker +
                           "\n";
  const Survey minimod = parse_survey(base + "boundary: {width: 5}\n", "t.yaml", ".");
  const Survey cpml = parse_survey(base + "boundary: {width: 5, type: cpml}\n", "t.yaml", ".");
  const Grid g = make_grid(minimod.grid);
  for (const bool gpu : {false, true}) {
    const double layer = estimate_stepping(minimod, g, 100, gpu, 2).seconds;
    const SteppingEstimate c = estimate_stepping(cpml, g, 100, gpu, 2);
    EXPECT_GT(c.seconds, 1.4 * layer) << c.basis;
    EXPECT_NE(c.basis.find("the C-PML 1.47 times"), std::string::npos) << c.basis;
  }
  const SteppingEstimate two = estimate_stepping(minimod, g, 100, false, 2);
  const SteppingEstimate eight = estimate_stepping(minimod, g, 100, false, 8);
  EXPECT_NEAR(two.seconds / eight.seconds, std::pow(4.0, 0.8), 1e-9);
  EXPECT_NE(eight.basis.find("on 2 threads, scaled to 8 as threads^0.8"), std::string::npos)
      << eight.basis;
  // validate prints it for the run's backend.
  ValidateOptions options;
  options.backend = "cpu";
  EXPECT_NE(validate_survey(cpml, options).find("the C-PML 1.47 times Minimod's layer's cost"),
            std::string::npos);
}

/// `validate` prints the boundary's expected one-face return by angle from the measured table,
/// with the target that chose a C-PML's width, for both equations; the TTI plan refuses a chosen
/// width that the grid cannot hold as the acoustic one does.
TEST(ValidateTraps, PrintsTheExpectedReturnOfTheBoundary) {
  const TempDir dir;
  const std::string body = "model: {type: constant, velocity: 2000}\ntime: {steps: 2}\n"
                           "sources: [{position: [150, 150, 150], wavelet: " +
                           kRicker + "}]\nreceivers: {points: [[160, 150, 150]]}\n";
  const std::string tti =
      "physics: tti\nanisotropy: {angle_unit: degrees, epsilon: 0.1, delta: 0.05, theta: 0}\n";
  const std::string grid = "grid: {shape: [40, 40, 40], spacing: 10}\n";
  std::ofstream(dir.path() / "cpml.yaml") << grid + body + "boundary: {type: cpml}\n";
  std::ofstream(dir.path() / "tti.yaml") << tti + grid + body + "boundary: {type: cpml}\n";
  const std::string line =
      "\nboundary    cpml, 10 points a face (chosen for the default -49 dB to 60 degrees): "
      "expected return 0 deg -49.4 dB, 30 -50.0, 45 -50.6, 60 -51.1, 70 -51.4 "
      "(docs/physics-checks.md)\n";
  for (const char* name : {"cpml.yaml", "tti.yaml"}) {
    const CommandResult validate = run_in(dir.path(), std::string("validate ") + name);
    EXPECT_EQ(validate.status, 0) << validate.out;
    EXPECT_EQ(count_of(validate.out, line), 1u) << name << ":\n" << validate.out;
  }
  std::ofstream(dir.path() / "target.yaml")
      << grid + body + "boundary: {type: cpml, reflection_db: -60, free_surface: true}\n";
  const CommandResult target = run_in(dir.path(), "validate target.yaml");
  EXPECT_EQ(target.status, 0) << target.out;
  EXPECT_NE(target.out.find("\nboundary    cpml, 16 points a face (chosen for "
                            "boundary.reflection_db -60 dB to 60 degrees): expected return 0 deg "
                            "-61.8 dB, 30 -62.3, 45 -62.9, 60 -63.4, 70 -62.6 "
                            "(docs/physics-checks.md); the top (z-) is a free surface, no layer\n"),
            std::string::npos)
      << target.out;
  // Minimod's layer from ntaper on a coarser z: one line for each width, naming its faces.
  // ntaper 3 x 2000 / 100 Hz: 6 points at 10 m, 3 at 20 m; the free surface takes z-.
  std::ofstream(dir.path() / "minimod.yaml")
      << "grid: {shape: [40, 40, 40], spacing: [10, 10, 20]}\n" + body +
             "boundary: {fmax: 100, free_surface: true}\n";
  const CommandResult minimod = run_in(dir.path(), "validate minimod.yaml");
  EXPECT_EQ(minimod.status, 0) << minimod.out;
  char first[256], second[256];
  std::snprintf(
      first, sizeof first,
      "\nboundary    minimod, x-, x+, y-, y+: 6 points a face: expected return 0 deg "
      "%.1f dB, 30 %.1f, 45 %.1f, 60 %.1f, 70 %.1f, extended below",
      layer_return_db(BoundaryType::Minimod, 6, 0), layer_return_db(BoundaryType::Minimod, 6, 30),
      layer_return_db(BoundaryType::Minimod, 6, 45), layer_return_db(BoundaryType::Minimod, 6, 60),
      layer_return_db(BoundaryType::Minimod, 6, 70));
  std::snprintf(second, sizeof second,
                "\n            z+: 3 points a face: expected return 0 deg %.1f dB",
                layer_return_db(BoundaryType::Minimod, 3, 0));
  EXPECT_NE(minimod.out.find(first), std::string::npos) << first << "\nin:\n" << minimod.out;
  EXPECT_NE(minimod.out.find(second), std::string::npos) << second << "\nin:\n" << minimod.out;
  EXPECT_NE(
      minimod.out.find("(docs/physics-checks.md); the top (z-) is a free surface, no layer\n"),
      std::string::npos)
      << minimod.out;
  EXPECT_EQ(minimod.out.find("chosen for"), std::string::npos) << "no target" << minimod.out;
  // A TTI grid too narrow for the chosen width: refused at the key, as the acoustic plan does.
  std::ofstream(dir.path() / "narrow.yaml")
      << tti + "grid: {shape: [40, 40, 20], spacing: 10}\n" +
             "model: {type: constant, velocity: 2000}\ntime: {steps: 2}\n"
             "sources: [{position: [150, 150, 100], wavelet: " +
             kRicker + "}]\nboundary: {type: cpml}\n";
  const CommandResult narrow = run_in(dir.path(), "validate narrow.yaml");
  EXPECT_EQ(narrow.status, 2) << narrow.out;
  EXPECT_NE(narrow.out.find("narrow.yaml:7: boundary.reflection_db: a layer of 10 points (chosen "
                            "for the default -49 dB to 60 degrees) on each z face is wider than "
                            "half the grid (20 points along z)"),
            std::string::npos)
      << narrow.out;
}

/// TTI surveys get the acoustic survey's checks in `validate`: points a wavelength, the trace
/// sampling, the output's size, the host memory and the estimate.
TEST(TtiTraps, ValidateWarnsDispersionAndPrintsSizeMemoryAndEstimate) {
  // vp 1500 m/s, fmax 2.5 x 25 Hz at 10 m: 2.4 points a wavelength; epsilon 0.1, delta -0.05 make
  // the slowest P wave 1500 sqrt(0.9) = 1423 m/s, 2.28 points.
  const std::string text = "physics: tti\n" + kGrid +
                           "model: {type: constant, velocity: 1500}\n"
                           "anisotropy: {angle_unit: degrees, epsilon: 0.1, delta: -0.05, theta: "
                           "20}\ntime:\n  steps: 20\nboundary: {width: 5}\n"
                           "sources:\n  - position: [200, 200, 200]\n"
                           "    wavelet: {type: ricker, frequency: 25}\n"
                           "receivers:\n  points: [[100, 100, 100], [150, 100, 100]]\n"
                           "output: {file: tti.h5}\n";
  const Survey s = parse_survey(text, "t.yaml", ".");
  ValidateOptions options;
  options.backend = "cpu";
  const std::string out = validate_survey(s, options);
  EXPECT_NE(out.find("warning: only 2.2768"), std::string::npos) << out;
  EXPECT_NE(out.find("grid points per shortest wavelength (vmin 1423.02"), std::string::npos)
      << out;
  EXPECT_NE(out.find("wavelength  fmax 62.5 Hz, 2.2768"), std::string::npos) << out;
  EXPECT_NE(out.find("receivers   2, 21 samples at dt_out"), std::string::npos) << out;
  EXPECT_NE(out.find("output      tti.h5, about "), std::string::npos) << out;
  EXPECT_NE(out.find("host memory "), std::string::npos) << out;
  EXPECT_NE(out.find("estimate    about "), std::string::npos) << out;
  EXPECT_NE(out.find("the TTI CPU backend at 192^3"), std::string::npos) << out;
  // A kernel the TTI run refuses is refused by validate too.
  options.kernel = "no_such_kernel";
  try {
    validate_survey(s, options);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--kernel: 'no_such_kernel': no tti kernel named"),
              std::string::npos)
        << e.what();
  }
}

/// What `validate` says the output holds is what `run` writes: traces, snapshots and /model.
TEST(ValidateTraps, OutputSizeIsTheWrittenFilesSize) {
  if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  const TempDir dir;
  // A 90^3 grid: /model is 2.8 MiB, more than the traces (30 x 201 samples) and snapshots.
  std::ofstream(dir.path() / "s.yaml")
      << "grid: {shape: [90, 90, 90], spacing: 10}\nmodel: {type: constant, velocity: 2000}\n"
         "time: {steps: 200}\nboundary: {width: 10}\n"
         "sources:\n  - position: [450, 450, 300]\n    wavelet: {type: ricker, frequency: 10}\n"
         "receivers:\n  lines: [{start: [200, 450, 200], end: [700, 450, 200], count: 30}]\n"
         "output: {file: out.h5, snapshots: {every: 100, decimate: 3}}\n";
  const auto run = [&](const std::string& arguments) {
    const std::string command =
        "cd '" + dir.path().string() + "' && '" + MINIMOD_BINARY + "' " + arguments + " 2>&1";
    std::FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buffer[4096];
    std::size_t got = 0;
    while (pipe != nullptr && (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
      out.append(buffer, got);
    const int status = pipe != nullptr ? pclose(pipe) : -1;
    EXPECT_EQ(WEXITSTATUS(status), 0) << out;
    return out;
  };
  const std::string validate = run("validate s.yaml --backend cpu");
  const std::smatch size = [&] {
    std::smatch m;
    std::regex_search(validate, m, std::regex(R"(output      out\.h5, about ([0-9.]+) MiB)"));
    return m;
  }();
  ASSERT_FALSE(size.empty()) << validate;
  const double predicted = std::stod(size[1].str()) * 1024 * 1024;
  run("run s.yaml --backend cpu --quiet");
  const double written = static_cast<double>(fs::file_size(dir.path() / "out.h5"));
  EXPECT_NEAR(predicted / written, 1.0, 0.1)
      << predicted << " predicted, " << written << " written";
}

/// A stand-in for a GPU kernel, for a build without GPU kernels: only its name is used.
class NamedGpuKernel final : public StencilKernel {
public:
  explicit NamedGpuKernel(std::string name) : m_name(std::move(name)) {}
  std::string name() const override { return m_name; }
  std::string family() const override { return m_name; }
  std::string description() const override { return "test stand-in"; }
  BackendKind backend() const override { return kGpuBackend; }
  Physics physics() const override { return Physics::Acoustic; }
  bool handles(RegionKind) const override { return true; }
  void launch(const IsoFields&, const FieldLayout&, const StencilCoefs&, const Region&,
              void*) const override {
    throw std::logic_error("a test stand-in");
  }

private:
  std::string m_name;
};

/// Where `auto` falls back to the CPU, `run` leaves the survey's kernel out; a name that exists
/// for no backend is refused all the same, by the plan both `validate` and `run` make.
TEST(KernelTraps, SurveyKernelIsCheckedWhereAutoFallsBackToTheCpu) {
  if (kernel_registry().names(kGpuBackend, Physics::Acoustic).empty()) {
    // A CPU-only build: stand-ins for the GPU backend's default pair and its baseline.
    for (const char* name : {"st_reg_shft_25d_32x16", "gmem_3d_f4_32x4x4", "st_reg_shft_25d_32x32",
                             "smem_3d_32x4x4", default_kernel_name(kGpuBackend)}) {
      if (!kernel_registry().find(name, kGpuBackend, Physics::Acoustic))
        kernel_registry().add(std::make_unique<NamedGpuKernel>(name));
    }
  }
  const auto survey = [](const std::string& kernel) {
    return parse_survey(kGrid + kModel + kTime +
                            "boundary: {width: 5}\nsources:\n  - position: [200, 200, 200]\n"
                            "    wavelet: " +
                            kRicker + "\nkernel: " + kernel + "\n",
                        "t.yaml", ".");
  };
  ValidateOptions options; // backend auto: the CPU here unless a GPU is present
  const Survey wrong = survey("no_such_kernel");
  const std::string expected = "t.yaml:11: kernel: 'no_such_kernel': no acoustic kernel named "
                               "'no_such_kernel' for backend " +
                               std::string(backend_name(kGpuBackend));
  for (const bool validate : {true, false}) {
    try {
      if (validate)
        validate_survey(wrong, options);
      else
        make_plan(survey_for_shot(wrong, 0), VelocityRange{2000, 2000});
      ADD_FAILURE() << "no InputError from " << (validate ? "validate" : "the plan");
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).find(expected), 0u) << e.what();
    }
  }
  // The retired temporally blocked family (tb2_25d, docs/kernels.md "Temporal blocking does not pay
  // at radius 4") is an unknown name like any other: the same message, with the kernels that exist.
  for (const std::string& retired :
       {std::string("tb2_25d"), std::string("tb2_25d_32x16"), std::string("inner=tb2_25d_32x32")}) {
    const std::string name = retired.substr(retired.find('=') + 1);
    try {
      make_plan(survey_for_shot(survey(retired), 0), VelocityRange{2000, 2000});
      ADD_FAILURE() << "the plan accepted kernel: " << retired;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("t.yaml:11: kernel: '" + retired + "': no acoustic kernel named '" +
                          name + "' for backend " + backend_name(kGpuBackend)),
                0u)
          << what;
      EXPECT_NE(what.find("; allowed: "), std::string::npos) << what;
      EXPECT_NE(what.find(default_kernel_name(kGpuBackend)), std::string::npos) << what;
    }
  }
  // A GPU kernel's name, the CPU's, a region spec of GPU kernels and auto all pass the plan.
  for (const std::string& ok :
       {std::string(default_kernel_name(kGpuBackend)), std::string("cpu"),
        "pml=" + std::string(default_kernel_name(kGpuBackend)), std::string("auto")})
    EXPECT_NO_THROW(make_plan(survey_for_shot(survey(ok), 0), VelocityRange{2000, 2000})) << ok;
}

} // namespace
} // namespace minimod
