#include "solver/wavelet.hpp"

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "io/memory_file.hpp"
#include "io/text.hpp"
#include "solver/kaiser.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

namespace minimod {
namespace {

constexpr double kPi = 3.14159265358979323846;

double sinc(double x) {
  return std::abs(x) < 1e-12 ? 1.0 : std::sin(kPi * x) / (kPi * x);
}

/// In-place discrete Fourier transform (e^{-2 pi i f k / n}) of a power-of-two length:
/// iterative radix-2 Cooley-Tukey, bit-reversed order first.
void fft(std::vector<std::complex<double>>& a) {
  const std::size_t n = a.size();
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1)
      j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const std::complex<double> step = std::polar(1.0, -2.0 * kPi / static_cast<double>(len));
    for (std::size_t start = 0; start < n; start += len) {
      std::complex<double> w = 1;
      for (std::size_t k = 0; k < len / 2; ++k) {
        const std::complex<double> even = a[start + k], odd = a[start + k + len / 2] * w;
        a[start + k] = even + odd;
        a[start + k + len / 2] = even - odd;
        w *= step;
      }
    }
  }
}

bool has_text_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos) return false;
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext == "txt" || ext == "csv" || ext == "dat" || ext == "asc";
}

/// True when the file's first 4 KiB are printable ASCII text with a digit: samples written as
/// numbers, whatever the name says. Float32 samples are not: a wavelet starts near zero, and
/// small floats hold bytes outside printable ASCII.
bool looks_like_text(const std::string& path) {
  const std::unique_ptr<std::istream> stream = open_input_file(path); // disk or memory
  std::istream& in = *stream;
  if (!in) return false;
  char buffer[4096];
  in.read(buffer, sizeof buffer);
  const std::streamsize got = in.gcount();
  bool digit = false;
  for (std::streamsize n = 0; n < got; ++n) {
    const auto c = static_cast<unsigned char>(buffer[n]);
    const bool text = (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n' || c == '\r';
    if (!text) return false;
    digit = digit || (c >= '0' && c <= '9');
  }
  return digit;
}

} // namespace

double ricker(double t, double f, double t0) {
  const double a = kPi * kPi * f * f * (t - t0) * (t - t0);
  return (1.0 - 2.0 * a) * std::exp(-a);
}

double minimod_wavelet(double t, double fmax) {
  const double sigma = 0.6 * fmax, tau0 = 1.0, a = 8.0;
  const double s = sigma * t - tau0;
  return -2.0 * a * sigma * (sigma - 2.0 * sigma * a * s * s) * std::exp(-a * s * s);
}

std::vector<float> read_wavelet_file(const std::string& path, const std::string& key) {
  std::vector<float> out;
  if (has_text_extension(path) || looks_like_text(path)) {
    std::ifstream in(path);
    if (!in) throw InputError(key + ": cannot open wavelet file '" + path + "'");
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      const auto hash = line.find('#');
      if (hash != std::string::npos) line.erase(hash);
      std::replace(line.begin(), line.end(), ',', ' ');
      std::istringstream fields(line);
      std::string token;
      while (fields >> token) {
        char* end = nullptr;
        const double value = std::strtod(token.c_str(), &end);
        if (end == token.c_str() || *end != '\0' || !std::isfinite(value)) {
          throw InputError(key + ": wavelet file '" + path + "' line " + std::to_string(line_no) +
                           " (sample " + std::to_string(out.size()) + "): '" + token +
                           "' is not a finite number");
        }
        if (!fits_float32(value)) {
          throw InputError(key + ": wavelet file '" + path + "' line " + std::to_string(line_no) +
                           " (sample " + std::to_string(out.size()) + "): '" + token +
                           "' is not allowed: " + float32_range_text());
        }
        out.push_back(static_cast<float>(value));
      }
    }
  } else {
    const std::unique_ptr<std::istream> stream = open_input_file(path); // disk or memory
    std::istream& in = *stream;
    if (!in) throw InputError(key + ": cannot open wavelet file '" + path + "'");
    in.seekg(0, std::ios::end);
    const std::streamsize bytes = in.tellg();
    if (bytes < 0) throw InputError(key + ": cannot read wavelet file '" + path + "'");
    require_host_memory(static_cast<double>(bytes), "wavelet file '" + path + "'");
    if (bytes % 4 != 0) {
      throw InputError(key + ": wavelet file '" + path + "' has " + std::to_string(bytes) +
                       " bytes, not a whole number of float32 samples");
    }
    in.seekg(0);
    out.resize(static_cast<std::size_t>(bytes / 4));
    in.read(reinterpret_cast<char*>(out.data()), bytes);
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (!fits_float32(out[k])) {
        throw InputError(key + ": wavelet file '" + path + "' sample " + std::to_string(k) +
                         " (byte offset " + std::to_string(4 * k) + ") is " +
                         format_number(out[k]) + "; allowed: finite values (" +
                         float32_range_text() + ")");
      }
    }
  }
  if (out.empty()) throw InputError(key + ": wavelet file '" + path + "' holds no samples");
  return out;
}

double wavelet_fmax(const WaveletSpec& w, const std::string& key) {
  switch (w.kind) {
  case WaveletSpec::Kind::Ricker:
    return 2.5 * w.frequency;
  case WaveletSpec::Kind::Minimod:
    return w.fmax;
  case WaveletSpec::Kind::File: {
    if (w.fmax > 0) return w.fmax;
    const std::vector<float> s = read_wavelet_file(w.file, key);
    // Amplitude spectrum of a zero-padded copy (at least 4x, a power of two): O(n log n), so a
    // file of tens of thousands of samples takes milliseconds.
    std::size_t n = 1024;
    while (n < s.size() * 4)
      n *= 2;
    std::vector<std::complex<double>> spectrum(n);
    for (std::size_t k = 0; k < s.size(); ++k)
      spectrum[k] = s[k];
    fft(spectrum);
    std::vector<double> amp(n / 2 + 1);
    double peak = 0;
    for (std::size_t f = 0; f < amp.size(); ++f) {
      amp[f] = std::abs(spectrum[f]);
      peak = std::max(peak, amp[f]);
    }
    std::size_t top = 0;
    for (std::size_t f = 0; f < amp.size(); ++f) {
      if (amp[f] >= 0.01 * peak) top = f;
    }
    return static_cast<double>(top) / (n * w.file_dt);
  }
  }
  return 0;
}

std::vector<float> resample_traces(const std::vector<float>& in, std::size_t traces, double dt_in,
                                   double dt_out, int n_out) {
  const std::size_t len_out = static_cast<std::size_t>(std::max(n_out, 0));
  std::vector<float> out(traces * len_out, 0.0f);
  if (traces == 0 || len_out == 0) return out;
  const std::size_t len_in = in.size() / traces;
  const double ratio = dt_out / dt_in;
  const double nearest = std::round(ratio);
  const bool integer = nearest >= 1 && std::abs(ratio - nearest) < 1e-9 * nearest;
  if (integer && nearest == 1) { // the same sampling: a copy
    for (std::size_t t = 0; t < traces; ++t)
      std::copy_n(in.data() + t * len_in, std::min(len_in, len_out), out.data() + t * len_out);
    return out;
  }
  // Downsampling keeps the band below the output Nyquist: a low-pass whose stop band starts
  // there; upsampling interpolates the input's band (the cutoff at the input Nyquist).
  const bool down = ratio > 1;
  const ResampleFilter f = resample_filter(ratio);
  const double radius = down ? f.radius * ratio : f.radius; // in input samples
  const auto n_in = static_cast<std::int64_t>(len_in);
  // Output sample k sums the input taps [first, first + width) of the row of weights of k: the
  // same row for every trace, and at an integer ratio the same for every k (the taps sit at whole
  // input samples), so the rows are made once, then the traces are filtered in parallel (the
  // sum of each output sample in one order, whatever the threads).
  const auto lo_of = [&](double x) { return static_cast<std::int64_t>(std::ceil(x - radius)); };
  const auto hi_of = [&](double x) { return static_cast<std::int64_t>(std::floor(x + radius)); };
  const auto x_of = [&](std::size_t k) {
    return integer ? static_cast<double>(k) * nearest : static_cast<double>(k) * dt_out / dt_in;
  };
  // hi - lo = floor(x + radius) - ceil(x - radius) <= 2 radius for every x.
  const auto width = static_cast<std::int64_t>(std::floor(2 * radius)) + 1;
  const std::size_t rows = integer ? 1 : len_out;
  std::vector<double> weights(rows * static_cast<std::size_t>(width), 0.0);
  std::vector<std::int64_t> first(len_out), skip(len_out), stop(len_out);
#pragma omp parallel for schedule(static)
  for (std::int64_t kk = 0; kk < static_cast<std::int64_t>(len_out); ++kk) {
    const auto k = static_cast<std::size_t>(kk);
    // The taps' centre: at an integer ratio every row is the one about 0, shifted.
    const double centre = integer ? 0.0 : x_of(k);
    const std::int64_t lo = lo_of(centre), hi = hi_of(centre);
    if (k < rows) {
      double* w = weights.data() + k * static_cast<std::size_t>(width);
      for (std::int64_t m = lo; m <= hi; ++m) {
        const double d = centre - static_cast<double>(m);
        w[m - lo] = f.cutoff * sinc(f.cutoff * d) * kaiser_window(d / radius, f.beta);
      }
    }
    first[k] =
        integer ? static_cast<std::int64_t>(k) * static_cast<std::int64_t>(nearest) + lo : lo;
    // Taps outside the input see zeros: skip them.
    skip[k] = std::max<std::int64_t>(0, -first[k]);
    stop[k] = std::min<std::int64_t>(hi - lo + 1, n_in - first[k]);
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t tt = 0; tt < static_cast<std::int64_t>(traces); ++tt) {
    const auto t = static_cast<std::size_t>(tt);
    for (std::size_t k = 0; k < len_out; ++k) {
      if (stop[k] <= skip[k]) continue;
      const float* src = in.data() + t * len_in + first[k];
      const double* w = weights.data() + (integer ? 0 : k) * static_cast<std::size_t>(width);
      double acc = 0;
      for (std::int64_t m = skip[k]; m < stop[k]; ++m)
        acc += src[m] * w[m];
      out[t * len_out + k] = static_cast<float>(acc);
    }
  }
  return out;
}

ResampleFilter resample_filter(double ratio) {
  ResampleFilter f;
  if (!(ratio > 1)) {
    // Interpolation of a band-limited input: the cutoff at the input Nyquist, 8 samples a side.
    f.radius = 8;
    f.beta = 6;
    f.cutoff = 1;
    f.pass = 1;
    return f;
  }
  // Kaiser's design (Oppenheim & Schafer, eq. 7.63-7.64): attenuation A dB in the stop band
  // needs beta = 0.1102 (A - 8.7) and a length of (A - 8) / (2.285 dw) samples for a transition
  // of width dw (rad a sample). With the length 2 x radius output samples, dw in units of the
  // output Nyquist is (A - 8) / (2.285 pi 2 radius); the stop band starts at the Nyquist.
  f.radius = kResampleRadius;
  f.beta = 0.1102 * (kResampleStopDb - 8.7);
  const double transition = (kResampleStopDb - 8.0) / (2.285 * kPi * 2.0 * f.radius);
  f.pass = 1.0 - transition;
  f.cutoff = (1.0 - 0.5 * transition) / ratio;
  return f;
}

std::vector<float> resample(const std::vector<float>& in, double dt_in, double dt_out, int n_out) {
  if (in.empty()) return std::vector<float>(static_cast<std::size_t>(std::max(n_out, 0)), 0.0f);
  return resample_traces(in, 1, dt_in, dt_out, n_out);
}

namespace {

/// What names a wavelet in messages: its survey key when it has one, else `key`.
std::string wavelet_name(const WaveletSpec& w, const std::string& key) {
  return w.loc.key.empty() ? key : w.loc.where();
}

/// Sample n of an analytic wavelet (Ricker, Minimod), amplitude included.
double analytic_sample(const WaveletSpec& w, double t) {
  if (w.kind == WaveletSpec::Kind::Ricker) {
    const double t0 = w.delay ? *w.delay : 1.5 / w.frequency;
    return w.amplitude * ricker(t, w.frequency, t0);
  }
  return w.amplitude * minimod_wavelet(t, w.fmax);
}

[[noreturn]] void reject_sample(const WaveletSpec& w, const std::string& key, std::size_t n,
                                double dt, double value) {
  throw InputError(wavelet_name(w, key) + ": sample " + std::to_string(n) +
                   " (t = " + format_number(static_cast<double>(n) * dt) + " s) is " +
                   format_number(value) + " (amplitude " + format_number(w.amplitude) +
                   "); allowed: wavelet samples that float32 holds: a smaller amplitude, or a "
                   "wavelet of finite values");
}

} // namespace

std::vector<float> sample_wavelet(const WaveletSpec& w, double dt, int steps,
                                  const std::string& key) {
  std::vector<float> s(static_cast<std::size_t>(std::max(steps, 0)));
  switch (w.kind) {
  case WaveletSpec::Kind::Ricker:
  case WaveletSpec::Kind::Minimod:
    for (int n = 0; n < steps; ++n)
      s[n] = static_cast<float>(analytic_sample(w, n * dt));
    break;
  case WaveletSpec::Kind::File: {
    s = resample(read_wavelet_file(w.file, key), w.file_dt, dt, steps);
    for (float& x : s)
      x = static_cast<float>(x * w.amplitude);
    break;
  }
  }
  for (std::size_t n = 0; n < s.size(); ++n) {
    if (!std::isfinite(s[n])) reject_sample(w, key, n, dt, s[n]);
  }
  return s;
}

void check_wavelet(const WaveletSpec& w, double dt, int steps, const std::string& key) {
  if (w.kind != WaveletSpec::Kind::File) {
    // The samples without storing them, over the wavelet's support only: outside it the Gaussian
    // factor is exactly 0 in double (e^-1400 for the Ricker at 12/f from its peak, e^-1152 for
    // Minimod's at 12 sigma), so a run of 10^9 steps checks a few thousand samples.
    double first = 0, last = 0;
    if (w.kind == WaveletSpec::Kind::Ricker) {
      const double t0 = w.delay ? *w.delay : 1.5 / w.frequency;
      first = t0 - 12.0 / w.frequency;
      last = t0 + 12.0 / w.frequency;
    } else {
      last = 13.0 / (0.6 * w.fmax);
    }
    const double lo = std::max(0.0, std::floor(first / dt) - 1);
    const double hi = std::min(static_cast<double>(steps), std::ceil(last / dt) + 2);
    for (double n = lo; n < hi; ++n) {
      const double value = analytic_sample(w, n * dt);
      if (!std::isfinite(static_cast<float>(value))) {
        reject_sample(w, key, static_cast<std::size_t>(n), dt, value);
      }
    }
    return;
  }
  // A file's samples are zero after its end (plus the interpolation's reach): resampling that far
  // sees every non-zero sample the run will use.
  std::error_code ec;
  const auto bytes = input_file_size(w.file, ec);
  const double span = ((ec ? 0.0 : static_cast<double>(bytes)) + 64.0) *
                      std::max(1.0, w.file_dt / dt) * std::max(1.0, dt / w.file_dt);
  const int n = static_cast<int>(std::min<double>(steps, span + 64.0));
  sample_wavelet(w, dt, n, key);
}

} // namespace minimod
