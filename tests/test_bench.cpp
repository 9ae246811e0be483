/// `minimod-gpu bench` and `--kernel auto` on the CPU: argument checks, the JSON records of a tiny
/// benchmark, auto on the CPU backend, and the autotune cache.

#include "app/bench.hpp"
#include "core/errors.hpp"
#include "io/survey.hpp"
#include "kernels/autotune.hpp"
#include "kernels/gpu_probe.hpp"
#include "solver/simulation.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

/// The whole text of the file at `path`.
std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A record's `boundary_width`: the six faces' widths in points, named x-, x+, y-, y+, z-, z+.
Json face_widths(int x_lo, int x_hi, int y_lo, int y_hi, int z_lo, int z_hi) {
  Json j = Json::object();
  j["x-"] = x_lo, j["x+"] = x_hi, j["y-"] = y_lo, j["y+"] = y_hi, j["z-"] = z_lo, j["z+"] = z_hi;
  return j;
}

/// The member names of a JSON object, in file order.
std::vector<std::string> keys_of(const Json& object) {
  std::vector<std::string> out;
  for (const auto& item : object.items())
    out.push_back(item.key());
  return out;
}

/// Parse a `bench ...` command line into BenchArgs (CLI11 errors propagate).
BenchArgs parse_bench(const std::string& command_line) {
  CLI::App app{"test"};
  BenchArgs args;
  add_bench_subcommand(app, args);
  app.parse(command_line, false);
  return args;
}

/// A folder under the system temp folder, removed with its contents.
class TempDir {
public:
  explicit TempDir(const std::string& tag) {
    m_path = fs::temp_directory_path() /
             ("minimod_" + tag + "_" + std::to_string(static_cast<long>(::getpid())));
    fs::remove_all(m_path);
    fs::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

/// Sets an environment variable for the scope, restoring the old value after.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (m_old)
      ::setenv(m_name.c_str(), m_old->c_str(), 1);
    else
      ::unsetenv(m_name.c_str());
  }

private:
  std::string m_name;
  std::optional<std::string> m_old;
};

/// Options of a benchmark small enough for the CPU: 64 x 60 x 58 points (27-point layers).
BenchOptions tiny_cpu_options(std::vector<std::string> kernels) {
  BenchOptions o;
  o.kernels = std::move(kernels);
  o.shape = {64, 60, 58};
  o.steps = 2;
  o.warmup = 1;
  o.repeats = 3;
  o.backend = BackendKind::Cpu;
  return o;
}

// ---- Arguments --------------------------------------------------------------------------------

TEST(BenchArgs, Defaults) {
  const BenchOptions o = bench_options(parse_bench("bench"));
  EXPECT_EQ(o.kernels, std::vector<std::string>{"all"});
  EXPECT_EQ(o.shape, (std::array<int, 3>{1000, 1000, 1000}));
  EXPECT_EQ(o.steps, 100);
  EXPECT_EQ(o.repeats, 3);
  EXPECT_GE(o.warmup, 1);
  EXPECT_EQ(o.backend, kGpuBackend);
  EXPECT_EQ(o.physics, Physics::Acoustic);
  EXPECT_TRUE(o.json_path.empty());
}

TEST(BenchArgs, EveryOption) {
  const BenchOptions o =
      bench_options(parse_bench("bench --kernel gmem_3d,smem_3d --grid 128 --steps 7 --warmup 2 "
                                "--repeats 5 --physics acoustic --json out/b.json --backend cpu"));
  EXPECT_EQ(o.kernels, (std::vector<std::string>{"gmem_3d", "smem_3d"}));
  EXPECT_EQ(o.shape, (std::array<int, 3>{128, 128, 128}));
  EXPECT_EQ(o.steps, 7);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_EQ(o.repeats, 5);
  EXPECT_EQ(o.json_path, "out/b.json");
  EXPECT_EQ(o.backend, BackendKind::Cpu);
  EXPECT_EQ(bench_options(parse_bench("bench --shape 100x80x60")).shape,
            (std::array<int, 3>{100, 80, 60}));
}

TEST(BenchArgs, Rejections) {
  EXPECT_THROW(parse_bench("bench --grid 100 --shape 100x100x100"), CLI::ParseError);
  EXPECT_THROW(parse_bench("bench --grid 0"), CLI::ParseError);
  EXPECT_THROW(parse_bench("bench --steps x"), CLI::ParseError);
  for (const char* line :
       {"bench --shape 100x80", "bench --shape 100xx80x60", "bench --shape 0x100x100",
        "bench --shape 100x80x60x", "bench --shape axbxc", "bench --repeats 2", "bench --steps 0",
        "bench --warmup -1", "bench --physics elastic", "bench --layer -2",
        "bench --grid 40 --layer 20", "bench --no-azimuth", "bench --backend rocm",
        "bench --grid 54", "bench --shape 1000x1000x40", "bench --kernel ,"}) {
    EXPECT_THROW(bench_options(parse_bench(line)), InputError) << line;
  }
  // A binary benchmarks its own GPU backend only.
  const std::string other = kGpuBackend == BackendKind::Hip ? "cuda" : "hip";
  EXPECT_THROW(bench_options(parse_bench("bench --backend " + other)), InputError) << other;
  try {
    bench_options(parse_bench("bench --repeats 2"));
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--repeats"), std::string::npos) << e.what();
  }
}

TEST(BenchArgs, LayerWidth) {
  EXPECT_EQ(bench_options(parse_bench("bench")).layer, -1);
  EXPECT_EQ(bench_options(parse_bench("bench --layer 0 --grid 64")).layer, 0);
  // A thinner layer than the seeds' leaves an inner region on a smaller grid.
  EXPECT_EQ(bench_options(parse_bench("bench --layer 8 --grid 20")).shape,
            (std::array<int, 3>{20, 20, 20}));
  EXPECT_EQ(bench_options(parse_bench("bench --physics tti --backend cpu --grid 64")).backend,
            BackendKind::Cpu);
}

TEST(BenchArgs, TtiDefaultsToTheSeedsTtiGrid) {
  BenchOptions o = bench_options(parse_bench("bench --physics tti"));
  EXPECT_EQ(o.physics, Physics::Tti);
  EXPECT_EQ(o.shape, (std::array<int, 3>{900, 900, 900}));
  EXPECT_TRUE(o.tti_azimuth);
  o = bench_options(parse_bench("bench --physics tti --no-azimuth --grid 64"));
  EXPECT_FALSE(o.tti_azimuth);
  EXPECT_EQ(o.shape, (std::array<int, 3>{64, 64, 64}));
}

TEST(BenchArgs, Precision) {
  EXPECT_EQ(bench_options(parse_bench("bench")).precisions,
            std::vector<Precision>{Precision::Float32});
  EXPECT_EQ(bench_options(parse_bench("bench --precision float16")).precisions,
            std::vector<Precision>{Precision::Float16});
  EXPECT_EQ(bench_options(parse_bench("bench --precision float32")).precisions,
            std::vector<Precision>{Precision::Float32});
  EXPECT_EQ(bench_options(parse_bench("bench --precision both")).precisions,
            (std::vector<Precision>{Precision::Float32, Precision::Float16}));
  // TTI is float32 alone: refused by name with float16 and both; so is the C-PML.
  for (const char* line :
       {"bench --precision half", "bench --precision Float16",
        "bench --physics tti --precision float16", "bench --physics tti --precision both --grid 64",
        "bench --boundary cpml --precision float16"}) {
    try {
      bench_options(parse_bench(line));
      ADD_FAILURE() << line << ": accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--precision"), std::string::npos) << e.what();
    }
  }
  try {
    bench_options(parse_bench("bench --physics tti --precision float16"));
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--physics tti"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(bench_options(parse_bench("bench --physics tti --precision float32")));
}

TEST(BenchArgs, KernelLists) {
  EXPECT_EQ(split_kernel_list("all"), std::vector<std::string>{"all"});
  EXPECT_EQ(split_kernel_list(" a, b ;c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_kernel_list("inner=a,pml=b;c; inner=d"),
            (std::vector<std::string>{"inner=a,pml=b", "c", "inner=d"}));
  EXPECT_TRUE(split_kernel_list(" ; , ").empty());
}

// ---- A tiny benchmark on the CPU ---------------------------------------------------------------

TEST(BenchCpu, RecordsCarryEveryField) {
  TempDir dir("bench_records");
  BenchOptions o = tiny_cpu_options({"all", "cpu", "inner=cpu,pml=cpu", "auto"});
  o.autotune_cache = (dir.path() / "autotune.json").string();
  const BenchReport rep = run_bench(o, {});
  ASSERT_GE(rep.records.size(), 4u);
  EXPECT_GT(rep.floor_ms, 0.0);
  EXPECT_GT(rep.floor.stream_gbps, 0.0);
  EXPECT_GE(rep.floor.stream_ms_all.size(), 5u);
  EXPECT_EQ(rep.layer.x_lo, 27);
  for (const BenchRecord& r : rep.records) {
    EXPECT_EQ(r.status, "ok") << r.spec << ": " << r.reason;
    EXPECT_EQ(r.ms_all.size(), 3u) << r.spec;
    EXPECT_GT(r.ms, 0.0) << r.spec;
    EXPECT_GT(r.percent_of_floor, 0.0) << r.spec;
    for (const std::string& k : r.kernels)
      EXPECT_EQ(k, "cpu") << r.spec;
  }
  EXPECT_EQ(rep.records.back().spec, "auto");

  const Json doc = Json::parse(bench_json(rep));
  ASSERT_TRUE(doc["records"].is_array());
  ASSERT_EQ(doc["records"].size(), rep.records.size());
  for (const Json& rec : doc["records"]) {
    for (const char* field :
         {"gpu", "physics", "grid", "steps", "repeats", "kernel", "kernels", "ms_per_step",
          "ms_per_step_all", "floor_ms_per_step", "copy_gbps", "stream_gbps", "gpts_per_s",
          "effective_gbps", "percent_of_floor", "date", "commit", "status", "layer"}) {
      EXPECT_TRUE(rec.contains(field)) << "record field " << field << " missing";
    }
    EXPECT_EQ(rec["physics"], "acoustic");
    EXPECT_EQ(rec["precision"], "float32");
    EXPECT_EQ(rec["boundary"], "minimod");
    EXPECT_EQ(rec["boundary_width"], face_widths(27, 27, 27, 27, 27, 27));
    EXPECT_EQ(rec["grid"], Json({64, 60, 58}));
    EXPECT_EQ(rec["steps"], 2);
    EXPECT_EQ(rec["repeats"], 3);
    EXPECT_EQ(rec["ms_per_step_all"].size(), 3u);
    EXPECT_GT(rec["ms_per_step"].get<double>(), 0.0);
    for (const char* region : {"inner", "top", "bottom", "front", "back", "left", "right"})
      EXPECT_EQ(rec["kernels"][region], "cpu") << region;
    // The acoustic CPU backend by default: passes of 4 steps, or single steps where its trial
    // found them faster (MINIMOD_CPU_PASS_STEPS unset).
    if (std::getenv("MINIMOD_CPU_PASS_STEPS") == nullptr) {
      const int pass = rec["pass_steps"].get<int>();
      EXPECT_TRUE(pass == 1 || pass == 4) << pass;
    }
    const std::string date = rec["date"].get<std::string>();
    EXPECT_EQ(date.size(), 20u) << date;
    EXPECT_EQ(date.back(), 'Z') << date;
  }
  const std::string table = bench_table(rep);
  EXPECT_NE(table.find("% floor"), std::string::npos) << table;
  EXPECT_NE(table.find("memory floor"), std::string::npos) << table;
}

TEST(BenchCpu, LayerWidthReachesTheProblem) {
  BenchOptions o = tiny_cpu_options({"cpu"});
  o.layer = 0;
  BenchReport rep = run_bench(o, {});
  EXPECT_EQ(rep.layer.x_lo, 0);
  EXPECT_EQ(rep.layer.z_hi, 0);
  ASSERT_EQ(rep.records.size(), 1u);
  EXPECT_EQ(rep.records[0].status, "ok") << rep.records[0].reason;
  Json rec = Json::parse(bench_json(rep))["records"][0];
  EXPECT_EQ(rec["boundary"], "none") << "no face has a layer";
  EXPECT_EQ(rec["boundary_width"], face_widths(0, 0, 0, 0, 0, 0));
  o.layer = 6;
  rep = run_bench(o, {});
  EXPECT_EQ(rep.layer.y_hi, 6);
  EXPECT_EQ(rep.records[0].status, "ok") << rep.records[0].reason;
  rec = Json::parse(bench_json(rep))["records"][0];
  EXPECT_EQ(rec["boundary"], "minimod");
  EXPECT_EQ(rec["boundary_width"], face_widths(6, 6, 6, 6, 6, 6));
  o.boundary = BoundaryType::Cpml;
  rep = run_bench(o, {});
  EXPECT_EQ(rep.records[0].status, "ok") << rep.records[0].reason;
  rec = Json::parse(bench_json(rep))["records"][0];
  EXPECT_EQ(rec["boundary"], "cpml");
  EXPECT_EQ(rec["boundary_width"], face_widths(6, 6, 6, 6, 6, 6));
  EXPECT_EQ(rec["precision"], "float32");
}

TEST(BenchCpu, TtiOnTheCpuBackend) {
  BenchOptions o = tiny_cpu_options({"cpu"});
  o.physics = Physics::Tti;
  o.shape = {40, 36, 34};
  o.layer = 6;
  const BenchReport rep = run_bench(o, {});
  EXPECT_EQ(rep.physics, "tti");
  EXPECT_EQ(rep.backend, "cpu");
  EXPECT_EQ(rep.layer.x_lo, 6);
  const Json rec = Json::parse(bench_json(rep))["records"][0];
  EXPECT_EQ(rec["physics"], "tti");
  EXPECT_EQ(rec["boundary"], "minimod");
  EXPECT_EQ(rec["boundary_width"], face_widths(6, 6, 6, 6, 6, 6));
  EXPECT_EQ(rec["precision"], "float32");
  EXPECT_GT(rep.floor.stream_gbps, 0.0);
  EXPECT_GT(rep.floor_ms, 0.0);
  ASSERT_EQ(rep.records.size(), 1u);
  EXPECT_EQ(rep.records[0].status, "ok") << rep.records[0].reason;
  EXPECT_GT(rep.records[0].gpts_per_s, 0.0);
}

// The records' fields, in the order docs/benchmark.md lists them and scripts read them.
const std::vector<std::string> kRecordFields = {"gpu",
                                                "backend",
                                                "physics",
                                                "precision",
                                                "grid",
                                                "layer",
                                                "boundary",
                                                "boundary_width",
                                                "spacing",
                                                "dt",
                                                "steps",
                                                "warmup_steps",
                                                "repeats",
                                                "kernel",
                                                "status",
                                                "reason",
                                                "kernels",
                                                "pass_steps",
                                                "notes",
                                                "ms_per_step",
                                                "ms_per_step_all",
                                                "floor_ms_per_step",
                                                "copy_gbps",
                                                "stream_gbps",
                                                "floor_points",
                                                "gpts_per_s",
                                                "effective_gbps",
                                                "percent_of_floor",
                                                "bytes_per_point",
                                                "float32_difference",
                                                "date",
                                                "commit"};

/// A report as run_bench makes it, by hand: one measured record and one refused.
BenchReport handmade_report() {
  BenchReport rep;
  rep.device = "GPU \"X\" \xff"; // quotes, and a byte that is not UTF-8
  rep.backend = "cuda";
  rep.physics = "acoustic";
  rep.grid.nx = 100, rep.grid.ny = 90, rep.grid.nz = 80;
  rep.grid.dx = rep.grid.dy = rep.grid.dz = 20.0;
  rep.layer = {27, 27, 26, 26, 25, 0};
  rep.boundary = BoundaryType::Cpml;
  rep.dt = 0.1 + 0.2; // 0.30000000000000004: needs all 17 digits
  rep.steps = 100, rep.warmup = 5, rep.repeats = 3;
  rep.floor.copy_gbps = 3000.5;
  rep.floor.stream_gbps = 2999.25;
  rep.floor.points = 1LL << 40;
  rep.floor_ms = 1.0 / 3.0;
  rep.date = "2025-01-01T00:00:00Z";
  BenchRecord ok;
  ok.spec = "smem_3d_32x4x4";
  ok.kernels.fill("gmem_3d_32x4x4");
  ok.kernels[0] = "smem_3d_32x4x4";
  ok.notes = {"layers on gmem_3d_32x4x4"};
  ok.ms_all = {1.5e-7, 2.0, 2.5};
  ok.ms = 2.0;
  ok.gpts_per_s = 0.36;
  ok.effective_gbps = std::numeric_limits<double>::quiet_NaN();
  ok.percent_of_floor = std::numeric_limits<double>::infinity();
  BenchRecord refused;
  refused.spec = "gmem_3d_64x4x2";
  refused.status = "refused";
  refused.reason = "the grid's nx is not a multiple of 64";
  refused.kernels.fill("-");
  BenchRecord half = ok;
  half.precision = Precision::Float16;
  half.bytes_per_point = 10.0;
  half.float32_difference = PrecisionDifference{1.25e-3, std::nan("")};
  rep.records = {ok, refused, half};
  return rep;
}

TEST(BenchJson, FieldsInOrderWithNullsForWhatIsNotMeasured) {
  const BenchReport rep = handmade_report();
  const std::string text = bench_json(rep);
  EXPECT_EQ(text.rfind("{\n  \"program\": \"minimod-gpu bench\",\n", 0), 0u) << text;
  EXPECT_EQ(text.substr(text.size() - 4), "]\n}\n") << "one newline at the end";
  const Json doc = Json::parse(text);
  EXPECT_EQ(keys_of(doc),
            (std::vector<std::string>{"program", "version", "commit", "date", "records"}));
  ASSERT_EQ(doc["records"].size(), 3u);
  const Json& ok = doc["records"][0];
  const Json& refused = doc["records"][1];
  const Json& half = doc["records"][2];
  EXPECT_EQ(keys_of(half), kRecordFields);
  EXPECT_EQ(keys_of(ok), kRecordFields);
  EXPECT_EQ(keys_of(refused), kRecordFields);
  EXPECT_EQ(keys_of(ok["kernels"]),
            (std::vector<std::string>{"inner", "top", "bottom", "front", "back", "left", "right"}));

  // Values: exact doubles (parsed back to the same bits), integers, escaped strings.
  EXPECT_EQ(ok["gpu"], "GPU \"X\" \xef\xbf\xbd") << "the stray byte becomes U+FFFD";
  EXPECT_EQ(ok["grid"], Json({100, 90, 80}));
  EXPECT_EQ(ok["layer"], Json({27, 27, 26, 26, 25, 0}));
  EXPECT_EQ(ok["precision"], "float32");
  EXPECT_EQ(ok["boundary"], "cpml");
  EXPECT_EQ(keys_of(ok["boundary_width"]),
            (std::vector<std::string>{"x-", "x+", "y-", "y+", "z-", "z+"}));
  EXPECT_EQ(ok["boundary_width"], face_widths(27, 27, 26, 26, 25, 0)) << "z+ has no layer";
  EXPECT_EQ(ok["spacing"].get<double>(), 20.0);
  EXPECT_EQ(ok["dt"].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(ok["floor_ms_per_step"].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(ok["ms_per_step_all"][0].get<double>(), 1.5e-7);
  EXPECT_EQ(ok["floor_points"].get<long long>(), 1LL << 40);
  EXPECT_TRUE(ok["floor_points"].is_number_integer());
  EXPECT_EQ(ok["kernel"], "smem_3d_32x4x4");
  EXPECT_EQ(ok["kernels"]["inner"], "smem_3d_32x4x4");
  EXPECT_EQ(ok["kernels"]["right"], "gmem_3d_32x4x4");
  EXPECT_EQ(ok["notes"], Json({"layers on gmem_3d_32x4x4"}));
  EXPECT_EQ(ok["ms_per_step"].get<double>(), 2.0);
  EXPECT_EQ(ok["gpts_per_s"].get<double>(), 0.36);
  EXPECT_TRUE(ok["reason"].is_null()) << "no reason for a measured kernel";
  // JSON has no NaN or Inf: a non-finite measurement is null, never a number.
  EXPECT_TRUE(ok["effective_gbps"].is_null());
  EXPECT_TRUE(ok["percent_of_floor"].is_null());

  EXPECT_EQ(refused["status"], "refused");
  EXPECT_EQ(refused["reason"], "the grid's nx is not a multiple of 64");
  EXPECT_EQ(refused["notes"], Json::array());
  EXPECT_EQ(refused["ms_per_step_all"], Json::array());
  for (const char* field : {"ms_per_step", "gpts_per_s", "effective_gbps", "percent_of_floor"})
    EXPECT_TRUE(refused[field].is_null()) << field << " of a refused kernel";
  EXPECT_EQ(refused["floor_ms_per_step"].get<double>(), 1.0 / 3.0)
      << "the floor is the run's, measured once";
  EXPECT_TRUE(ok["float32_difference"].is_null()) << "a float32 record is the reference";
  EXPECT_EQ(ok["bytes_per_point"].get<double>(), 16.0);

  // A float16 record: its precision, its floor at 10 B a point, its difference from float32.
  EXPECT_EQ(half["precision"], "float16");
  EXPECT_EQ(half["bytes_per_point"].get<double>(), 10.0);
  EXPECT_EQ(half["floor_ms_per_step"].get<double>(), 1.0 / 3.0 * 10.0 / 16.0);
  EXPECT_EQ(keys_of(half["float32_difference"]),
            (std::vector<std::string>{"field_rel_l2", "traces_rel_l2"}));
  EXPECT_EQ(half["float32_difference"]["field_rel_l2"].get<double>(), 1.25e-3);
  EXPECT_TRUE(half["float32_difference"]["traces_rel_l2"].is_null()) << "NaN is null";
  const std::string table = bench_table(rep);
  EXPECT_NE(table.find("float16 against float32"), std::string::npos) << table;
  EXPECT_NE(table.find("final wavefield 0.00125"), std::string::npos) << table;
}

TEST(BenchCpu, BothPrecisionsOnTheSameProblem) {
  BenchOptions o = tiny_cpu_options({"cpu"});
  o.steps = 12;
  o.precisions = {Precision::Float32, Precision::Float16};
  const BenchReport rep = run_bench(o, {});
  ASSERT_EQ(rep.records.size(), 2u);
  const BenchRecord& f32 = rep.records[0];
  const BenchRecord& f16 = rep.records[1];
  EXPECT_EQ(f32.precision, Precision::Float32);
  EXPECT_EQ(f16.precision, Precision::Float16);
  EXPECT_EQ(f32.status, "ok") << f32.reason;
  EXPECT_FALSE(f32.float32_difference);
  const Json doc = Json::parse(bench_json(rep));
  EXPECT_EQ(doc["records"][0]["precision"], "float32");
  EXPECT_EQ(doc["records"][1]["precision"], "float16");
  if (f16.status == "refused") {
    // The CPU backend's 16-bit storage (or the problem's medium coding) is not in this build.
    EXPECT_NE(f16.reason.find("--precision float16"), std::string::npos) << f16.reason;
    GTEST_SKIP() << "float16 refused here: " << f16.reason;
  }
  ASSERT_EQ(f16.status, "ok") << f16.reason;
  ASSERT_TRUE(f16.float32_difference);
  // Binary16 storage with float32 arithmetic: a few 1e-4 of the wavefield after these steps.
  EXPECT_LT(f16.float32_difference->field_rel_l2, 2e-2);
  EXPECT_GE(f16.float32_difference->field_rel_l2, 0.0);
  EXPECT_EQ(f16.bytes_per_point, 10.0);
  EXPECT_FALSE(doc["records"][1]["float32_difference"].is_null());
}

TEST(BenchCpu, UnknownKernelIsAnInputError) {
  EXPECT_THROW(run_bench(tiny_cpu_options({"no_such_kernel"}), {}), InputError);
  EXPECT_THROW(run_bench(tiny_cpu_options({"inner=cpu,middle=cpu"}), {}), InputError);
}

TEST(BenchCpu, CommandWritesJsonAndExitCodes) {
  if (!fs::exists(MINIMOD_BINARY)) GTEST_FAIL() << "the program is not built: " << MINIMOD_BINARY;
  TempDir dir("bench_cmd");
  const fs::path json = dir.path() / "b.json";
  const std::string prog = std::string("'") + MINIMOD_BINARY + "'";
  const std::string quiet = " > '" + (dir.path() / "log").string() + "' 2>&1";
  int rc = std::system((prog +
                        " bench --backend cpu --shape 64x60x58 --steps 2 --warmup 1 "
                        "--kernel cpu --json '" +
                        json.string() + "'" + quiet)
                           .c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  ASSERT_TRUE(fs::exists(json));
  const std::string text = read_text(json);
  const Json doc = Json::parse(text);
  ASSERT_EQ(doc["records"].size(), 1u);
  EXPECT_EQ(doc["records"][0]["kernel"], "cpu");
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2)
      << "b.json and the log, no temporary left";

  rc = std::system((prog + " bench --backend cpu --grid 20" + quiet).c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  rc = std::system((prog + " bench --backend cpu --shape 64x60x58 --kernel nope" + quiet).c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

TEST(BenchCpu, HostFloorIsMeasured) {
  const MemoryFloor f = measure_host_memory_floor(1000);
  EXPECT_GE(f.points, 1000);
  EXPECT_GT(f.copy_gbps, 0.0);
  EXPECT_GT(f.stream_gbps, 0.0);
  EXPECT_GE(f.stream_ms_all.size(), 5u);
  EXPECT_NEAR(f.floor_ms(f.points), f.stream_ms, 1e-9 * f.stream_ms + 1e-12);
}

// ---- auto on the CPU backend ------------------------------------------------------------------

Survey small_survey(const std::string& kernel) {
  const std::string text = "grid: {shape: [24, 22, 20], spacing: 10}\n"
                           "model: {type: constant, velocity: 2000}\n"
                           "time: {steps: 4}\n"
                           "boundary: {width: 4}\n"
                           "sources:\n"
                           "  - position: [110, 100, 90]\n"
                           "    wavelet: {type: ricker, frequency: 10}\n"
                           "receivers:\n"
                           "  points: [[130, 100, 90]]\n"
                           "kernel: " +
                           kernel + "\n";
  return parse_survey(text, "auto.yaml", ".");
}

TEST(AutoKernel, SpecRecognised) {
  EXPECT_TRUE(is_auto_kernel_spec("auto"));
  EXPECT_TRUE(is_auto_kernel_spec(" auto\t"));
  EXPECT_FALSE(is_auto_kernel_spec("autox"));
  EXPECT_FALSE(is_auto_kernel_spec(""));
  EXPECT_FALSE(is_auto_kernel_spec("inner=auto"));
}

TEST(AutoKernel, CpuBackendResolvesToCpu) {
  TempDir dir("auto_cpu");
  ScopedEnv cache("MINIMOD_AUTOTUNE_CACHE", (dir.path() / "autotune.json").c_str());
  for (const bool from_survey : {false, true}) {
    const Survey s = small_survey(from_survey ? "auto" : "cpu");
    SimulationOptions opt;
    opt.backend = BackendChoice::Cpu;
    opt.kernel_spec = from_survey ? "" : "auto";
    std::vector<std::string> notices;
    Simulation sim(s, std::vector<float>(24 * 22 * 20, 2000.0f), opt,
                   [&](const std::string& line) { notices.push_back(line); });
    for (const std::string& k : sim.kernel_names())
      EXPECT_EQ(k, "cpu");
    sim.run({}, nullptr);
  }
  EXPECT_FALSE(fs::exists(dir.path() / "autotune.json")) << "nothing to cache on the CPU";
}

// ---- The autotune cache -----------------------------------------------------------------------

AutotuneEntry entry(const std::string& device, int nx, const std::string& inner) {
  AutotuneEntry e;
  e.key.device = device;
  e.key.physics = "acoustic";
  e.key.shape = {nx, 90, 80};
  e.key.layer = {27, 27, 27, 27, 27, 27};
  e.inner = inner;
  e.layer = "gmem_3d_32x4x4";
  e.ms_per_step = 1.25;
  e.candidates = {"inner:" + inner, "layer:gmem_3d_32x4x4"};
  e.date = "2025-01-01T00:00:00Z";
  e.commit = "abc";
  return e;
}

TEST(AutotuneCache, PathFromEnvironment) {
  {
    ScopedEnv a("MINIMOD_AUTOTUNE_CACHE", "/some/where/at.json");
    EXPECT_EQ(autotune_cache_path(), "/some/where/at.json");
  }
  {
    ScopedEnv a("MINIMOD_AUTOTUNE_CACHE", nullptr);
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(autotune_cache_path(), "/xdg/minimod-gpu/autotune.json");
  }
  {
    ScopedEnv a("MINIMOD_AUTOTUNE_CACHE", nullptr);
    ScopedEnv x("XDG_CACHE_HOME", nullptr);
    ScopedEnv h("HOME", "/home/someone");
    EXPECT_EQ(autotune_cache_path(), "/home/someone/.cache/minimod-gpu/autotune.json");
  }
}

TEST(AutotuneCache, RoundTrip) {
  TempDir dir("autotune_cache");
  const std::string path = (dir.path() / "sub" / "autotune.json").string();
  ScopedEnv env("MINIMOD_AUTOTUNE_CACHE", path.c_str());
  EXPECT_EQ(autotune_cache_path(), path);
  const AutotuneEntry a = entry("GPU \"A\"", 100, "smem_3d_32x4x4");
  EXPECT_FALSE(read_autotune_cache(path, a.key).has_value()) << "no file yet";

  write_autotune_cache(path, a);
  auto got = read_autotune_cache(path, a.key);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->key == a.key);
  EXPECT_EQ(got->inner, a.inner);
  EXPECT_EQ(got->layer, a.layer);
  EXPECT_DOUBLE_EQ(got->ms_per_step, a.ms_per_step);
  EXPECT_EQ(got->candidates, a.candidates);
  EXPECT_EQ(got->date, a.date);
  EXPECT_EQ(got->commit, a.commit);

  // Another key is another entry; the same key replaces.
  const AutotuneEntry b = entry("GPU \"A\"", 120, "gmem_3d_32x4x4");
  EXPECT_FALSE(read_autotune_cache(path, b.key).has_value());
  write_autotune_cache(path, b);
  write_autotune_cache(path, entry("GPU \"A\"", 100, "gmem_3d_64x4x2"));
  got = read_autotune_cache(path, a.key);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->inner, "gmem_3d_64x4x2");
  ASSERT_TRUE(read_autotune_cache(path, b.key).has_value());
  EXPECT_EQ(read_autotune_cache(path, b.key)->inner, "gmem_3d_32x4x4");
  EXPECT_EQ(Json::parse(read_text(path))["entries"].size(), 2u);

  AutotuneKey other = a.key;
  other.layer[5] = 26;
  EXPECT_FALSE(read_autotune_cache(path, other).has_value());
  other = a.key;
  other.device = "GPU B";
  EXPECT_FALSE(read_autotune_cache(path, other).has_value());

  // A damaged cache is ignored with a reason, and replaced by the next write.
  {
    std::ofstream out(path, std::ios::trunc);
    out << "{ not json";
  }
  std::string problem;
  EXPECT_FALSE(read_autotune_cache(path, a.key, &problem).has_value());
  EXPECT_FALSE(problem.empty());
  write_autotune_cache(path, a);
  EXPECT_TRUE(read_autotune_cache(path, a.key).has_value());
}

TEST(AutotuneCache, FileLayout) {
  TempDir dir("autotune_layout");
  const std::string path = (dir.path() / "autotune.json").string();
  write_autotune_cache(path, entry("GPU \"A\"", 100, "smem_3d_32x4x4"));
  const std::string text = read_text(path);
  EXPECT_EQ(text.back(), '\n');
  const Json doc = Json::parse(text);
  EXPECT_EQ(keys_of(doc), (std::vector<std::string>{"format", "version", "entries"}));
  EXPECT_EQ(doc["format"], "minimod-gpu autotune cache");
  EXPECT_EQ(doc["version"], 1);
  ASSERT_EQ(doc["entries"].size(), 1u);
  const Json& e = doc["entries"][0];
  EXPECT_EQ(keys_of(e),
            (std::vector<std::string>{"key", "device", "physics", "grid", "layer", "inner", "pml",
                                      "ms_per_step", "candidates", "date", "commit"}));
  EXPECT_EQ(e["key"], "GPU \"A\"|acoustic|100x90x80|27,27,27,27,27,27");
  EXPECT_EQ(e["grid"], Json({100, 90, 80}));
  EXPECT_EQ(e["ms_per_step"].get<double>(), 1.25);
  EXPECT_EQ(e["candidates"], Json({"inner:smem_3d_32x4x4", "layer:gmem_3d_32x4x4"}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
      << "no temporary file left";
}

/// The smallest entry a cache may hold: the key and the inner kernel.
Json minimal_entry() {
  return Json{{"device", "GPU A"},
              {"physics", "acoustic"},
              {"grid", {100, 90, 80}},
              {"layer", {27, 27, 27, 27, 27, 27}},
              {"inner", "smem_3d_32x4x4"}};
}

AutotuneKey minimal_key() {
  AutotuneKey k;
  k.device = "GPU A";
  k.physics = "acoustic";
  k.shape = {100, 90, 80};
  k.layer = {27, 27, 27, 27, 27, 27};
  return k;
}

TEST(AutotuneCache, OptionalFieldsAndUnknownOnesAreNotNeeded) {
  TempDir dir("autotune_minimal");
  const std::string path = (dir.path() / "autotune.json").string();
  Json extra = minimal_entry();
  extra["written_by"] = "a later version";
  std::ofstream(path) << Json{{"entries", {minimal_entry()}}}.dump();
  std::string problem = "stale";
  const auto got = read_autotune_cache(path, minimal_key(), &problem);
  ASSERT_TRUE(got.has_value()) << problem;
  EXPECT_EQ(problem, "");
  EXPECT_EQ(got->inner, "smem_3d_32x4x4");
  EXPECT_EQ(got->layer, "");
  EXPECT_EQ(got->ms_per_step, 0.0);
  EXPECT_TRUE(got->candidates.empty());
  EXPECT_EQ(got->date, "");
  std::ofstream(path, std::ios::trunc) << Json{{"version", 1}, {"entries", {extra}}}.dump();
  EXPECT_TRUE(read_autotune_cache(path, minimal_key()).has_value());
}

// A damaged cache is ignored with a reason that names the file and the field, and the next
// write replaces it. Never an exception: it is only a cache.
TEST(AutotuneCache, DamagedCacheIsIgnoredNamingTheField) {
  struct Case {
    std::string text;     ///< the file
    std::string expected; ///< in the reason
  };
  auto with = [](const std::function<void(Json&)>& change) {
    Json e = minimal_entry();
    change(e);
    return Json{{"version", 1}, {"entries", {e}}}.dump();
  };
  const std::vector<Case> cases = {
      {"{ not json", "(not JSON: parse error at line 1, column 4"},
      {"", "(not JSON: "},
      {"{\"entries\": []} trailing", "(not JSON: "},
      {"[]", "(the top level is not an object)"},
      {"{\"version\": 1}", "(cache.entries is missing)"},
      {"{\"entries\": {}}", "(cache.entries is not an array)"},
      {"{\"version\": 2, \"entries\": []}", "(cache format version 2, this program writes 1)"},
      {"{\"version\": \"1\", \"entries\": []}", "(cache format version \"1\""},
      {"{\"entries\": [3]}", "(entries[0] is not an object)"},
      {with([](Json& e) { e.erase("device"); }), "(entries[0].device is missing)"},
      {with([](Json& e) { e["inner"] = nullptr; }), "(entries[0].inner is null, not a string)"},
      {with([](Json& e) {
         e["grid"] = {100, 90};
       }),
       "(entries[0].grid is [100,90], not an array of 3 integers)"},
      {with([](Json& e) { e["grid"][1] = 90.5; }),
       "(entries[0].grid[1] is 90.5, not an integer of int range)"},
      {with([](Json& e) { e["grid"][2] = 3000000000LL; }),
       "(entries[0].grid[2] is 3000000000, not an integer of int range)"},
      {with([](Json& e) { e["layer"][5] = "27"; }),
       "(entries[0].layer[5] is \"27\", not an integer of int range)"},
      {with([](Json& e) { e["ms_per_step"] = "fast"; }),
       "(entries[0].ms_per_step is \"fast\", not a number)"},
      {with([](Json& e) {
         e["candidates"] = {"inner:a", 1};
       }),
       "(entries[0].candidates[1] is 1, not a string)"},
      {with([](Json& e) { e["pml"] = false; }), "(entries[0].pml is false, not a string)"},
  };
  TempDir dir("autotune_damaged");
  const std::string path = (dir.path() / "autotune.json").string();
  for (const Case& c : cases) {
    {
      std::ofstream out(path, std::ios::trunc);
      out << c.text;
    }
    std::string problem;
    EXPECT_FALSE(read_autotune_cache(path, minimal_key(), &problem).has_value()) << c.text;
    EXPECT_EQ(problem.rfind(path + " is not a readable autotune cache (", 0), 0u) << problem;
    EXPECT_NE(problem.find(c.expected), std::string::npos)
        << "file: " << c.text << "\nreason: " << problem << "\nexpected: " << c.expected;
    EXPECT_EQ(read_text(path), c.text) << "reading leaves the file as it was";

    AutotuneEntry e = entry("GPU A", 100, "gmem_3d_64x4x2");
    e.key = minimal_key();
    write_autotune_cache(path, e);
    problem = "stale";
    const auto got = read_autotune_cache(path, minimal_key(), &problem);
    ASSERT_TRUE(got.has_value()) << c.text;
    EXPECT_EQ(problem, "");
    EXPECT_EQ(got->inner, "gmem_3d_64x4x2");
    EXPECT_EQ(Json::parse(read_text(path))["entries"].size(), 1u) << "the damaged file replaced";
  }
}

} // namespace
} // namespace minimod
