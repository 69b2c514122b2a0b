#pragma once
// Local randomisers of the LDP-ERM paper (Wang, Gaboardi & Xu, NeurIPS 2018, arXiv 1802.04085).
//
// Every player randomises her own value once and sends only the report. Two randomisers:
//
//  * LaplaceRandomizer: Algorithm 1 (1-D LDP average). The paper's player sends
//    v_i + Lap(b / eps) for v_i in [0, b] and the server averages (Lemma 1, proof in Appendix A
//    through the Laplace-sum tail bound of Nissim & Stemmer). Here the value is first put on
//    the integer lattice {0, ..., L} by unbiased stochastic rounding of L v / b and then gets
//    discrete Laplace noise of scale L / eps from the engine's exact sampler: one report's
//    L1 sensitivity is L (two values differ by at most L lattice steps), so the report is
//    eps-LDP with no floating-point Laplace (Mironov 2012). With `reports` values a player
//    (Algorithm 2: one per grid point) each report gets eps / reports, scale L reports / eps
//    (basic composition, as in the proof of Theorem 3).
//
//  * BitRandomizer: the bounded-value 1-bit mechanism (Duchi, Jordan & Wainwright; the
//    randomiser behind LDP-AVG of Lemma 2 (Nissim & Stemmer) and the Bassily-Smith transform of
//    Algorithm 3). For u = v / b in [0, 1] the player sends one bit with
//        P(1 | u) = p_lo + (p_hi - p_lo) u,   p_hi = e^eps / (1 + e^eps),  p_lo = 1 - p_hi,
//    so P(1 | u) / P(1 | u') <= p_hi / p_lo = e^eps (and the same for 0): eps-LDP. The server's
//    unbiased estimate of u is (bit - p_lo) / (p_hi - p_lo). p_hi is held as an integer over
//    2^52 rounded DOWN (never more than eps) and the bit is an exact comparison of a 52-bit
//    uniform with the integer threshold; the threshold rounds u to 2^-52 (a bias below 2^-52 of
//    the value range, stated, far below any statistical test).
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>

#include "privrace/core/random.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::ldp {

// UsageError unless eps > 0 (infinity allowed: no noise, for tests and references).
void check_epsilon(double eps, const char* what = "epsilon");

// Per-player randomness that costs O(1) to start: word t of player i's stream is
// derive_seed(derive_seed(seed, i), t). Reproducible for any thread count or player order.
class PlayerWords {
 public:
  PlayerWords(std::uint64_t seed, std::uint64_t player) : key_(derive_seed(seed, player)) {}
  std::uint64_t next() { return derive_seed(key_, t_++); }

 private:
  std::uint64_t key_, t_ = 0;
};

class BitRandomizer {
 public:
  static constexpr int kFractionBits = 52;
  explicit BitRandomizer(double eps);
  // The bit for u in [0, 1] (clamped) from a fresh 64-bit uniform word.
  bool report(double u, std::uint64_t word) const { return (word >> (64 - kFractionBits)) < threshold(u); }
  std::uint64_t threshold(double u) const {
    u = u < 0 ? 0 : (u > 1 ? 1 : u);
    return lo_ + static_cast<std::uint64_t>(std::llround(static_cast<double>(hi_ - lo_) * u));
  }
  double prob_one(double u) const { return std::ldexp(static_cast<double>(threshold(u)), -kFractionBits); }
  double p_hi() const { return std::ldexp(static_cast<double>(hi_), -kFractionBits); }
  double p_lo() const { return std::ldexp(static_cast<double>(lo_), -kFractionBits); }
  // Unbiased estimate of the mean of u from the fraction of ones.
  double debias(double mean_bits) const { return (mean_bits - p_lo()) / (p_hi() - p_lo()); }
  // log(p_hi / p_lo) <= eps: the privacy actually spent after rounding.
  double effective_epsilon() const;
  // Variance of one debiased report at u: P(1)(1 - P(1)) / (p_hi - p_lo)^2.
  double report_variance(double u) const;

 private:
  std::uint64_t hi_, lo_;
};

class LaplaceRandomizer {
 public:
  // eps: the player's whole budget; reports: how many values each player sends (eps split
  // evenly); levels: L, the lattice resolution of a value.
  LaplaceRandomizer(double eps, std::uint64_t reports = 1, std::uint64_t levels = 1u << 16);
  std::uint64_t levels() const { return levels_; }
  bool noiseless() const { return !noise_; }
  double noise_scale() const { return noise_ ? noise_->scale() : 0.0; }  // in lattice units
  // out[j] = lattice(u[j]) + noise, u clamped to [0, 1]; the player's stream `rng`.
  void report(std::span<const double> u, std::span<std::int64_t> out, RandomSource& rng) const;
  // The sum of `count` players' noise terms on one value (0 when noiseless): what the server's
  // sum of reports holds beyond the rounded values, drawn at once (DiscreteLaplace::sample_sum).
  std::int64_t noise_sum(std::uint64_t count, RandomSource& rng) const { return noise_ ? noise_->sample_sum(count, rng) : 0; }
  // The unbiased estimate of mean u from the sum of `count` reports.
  double decode(double report_sum, double count) const { return report_sum / (count * static_cast<double>(levels_)); }
  // Variance of one decoded report (lattice rounding + noise), at most.
  double report_variance() const;

 private:
  std::uint64_t levels_;
  std::unique_ptr<DiscreteLaplace> noise_;
  std::shared_ptr<const ExactGeometric> table_;
};

}  // namespace privrace::ldp
