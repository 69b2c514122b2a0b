#pragma once
// Fast simulation of the players' reports (Algorithms 1-2 and 7): counter-based per-player
// words and the report "lattice value + discrete Laplace noise" drawn from them, in loops the
// compiler vectorises. Same report distribution as LaplaceRandomizer::report and the engine's
// exact table sampler (to double precision), without a per-player generator or its buffer.
// Simulation only: the privacy of a report is a property of its distribution, which this does
// not change; audits and releases keep the exact samplers (docs/ldp-bernstein.md, "Simulation
// speed").
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "privrace/core/random.hpp"

namespace privrace::ldp {

// SplitMix64's output function (Stafford's Mix13): a bijection of 64-bit words.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Player i's words: word(t) = mix64(key + (t + 1) gamma) with key = derive_seed(seed, i), i.e.
// the SplitMix64 sequence started at the player's key, read at position t without stepping
// through the earlier positions. Adequate for simulation: SplitMix64 passes BigCrush (Steele,
// Lea & Flood 2014), keys of distinct players are distinct outputs of a bijective mixer, and two
// players share words only if their keys differ by a multiple of gamma below the words used
// (probability about n^2 W 2^-64 per run, and then only a shifted run of words, not a
// dependence any estimator here can see). Reproducible for any thread count or player order.
class PlayerStream {
 public:
  static constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ULL;
  PlayerStream(std::uint64_t seed, std::uint64_t player) : key_(derive_seed(seed, player)) {}
  std::uint64_t word(std::uint64_t t) const { return mix64(key_ + (t + 1) * kGamma); }

 private:
  std::uint64_t key_;
};

// (w >> 11) 2^-53 in [0, 1), as RandomSource::unit, built without an int64 -> double
// conversion (which AVX2 lacks): the top 52 bits through the exponent trick, bit 11 added as
// 0 or 2^-53 (the sum is exact).
inline double unit53(std::uint64_t w) {
  const double hi = __builtin_bit_cast(double, 0x3FF0000000000000ULL | (w >> 12)) - 1.0;
  return hi + __builtin_bit_cast(double, (0 - ((w >> 11) & 1)) & 0x3CA0000000000000ULL);
}

// Natural log of a positive normal double, fdlibm's e_log.c (Sun, 1993: error below 1 ulp)
// without its branches, so that a loop over it vectorises; subnormals, 0, inf and NaN are not
// handled (the callers pass uniforms in [2^-53, 1]).
inline double log_normal_positive(double x) {
  constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  constexpr double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01, Lg3 = 2.857142874366239149e-01,
                   Lg4 = 2.222219843214978396e-01, Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                   Lg7 = 1.479819860511658591e-01;
  const std::uint64_t ix = __builtin_bit_cast(std::uint64_t, x);
  const std::uint64_t hx = (ix >> 32) & 0x000fffffULL;  // the mantissa's top 20 bits
  const std::uint64_t i = (hx + 0x95f64ULL) & 0x100000ULL;  // 1: normalise x into [sqrt(2)/2, sqrt(2))
  const std::uint64_t biased_k = (ix >> 52) + (i >> 20);    // k + 1023
  const double xr = __builtin_bit_cast(double, ((hx | (i ^ 0x3ff00000ULL)) << 32) | (ix & 0xffffffffULL));
  const double dk = __builtin_bit_cast(double, 0x4330000000000000ULL | biased_k) - (0x1.0p52 + 1023.0);
  const double f = xr - 1.0;
  const double s = f / (2.0 + f), z = s * s, w = z * z;
  const double t1 = w * (Lg2 + w * (Lg4 + w * Lg6)), t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
  const double R = t2 + t1;
  const bool wide = ((hx - 0x6147aULL) | (0x6b851ULL - hx)) < (std::uint64_t{1} << 63);  // fdlibm's i > 0
  const double hfsq = 0.5 * f * f;
  const double a = dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
  const double b = dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
  return wide ? a : b;
}

// out[j] = scale log(1 + e[j]) for e[j] >= 0, vectorised. Callers outside this file must use
// this loop rather than calling log_normal_positive per element: GCC does not inline a function
// compiled under this file's optimize pragma into one compiled without it, and the call per
// element keeps the loop scalar.
inline void scaled_log1p_nonnegative(const double* e, std::size_t n, double scale, double* out) {
#pragma omp simd
  for (std::size_t j = 0; j < n; ++j) out[j] = log_normal_positive(1.0 + e[j]) * scale;
}

// out[j] = R(x[j]) + N_j for j < d, x in lattice units, where R is the unbiased stochastic
// rounding (floor(x) + 1 with probability x - floor(x), as LaplaceRandomizer) and N_j discrete
// Laplace of the given scale (0: none), P(N = y) proportional to a^|y| with a = exp(-1/scale).
// Coordinate j reads word first + j of `s` (and, rarely, words of ranges no regular draw uses):
//  * N = a fair sign (bit 0) times G = floor(-scale log U), U = 1 - (bits 11..63) 2^-53 in
//    (0, 1]: P(G >= k) = P(U <= a^k) = a^k to double precision, G geometric with parameter a;
//    "-0" is redrawn from fresh words, as DiscreteLaplace does;
//  * R compares a uniform V with p = x - floor(x) lazily: bits 1..10 are V's first 10 bits,
//    which decide V < p unless they equal floor(1024 p) (probability 2^-10); then a fresh
//    53-bit uniform is compared with 1024 p - floor(1024 p) (exact in doubles), so
//    P(up) = floor(1024 p) / 1024 + (1024 p - floor(1024 p)) / 1024 = p.
// The three use disjoint bits of the word, hence are independent. Values are integers in doubles.
inline void lattice_laplace(const double* x, std::size_t d, double scale, const PlayerStream& s, std::uint64_t first,
                            double* out) {
  constexpr std::uint64_t kTieRange = std::uint64_t{1} << 61, kRedrawRange = std::uint64_t{1} << 62;
  if (!(scale > 0)) {
#pragma omp simd
    for (std::size_t j = 0; j < d; ++j) {
      const double f = __builtin_floor(x[j]);
      out[j] = f + (unit53(s.word(first + j)) < x[j] - f ? 1.0 : 0.0);
    }
    return;
  }
  // Two passes over chunks of 64 coordinates: words and rounding, then the logarithms (one
  // loop doing both spills registers and runs slower).
  std::uint64_t redraw = 0, tie = 0;
  constexpr std::size_t kChunk = 64;
  double u[kChunk];
  for (std::size_t j0 = 0; j0 < d; j0 += kChunk) {
    const std::size_t len = d - j0 < kChunk ? d - j0 : kChunk;
    const double* xc = x + j0;
    double* oc = out + j0;
    const std::uint64_t t0 = first + j0;
#pragma omp simd reduction(| : tie)
    for (std::size_t j = 0; j < len; ++j) {
      const double f = __builtin_floor(xc[j]);
      const double p1024 = __builtin_floor((xc[j] - f) * 1024.0);
      const std::uint64_t w = s.word(t0 + j);
      const double v10 = __builtin_bit_cast(double, 0x4330000000000000ULL | ((w >> 1) & 1023)) - 0x1.0p52;
      tie |= static_cast<std::uint64_t>(v10 == p1024);
      oc[j] = f + (v10 < p1024 ? 1.0 : 0.0);
      // U in (0, 1], carried with the sign bit 0 in its own sign
      u[j] = __builtin_bit_cast(double, __builtin_bit_cast(std::uint64_t, 1.0 - unit53(w)) | (w << 63));
    }
#pragma omp simd reduction(| : redraw)
    for (std::size_t j = 0; j < len; ++j) {
      const std::uint64_t bits = __builtin_bit_cast(std::uint64_t, u[j]);
      const std::uint64_t negative = bits >> 63;
      const double g =
          __builtin_floor(-scale * log_normal_positive(__builtin_bit_cast(double, bits & ~(std::uint64_t{1} << 63))));
      redraw |= negative & static_cast<std::uint64_t>(g == 0.0);
      oc[j] += __builtin_bit_cast(double, __builtin_bit_cast(std::uint64_t, g) ^ (negative << 63));  // +-g
    }
  }
  if (tie) [[unlikely]] {
    for (std::size_t j = 0; j < d; ++j) {
      const double f = __builtin_floor(x[j]), p1024 = (x[j] - f) * 1024.0, q = __builtin_floor(p1024);
      if (static_cast<double>((s.word(first + j) >> 1) & 1023) != q) continue;
      out[j] += unit53(s.word(kTieRange | (first + j))) < p1024 - q ? 1.0 : 0.0;
    }
  }
  if (!redraw) [[likely]]
    return;
  // "-0" (probability (1 - a) / 2 a coordinate): that coordinate's noise again from fresh words
  // (bit 62 set; coordinate and attempt in the low bits). The rounding stays as drawn.
  for (std::size_t j = 0; j < d; ++j) {
    const std::uint64_t w0 = s.word(first + j);
    if (!((w0 & 1) != 0 && __builtin_floor(-scale * log_normal_positive(1.0 - unit53(w0))) == 0.0)) continue;
    const double base = out[j];  // R(x_j) + 0
    for (std::uint64_t attempt = 1;; ++attempt) {
      const std::uint64_t w = s.word(kRedrawRange | ((first + j) << 20) | (attempt & 0xfffff));
      const double g = __builtin_floor(-scale * log_normal_positive(1.0 - unit53(w)));
      const bool negative = (w & 1) != 0;
      if (negative && g == 0.0) continue;
      out[j] = base + (negative ? -g : g);
      break;
    }
  }
}

}  // namespace privrace::ldp
