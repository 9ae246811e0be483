/// Exit 1 (internal error) must be unreachable from any input: a fixed-seed mutator of the example
/// surveys and of small raw, .npy, HDF5 and SEG-Y model files, each case run through the entry
/// points `validate` uses, with exceptions mapped to exit codes as app/main.cpp maps them. Every
/// case must end in exit 0 or 2 (or 3 for the host memory check, which a cap keeps small here).
/// A failure prints the seed and the case so that it can be reproduced. Also: linear-time parsing.

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "io/segy.hpp"
#include "io/survey.hpp"
#include "models/model_file.hpp"
#include "solver/validate.hpp"
#include "solver/wavelet.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace minimod;

constexpr std::uint32_t kSeed = 20260518;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// The exit code app/main.cpp gives an exception, and its message.
struct Outcome {
  int code = 0;
  std::string message;
};

Outcome outcome_of(const std::function<void()>& work) {
  try {
    work();
    return {0, ""};
  } catch (const InputError& e) {
    return {2, e.what()};
  } catch (const RuntimeFailure& e) {
    return {3, e.what()};
  } catch (const OutputError& e) {
    return {4, e.what()};
  } catch (const std::bad_alloc&) {
    return {1, "std::bad_alloc"};
  } catch (const std::exception& e) {
    return {1, std::string("internal error: ") + e.what()};
  }
}

bool acceptable(const Outcome& o) {
  return o.code == 0 || o.code == 2 ||
         (o.code == 3 && o.message.find("out of host memory") != std::string::npos);
}

/// Caps the host memory the checks see, so that a mutated grid of 10^12 points is refused (exit
/// 3) rather than allocated; restored afterwards.
class MemoryCap {
public:
  explicit MemoryCap(std::uint64_t bytes) { set_host_memory_cap(bytes); }
  ~MemoryCap() { set_host_memory_cap(0); }
  MemoryCap(const MemoryCap&) = delete;
  MemoryCap& operator=(const MemoryCap&) = delete;
};

/// Survey mutations: numbers replaced by extreme ones, lines deleted, duplicated or swapped,
/// bytes changed or inserted, the text cut short.
std::string mutate_survey(std::string text, std::mt19937& rng) {
  static const char* const kNumbers[] = {"0",
                                         "-1",
                                         "1e39",
                                         "1e308",
                                         "-1e308",
                                         "1e-300",
                                         "1e-45",
                                         "2147483647",
                                         "2147483648",
                                         "4294967296",
                                         "1e9",
                                         "1e18",
                                         "nan",
                                         ".inf",
                                         "0.5",
                                         "3",
                                         "-0",
                                         "1e-9",
                                         "99999999999999999999",
                                         "[1, 2]",
                                         "{a: 1}",
                                         "\"10\"",
                                         "~",
                                         "1e6",
                                         "65536"};
  const auto pick = [&rng](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  const int mutations = 1 + static_cast<int>(pick(3));
  for (int m = 0; m < mutations && !text.empty(); ++m) {
    switch (pick(8)) {
    case 0:
    case 1: { // a number token replaced
      std::vector<std::pair<std::size_t, std::size_t>> numbers;
      for (std::size_t i = 0; i < text.size();) {
        if (std::isdigit(static_cast<unsigned char>(text[i]))) {
          std::size_t j = i;
          while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) ||
                                     text[j] == '.' || text[j] == '-' || text[j] == '+'))
            ++j;
          numbers.emplace_back(i, j - i);
          i = j;
        } else {
          ++i;
        }
      }
      if (numbers.empty()) break;
      const auto [at, length] = numbers[pick(numbers.size())];
      text.replace(at, length, kNumbers[pick(std::size(kNumbers))]);
      break;
    }
    case 2:
    case 3:
    case 4: { // a line deleted, duplicated or swapped with the next
      std::vector<std::string> lines;
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);)
        lines.push_back(line);
      if (lines.size() < 2) break;
      const std::size_t k = pick(lines.size() - 1);
      const std::size_t op = pick(3);
      if (op == 0) lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(k));
      if (op == 1) lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(k), lines[k]);
      if (op == 2) std::swap(lines[k], lines[k + 1]);
      text.clear();
      for (const auto& line : lines)
        text += line + "\n";
      break;
    }
    case 5: // a byte changed to any value (CR, NUL, non-UTF-8 included)
      text[pick(text.size())] = static_cast<char>(pick(256));
      break;
    case 6: // a character inserted
      text.insert(text.begin() + static_cast<std::ptrdiff_t>(pick(text.size())),
                  "[]{}:,-#&*!|>'\"%@` \t\n\r"[pick(22)]);
      break;
    default: // cut short
      text.resize(pick(text.size()));
      break;
    }
  }
  return text;
}

/// Byte mutations of a binary file: bytes changed (more often near the start, where the headers
/// are), the file cut short or extended.
std::string mutate_bytes(std::string bytes, std::mt19937& rng) {
  const auto pick = [&rng](std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  const int mutations = 1 + static_cast<int>(pick(4));
  for (int m = 0; m < mutations && !bytes.empty(); ++m) {
    switch (pick(6)) {
    case 0:
    case 1:
    case 2: { // a header byte
      const std::size_t at = pick(std::min<std::size_t>(bytes.size(), 512));
      bytes[at] = static_cast<char>(pick(256));
      break;
    }
    case 3: // any byte
      bytes[pick(bytes.size())] = static_cast<char>(pick(256));
      break;
    case 4:
      bytes.resize(pick(bytes.size()));
      break;
    default:
      bytes.append(pick(64), static_cast<char>(pick(256)));
      break;
    }
  }
  return bytes;
}

TEST(InputFuzz, MutatedSurveysExitWith0Or2) {
  const MemoryCap cap(256ull << 20);
  std::vector<fs::path> seeds;
  for (const char* folder : {MINIMOD_SOURCE_DIR "/input", MINIMOD_TEST_DATA "/good"}) {
    for (const auto& entry : fs::directory_iterator(folder)) {
      if (entry.path().extension() == ".yaml") seeds.push_back(entry.path());
    }
  }
  // A TTI survey too (its checks differ): a valid one built from the bad theta case.
  std::sort(seeds.begin(), seeds.end());
  ASSERT_GE(seeds.size(), 4u);
  std::mt19937 rng(kSeed);
  const auto start = std::chrono::steady_clock::now();
  int cases = 0, accepted = 0;
  for (int n = 0; n < 3000; ++n, ++cases) {
    const fs::path& seed = seeds[static_cast<std::size_t>(n) % seeds.size()];
    const std::string text = mutate_survey(read_text(seed), rng);
    const Outcome o = outcome_of([&] {
      const Survey s = parse_survey(text, seed.filename().string(), seed.parent_path().string());
      ValidateOptions options;
      options.backend = "cpu";
      (void)validate_survey(s, options);
    });
    if (o.code == 0) ++accepted;
    ASSERT_TRUE(acceptable(o)) << "seed " << kSeed << ", case " << n << " (from " << seed
                               << "): exit " << o.code << ": " << o.message << "\n--- survey ---\n"
                               << text;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d mutated surveys (%d valid) in %.1f s\n", cases, accepted, seconds);
  EXPECT_GT(accepted, 30); // the mutations leave many surveys valid, so the checks past the
                           // parser run too
}

/// A small HDF5 model file (9 x 9 x 9 float32, gzip-compressed chunks) written with the C API.
void write_hdf5_model(const fs::path& path, bool chunked) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[3] = {9, 9, 9};
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  if (chunked) {
    const hsize_t chunk[3] = {3, 9, 9};
    H5Pset_chunk(plist, 3, chunk);
    H5Pset_deflate(plist, 4);
  }
  const hid_t set = H5Dcreate2(file, "/vp", H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  std::vector<float> values(729, 2000.0f);
  H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(set);
  H5Pclose(plist);
  H5Sclose(space);
  H5Fclose(file);
}

std::string npy_model() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (9, 9, 9), }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  const float v = 2000.0f;
  for (int n = 0; n < 729; ++n)
    bytes.append(reinterpret_cast<const char*>(&v), 4);
  return bytes;
}

TEST(InputFuzz, MutatedModelFilesExitWith0Or2) {
  const MemoryCap cap(256ull << 20);
  const fs::path dir = fs::temp_directory_path() / ("minimod_fuzz_" + std::to_string(getpid()));
  fs::create_directories(dir);
  struct Seed {
    ModelFormat format;
    std::string bytes;
    std::string name;
  };
  std::vector<Seed> seeds;
  seeds.push_back(
      {ModelFormat::Raw, read_text(MINIMOD_TEST_DATA "/models/const2000_9x9x9.bin"), "model.bin"});
  seeds.push_back({ModelFormat::Npy, npy_model(), "model.npy"});
  write_hdf5_model(dir / "seed.h5", false);
  seeds.push_back({ModelFormat::Hdf5, read_text(dir / "seed.h5"), "model.h5"});
  write_hdf5_model(dir / "seed.h5", true);
  seeds.push_back({ModelFormat::Hdf5, read_text(dir / "seed.h5"), "chunked.h5"});
  // SEG-Y: segyio's small cube (tests/data/segy), when the build reads SEG-Y.
  const fs::path small_cube = MINIMOD_SOURCE_DIR "/tests/data/segy/small.sgy";
  std::error_code missing;
  if (!segy_supported()) {
    std::printf("SEG-Y model files not fuzzed: this build has no segyio\n");
  } else if (!fs::is_regular_file(small_cube, missing)) {
    std::printf("SEG-Y model files not fuzzed: no %s\n", small_cube.c_str());
  } else {
    seeds.push_back({ModelFormat::Segy, read_text(small_cube), "model.sgy"});
  }
  std::mt19937 rng(kSeed + 1);
  int cases = 0;
  for (int n = 0; n < 2000; ++n, ++cases) {
    const Seed& seed = seeds[static_cast<std::size_t>(n) % seeds.size()];
    const std::string bytes =
        n < static_cast<int>(seeds.size()) ? seed.bytes : mutate_bytes(seed.bytes, rng);
    const fs::path path = dir / seed.name;
    write_bytes(path, bytes);
    const Outcome o = outcome_of([&] {
      ModelFileOptions options;
      if (seed.format == ModelFormat::Raw) options.shape = std::array<int, 3>{9, 9, 9};
      const ModelVolume volume =
          read_model_volume(seed.format, path.string(), "", AxisOrder::Xyz, "fuzz", options);
      check_model_values(volume);
    });
    if (!acceptable(o)) {
      const fs::path kept = dir / ("failed_case_" + std::to_string(n) + "_" + seed.name);
      write_bytes(kept, bytes);
      FAIL() << "seed " << kSeed + 1 << ", case " << n << " (" << model_format_name(seed.format)
             << "): exit " << o.code << ": " << o.message << "; the file is kept as " << kept;
    }
    // The unmutated seeds must read.
    if (n < static_cast<int>(seeds.size())) {
      EXPECT_EQ(o.code, 0) << seed.name << ": " << o.message;
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  std::printf("%d mutated model files\n", cases);
}

std::size_t pass_through(unsigned int, std::size_t, const unsigned int[], std::size_t bytes,
                         std::size_t*, void**) {
  return bytes;
}

/// An HDF5 model compressed with a filter this library lacks (LZF, h5py's filter 32000) is
/// refused naming the filter, not with HDF5's read error.
TEST(Hdf5Filters, MissingFilterIsNamed) {
  const fs::path path = fs::temp_directory_path() / ("minimod_lzf_" + std::to_string(getpid()));
  const H5Z_class2_t lzf{H5Z_CLASS_T_VERS, 32000, 1, 1, "lzf", nullptr, nullptr, pass_through};
  ASSERT_GE(H5Zregister(&lzf), 0);
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[3] = {9, 9, 9}, chunk[3] = {9, 9, 9};
    const hid_t space = H5Screate_simple(3, dims, nullptr);
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(plist, 3, chunk);
    H5Pset_filter(plist, 32000, H5Z_FLAG_MANDATORY, 0, nullptr);
    const hid_t set =
        H5Dcreate2(file, "/vp", H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    std::vector<float> values(729, 2000.0f);
    H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(set);
    H5Pclose(plist);
    H5Sclose(space);
    H5Fclose(file);
  }
  ASSERT_GE(H5Zunregister(32000), 0);
  const Outcome o = outcome_of([&] {
    read_model_volume(ModelFormat::Hdf5, path.string(), "", AxisOrder::Xyz, "s.yaml:6: model.file");
  });
  std::error_code ec;
  fs::remove(path, ec);
  EXPECT_EQ(o.code, 2) << o.message;
  EXPECT_NE(o.message.find("s.yaml:6: model.file: " + path.string() +
                           " (dataset /vp is compressed with filter 32000 'lzf', which this HDF5 "
                           "library does not have) is not allowed"),
            std::string::npos)
      << o.message;
}

/// A map of 50 000 keys, a survey of 20 000 receivers and a wavelet file of 50 000 samples take
/// linear time (they took 8 s, seconds and 21 s with the quadratic duplicate-key check and the
/// plain DFT of the wavelet's spectrum).
TEST(InputCost, LargeSurveysAndWaveletsAreLinear) {
  const auto seconds = [](const std::function<void()>& work) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const std::string base = read_text(MINIMOD_TEST_DATA "/good/tiny.yaml");
  // 50 000 keys in one map: refused as unknown keys, after the duplicate check of all of them.
  std::string keys = base + "output:\n";
  for (int k = 0; k < 50000; ++k)
    keys += "  k" + std::to_string(k) + ": 1\n";
  std::string message;
  const double t_keys = seconds([&] {
    try {
      parse_survey(keys, "keys.yaml", ".");
    } catch (const InputError& e) {
      message = e.what();
    }
  });
  EXPECT_NE(message.find("keys.yaml:19: output.k0: unknown key"), std::string::npos) << message;
  EXPECT_LT(t_keys, 3.0);
  // 20 000 receivers listed inline.
  std::string receivers = base.substr(0, base.find("receivers:")) + "receivers:\n  points: [";
  for (int r = 0; r < 20000; ++r)
    receivers += (r ? ", [" : "[") + std::to_string(10 + r % 170) + ", 100, 50]";
  receivers += "]\n";
  std::size_t count = 0;
  const double t_receivers = seconds([&] {
    const Survey s = parse_survey(receivers, "receivers.yaml", ".");
    ValidateOptions options;
    options.backend = "cpu";
    validate_survey(s, options);
    count = s.receivers.size();
  });
  EXPECT_EQ(count, 20000u);
  EXPECT_LT(t_receivers, 3.0);
  // A wavelet file of 50 000 samples whose fmax comes from its spectrum.
  const fs::path wavelet = fs::temp_directory_path() / ("minimod_w_" + std::to_string(getpid()));
  std::string samples;
  for (int n = 0; n < 50000; ++n) {
    const float v = static_cast<float>(std::sin(0.01 * n) * std::exp(-1e-4 * n));
    samples.append(reinterpret_cast<const char*>(&v), 4);
  }
  write_bytes(wavelet, samples);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::File;
  w.file = wavelet.string();
  w.file_dt = 1e-4;
  double fmax = 0;
  const double t_wavelet = seconds([&] { fmax = wavelet_fmax(w); });
  std::error_code ec;
  fs::remove(wavelet, ec);
  // sin(0.01 n) at dt = 1e-4 s: 15.9 Hz, widened a little by the decay.
  EXPECT_GT(fmax, 15.0);
  EXPECT_LT(fmax, 100.0);
  EXPECT_LT(t_wavelet, 3.0);
  std::printf("50000 keys %.2f s, 20000 receivers %.2f s, 50000-sample wavelet %.2f s\n", t_keys,
              t_receivers, t_wavelet);
}

} // namespace
