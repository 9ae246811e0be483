#pragma once
/// Source wavelets (docs/physics.md section 4) and band-limited resampling of sampled signals.

#include "io/survey.hpp"

#include <string>
#include <vector>

namespace minimod {

/// Ricker wavelet with peak frequency f (Hz) delayed by t0 (s), at time t.
double ricker(double t, double f, double t0);
/// Minimod's Gaussian derivative with maximum frequency fmax (Hz), at time t.
double minimod_wavelet(double t, double fmax);

/// Highest frequency a wavelet carries (Hz): 2.5 x peak for Ricker (-30 dB), fmax for Minimod,
/// the declared fmax for a file or else the highest frequency at 1% of the spectrum's peak.
double wavelet_fmax(const WaveletSpec& w, const std::string& key = "wavelet.file");

/// Samples of a wavelet at t = n*dt for n = 0..steps-1, times the wavelet's amplitude.
/// Throws InputError (naming `key`) when a wavelet file is missing, empty or malformed.
std::vector<float> sample_wavelet(const WaveletSpec& w, double dt, int steps,
                                  const std::string& key);

/// The checks of sample_wavelet (the file readable and of finite float32 values, every sample
/// times the amplitude finite in float32; InputError naming the wavelet and the sample) without
/// keeping the samples: what `validate` and the plan run before any work.
void check_wavelet(const WaveletSpec& w, double dt, int steps, const std::string& key);

/// Samples of a wavelet file: text (one number a line, '#' comments) for .txt/.csv/.dat/.asc and
/// for any file whose first 4 KiB are printable ASCII with a digit, else raw little-endian
/// float32.
std::vector<float> read_wavelet_file(const std::string& path, const std::string& key);

/// Output samples on each side of the low-pass that resampling to a coarser interval applies,
/// and its attenuation in the stop band (dB), which starts at the output Nyquist frequency.
inline constexpr int kResampleRadius = 20;
inline constexpr double kResampleStopDb = 60;

/// The Kaiser-windowed sinc that resample() applies for `ratio` = dt_out / dt_in.
struct ResampleFilter {
  double radius = 0; ///< half-length, in output samples when downsampling, else input samples
  double beta = 0;   ///< Kaiser shape
  double cutoff = 0; ///< fraction of the input Nyquist frequency where the response is -6 dB
  /// Fraction of the output Nyquist frequency below which the band passes unchanged (within
  /// 0.1%): 0.82 when downsampling, 1 for interpolation.
  double pass = 0;
};
ResampleFilter resample_filter(double ratio);

/// Resample `in` (interval dt_in, first sample at t = 0) to n_out samples of interval dt_out.
/// The same interval is a copy. A coarser one (samples dropped, at any ratio, integer or not) is
/// low-passed first with a Kaiser-windowed sinc whose stop band (kResampleStopDb) starts at the
/// output Nyquist frequency, so nothing above it aliases into the band; a finer one is
/// windowed-sinc interpolation. Zero outside the input.
std::vector<float> resample(const std::vector<float>& in, double dt_in, double dt_out, int n_out);

/// resample() for `traces` traces of equal length stored one after another in `in`; the result
/// holds n_out samples a trace, in the same order. The interpolation weights are computed once for
/// all traces (a survey's gather resamples hundreds of traces with the same weights).
std::vector<float> resample_traces(const std::vector<float>& in, std::size_t traces, double dt_in,
                                   double dt_out, int n_out);

} // namespace minimod
