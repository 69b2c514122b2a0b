#pragma once
// Local randomisers for means and gradients, the baselines of LDP mean estimation:
//
//  * DuchiMechanism: Duchi, Jordan & Wainwright's 1-D mechanism, t in [-1, 1] -> +-(e^eps + 1) /
//    (e^eps - 1), built on the project's BitRandomizer (the same bit, debiased and mapped back).
//  * PiecewiseMechanism (PM) and HybridMechanism (HM) of Wang, Xiao, Yang, Zhao, Hu, Li, Xiao &
//    Yu, "Collecting and Analyzing Multidimensional Data with Local Differential Privacy",
//    ICDE 2019 (Algorithms 2 and 3, Lemmas 1-5), for t in [-1, 1].
//  * SampledCoordinates<M>: that paper's extension to t in [-1, 1]^d (Algorithm 4): k =
//    max(1, min(d, floor(eps / 2.5))) coordinates sampled without replacement, each reported by M
//    with eps / k and scaled by d / k, the others 0.
//  * PrivUnit of Bhowmick, Duchi, Freudiger, Kapoor & Rogers 2018 (PrivUnit2) for unit vectors of
//    R^d, with the cap probability p and threshold gamma chosen as Asi, Feldman & Talwar (ICML
//    2022) do: the budget split eps = eps0 + eps1 that maximises the unbiasing scale m.
//
// Each has a per-player report from a RandomSource, and a form that reads player i's words of a
// PlayerStream (simulation.hpp) for the bulk simulators below. Every report is unbiased; the
// derivations of privacy, mean and variance are in docs/privacy-ldp.md ("LDP mean mechanisms").
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/randomizers.hpp"
#include "privrace/ldp/simulation.hpp"

namespace privrace::ldp {

// InputError unless -1 <= t <= 1 (NaN refused), naming `what` and the value.
void check_unit_interval(double t, const char* what);
// UsageError unless 0 < eps < infinity.
void check_finite_epsilon(double eps, const char* mechanism);

// Duchi et al.'s 1-D mechanism: +B with probability 1/2 + t (e^eps - 1) / (2 (e^eps + 1)), else -B,
// B = (e^eps + 1) / (e^eps - 1). The bit is BitRandomizer's at u = (t + 1) / 2 (its p_hi rounded
// down, so the privacy spent is at most eps) and B is 1 / (p_hi - p_lo) of the held probabilities.
class DuchiMechanism {
 public:
  explicit DuchiMechanism(double eps);
  double epsilon() const { return eps_; }
  double bound() const { return bound_; }
  double prob_plus(double t) const { return bit_.prob_one(0.5 * (t + 1.0)); }
  double variance(double t) const { return 4.0 * bit_.report_variance(0.5 * (t + 1.0)); }  // B^2 - t^2
  double worst_variance() const { return variance(0.0); }
  const BitRandomizer& bit() const { return bit_; }
  // From one uniform word (t unchecked): BitRandomizer::report's bit, (w >> 12) < lo + llround(gap u),
  // in doubles so that it vectorises (both sides are integers below 2^53, floor(x + 0.5) is
  // llround(x) exactly for 0 <= x < 2^52, and (w >> 12) is built by the exponent trick).
  double from_word(double t, std::uint64_t w) const {
    const double half = 0.5 * (t + 1.0), u = half < 0.0 ? 0.0 : (half > 1.0 ? 1.0 : half);
    const double threshold = lo_ + __builtin_floor(gap_ * u + 0.5);
    const double bits = __builtin_bit_cast(double, 0x4330000000000000ULL | (w >> 12)) - 0x1.0p52;
    return bits < threshold ? bound_ : -bound_;
  }
  double from_words(double t, std::uint64_t w0, std::uint64_t) const { return from_word(t, w0); }
  double report(double t, RandomSource& rng) const;  // InputError unless t in [-1, 1]

 private:
  double eps_, bound_;
  BitRandomizer bit_;
  double lo_, gap_;  // p_lo and p_hi - p_lo in units of 2^-52
};

// PM (Algorithm 2): density p on [l(t), r(t)] and p e^-eps on the rest of [-C, C], with
//   C = (e^{eps/2} + 1) / (e^{eps/2} - 1),  l(t) = (C + 1) t / 2 - (C - 1) / 2,  r(t) = l(t) + C - 1,
//   p = (e^eps - e^{eps/2}) / (2 e^{eps/2} + 2);  Var = t^2 / (e^{eps/2} - 1) + (e^{eps/2} + 3) / (3 (e^{eps/2} - 1)^2).
// Sampled by the inverse of its piecewise-linear CDF at one uniform double.
class PiecewiseMechanism {
 public:
  explicit PiecewiseMechanism(double eps);
  double epsilon() const { return eps_; }
  double bound() const { return c_; }
  double high_density() const { return p_; }
  double low_density() const { return q_; }
  double left(double t) const { return 0.5 * (c_ + 1.0) * t - 0.5 * (c_ - 1.0); }
  double right(double t) const { return left(t) + c_ - 1.0; }
  double density(double t, double y) const;
  double cdf(double t, double y) const;
  double variance(double t) const { return t * t / (h_ - 1.0) + (h_ + 3.0) / (3.0 * (h_ - 1.0) * (h_ - 1.0)); }
  double worst_variance() const { return variance(1.0); }
  // The inverse CDF at u in [0, 1) (t unchecked). Branch-free, so the bulk loops vectorise.
  double from_uniform(double t, double u) const {
    const double l = left(t), r = l + c_ - 1.0;
    const double a = q_ * (l + c_), b = a + p_ * (c_ - 1.0);
    const double y_left = -c_ + u * inv_q_, y_mid = l + (u - a) * inv_p_, y_right = r + (u - b) * inv_q_;
    const double y = u < a ? y_left : (u < b ? y_mid : y_right);
    const double lo = y < -c_ ? -c_ : y;  // rounding at the piece ends only
    return lo > c_ ? c_ : lo;
  }
  double from_words(double t, std::uint64_t w0, std::uint64_t) const { return from_uniform(t, unit53(w0)); }
  double report(double t, RandomSource& rng) const;  // InputError unless t in [-1, 1]

 private:
  double eps_, h_, c_, p_, q_, inv_p_, inv_q_;  // h = e^{eps/2}
};

// HM (Section III-C): PM with probability alpha, Duchi's mechanism otherwise, where
// alpha = 1 - e^{-eps/2} for eps > eps* (about 0.61, the paper's closed form) and 0 below.
// Var = alpha Var_PM(t) + (1 - alpha) Var_Duchi(t); for eps > eps* the t^2 terms cancel and
// Var = (e^{eps/2} + 3) / (3 e^{eps/2} (e^{eps/2} - 1)) + (e^eps + 1)^2 / (e^{eps/2} (e^eps - 1)^2).
class HybridMechanism {
 public:
  explicit HybridMechanism(double eps);
  static double threshold_epsilon();  // eps*
  double epsilon() const { return eps_; }
  double alpha() const { return alpha_; }
  double bound() const { return std::max(pm_.bound(), duchi_.bound()); }
  const PiecewiseMechanism& piecewise() const { return pm_; }
  const DuchiMechanism& duchi() const { return duchi_; }
  double variance(double t) const { return alpha_ * pm_.variance(t) + (1.0 - alpha_) * duchi_.variance(t); }
  double worst_variance() const { return std::max(variance(0.0), variance(1.0)); }
  // w0 decides the branch; the branch's report reads w1 (only one branch runs, so they share it).
  double from_words(double t, std::uint64_t w0, std::uint64_t w1) const {
    const double y_pm = pm_.from_uniform(t, unit53(w1)), y_duchi = duchi_.from_word(t, w1);
    return unit53(w0) < alpha_ ? y_pm : y_duchi;
  }
  double report(double t, RandomSource& rng) const;  // InputError unless t in [-1, 1]

 private:
  double eps_, alpha_;
  PiecewiseMechanism pm_;
  DuchiMechanism duchi_;
};

// Algorithm 4's k.
std::size_t sampled_coordinates(std::size_t d, double eps);

// Algorithm 4 over a scalar mechanism M (DuchiMechanism, PiecewiseMechanism, HybridMechanism).
// Player words (bulk form): word 0 picks the coordinates, words 1 + 2s and 2 + 2s the s-th
// sampled coordinate's report.
template <class M>
class SampledCoordinates {
 public:
  SampledCoordinates(std::size_t d, double eps)
      : d_(d), k_(sampled_coordinates(d, eps)), scalar_(eps / static_cast<double>(k_)),
        scale_(static_cast<double>(d) / static_cast<double>(k_)) {}
  std::size_t dimension() const { return d_; }
  std::size_t k() const { return k_; }
  double scale() const { return scale_; }  // d / k
  const M& scalar() const { return scalar_; }
  // Var of output coordinate j at input t_j: (d / k) Var_M(t_j) + (d / k - 1) t_j^2.
  double variance(double t) const { return scale_ * scalar_.variance(t) + (scale_ - 1.0) * t * t; }
  // E[y_j^2] = a t_j^2 + b (linear in t^2 for all three M): max over ||t||_2 <= 1 of E||y||^2.
  double second_moment_bound() const {
    const double b = variance(0.0), a = variance(1.0) + 1.0 - b;
    return std::max(a, 0.0) + static_cast<double>(d_) * b;
  }
  // t: d values in [-1, 1]; out: d values.
  void report(const double* t, RandomSource& rng, double* out) const {
    for (std::size_t j = 0; j < d_; ++j) check_unit_interval(t[j], "a coordinate of the player's vector");
    std::fill(out, out + d_, 0.0);
    pick([&](std::uint64_t n) { return rng.below(n); },
         [&](std::size_t j, std::size_t) { out[j] = scale_ * scalar_.report(t[j], rng); });
  }
  // The same law from player words (t unchecked; the bulk simulators check).
  void report_from_stream(const double* t, const PlayerStream& s, double* out) const {
    std::fill(out, out + d_, 0.0);
    sample_from_stream([t](std::size_t j) { return t[j]; }, s, [out](std::size_t j, double y) { out[j] = y; });
  }
  // The bulk form's core: get(j) returns t_j and is called for the sampled coordinates only;
  // emit(j, y_j) receives each sampled coordinate's report. Returns false if a value read was
  // outside [-1, 1] (the report is then still made, with the value as given).
  template <class Get, class Emit>
  bool sample_from_stream(Get&& get, const PlayerStream& s, Emit&& emit) const {
    std::uint64_t draws = 0;
    auto below = [&](std::uint64_t n) {  // multiply-shift of fresh words: bias below n 2^-64
      const std::uint64_t w = draws == 0 ? s.word(0) : s.word((std::uint64_t{1} << 40) + draws);
      ++draws;
      return static_cast<std::uint64_t>((static_cast<unsigned __int128>(w) * n) >> 64);
    };
    bool ok = true;
    pick(below, [&](std::size_t j, std::size_t slot) {
      const double t = get(j);
      ok = ok && t >= -1.0 && t <= 1.0;
      emit(j, scale_ * scalar_.from_words(t, s.word(1 + 2 * slot), s.word(2 + 2 * slot)));
    });
    return ok;
  }

 private:
  // k distinct coordinates, uniformly (Floyd's sampling: k draws, O(k^2) work); report(j, slot)
  // for each.
  template <class Below, class Report>
  void pick(Below&& below, Report&& report) const {
    if (k_ == d_) {
      for (std::size_t j = 0; j < d_; ++j) report(j, j);
      return;
    }
    if (k_ == 1) {
      report(static_cast<std::size_t>(below(d_)), 0);
      return;
    }
    std::vector<std::size_t> chosen;
    chosen.reserve(k_);
    for (std::size_t m = d_ - k_; m < d_; ++m) {
      const std::size_t r = static_cast<std::size_t>(below(m + 1));
      const std::size_t j = std::find(chosen.begin(), chosen.end(), r) == chosen.end() ? r : m;
      chosen.push_back(j);
    }
    for (std::size_t s = 0; s < k_; ++s) report(chosen[s], s);
  }
  std::size_t d_, k_;
  M scalar_;
  double scale_;
};

using PiecewiseVector = SampledCoordinates<PiecewiseMechanism>;
using HybridVector = SampledCoordinates<HybridMechanism>;
using DuchiSampledVector = SampledCoordinates<DuchiMechanism>;

// PrivUnit2 for u on the unit sphere of R^d: V uniform on the cap {v : <v, u> >= gamma} with
// probability p, uniform on its complement otherwise, and the report Z = V / m, where
//   m = (1 - gamma^2)^a / (2^{d-2} (d - 1)) [p / (B(a, a) - B(tau; a, a)) - (1 - p) / B(tau; a, a)],
//   a = (d - 1) / 2, tau = (1 + gamma) / 2 (B(.; a, a) the incomplete beta function), so E[Z] = u.
// The density of V relative to the uniform law is p / q on the cap and (1 - p) / (1 - q) off it
// (q = I_{1 - tau}(a, a), the cap's uniform measure): eps-LDP for
//   log(p / (1 - p)) + log((1 - q) / q) <= eps.
// <V, u> = 2 B - 1 with B ~ Beta(a, a) truncated to the cap or its complement: sampled by Boost's
// inverse incomplete beta at a uniform, the rest of V uniform on the sphere orthogonal to u.
// d = 1 is the limit: V = +-u (randomised response on the sign, m = 2 p - 1).
class PrivUnit {
 public:
  // The optimised split (Asi, Feldman & Talwar): eps0 in (0, eps) maximising m, with
  // p = e^eps0 / (1 + e^eps0) and gamma the largest with (1 - q) / q <= e^{eps - eps0}.
  PrivUnit(std::size_t d, double eps);
  // Bhowmick et al.'s parameterisation with a given split.
  static PrivUnit with_split(std::size_t d, double eps0, double eps1);
  std::size_t dimension() const { return d_; }
  double epsilon() const { return eps0_ + eps1_; }
  double eps0() const { return eps0_; }
  double eps1() const { return eps1_; }
  double p() const { return p_; }
  double gamma() const { return gamma_; }
  double cap_probability() const { return q_; }  // uniform measure of the cap
  double m() const { return m_; }
  double norm() const { return 1.0 / m_; }  // ||Z||, always
  // log of the largest density ratio of V between two inputs: log(p (1 - q) / ((1 - p) q)).
  double privacy_loss() const;
  double cap_density() const { return p_ / q_; }              // relative to uniform
  double rest_density() const { return (1.0 - p_) / (1.0 - q_); }
  // E ||Z - u||^2 = 1 / m^2 - 1 for a unit u.
  double total_variance() const { return 1.0 / (m_ * m_) - 1.0; }
  // Var <Z, u> = E[<V, u>^2] / m^2 - 1 (gamma >= 0).
  double projection_variance() const;
  // CDF of <V, u> given the branch (cap or not), for tests.
  double dot_cdf(double w, bool cap) const;
  // <V, u> from the branch and a uniform in [0, 1).
  double dot_from_uniform(bool cap, double v) const;

  // u: d values of norm 1 (within 1e-9); InputError otherwise (the zero vector included).
  void report(const double* u, RandomSource& rng, double* out) const;
  // g with ||g|| <= 1 (1e-9 slack): first rounded to the sphere without bias (g / ||g|| with
  // probability (1 + ||g||) / 2, else -g / ||g||; g = 0: +-e_1), then report. Still eps-LDP: a
  // mixture of eps-LDP reports.
  void report_ball(const double* g, RandomSource& rng, double* out) const;
  // Bulk form (g unchecked, ||g|| <= 1): word 0 rounds to the sphere, word 1 picks the branch,
  // word 2 the dot product, words 3.. the Gaussians of the orthogonal direction.
  void report_from_stream(const double* g, const PlayerStream& s, double* out) const;

 private:
  PrivUnit() = default;
  void set(std::size_t d, double p, double gamma);
  // out holds d standard normals on entry; the unit input is s * u. Writes Z.
  void finish(const double* u, double s, double w, double* out) const;
  std::size_t d_ = 1;
  double eps0_ = 0, eps1_ = 0, p_ = 0.5, gamma_ = 0, q_ = 0.5, m_ = 0, a_ = 0;
};

// The server's view of a bulk simulation: the mean of n reports per coordinate.
struct MeanEstimate {
  std::vector<double> mean;
  std::uint64_t players = 0;
};

namespace detail {
// Players in fixed blocks: add_range(begin, end, block_sum) adds the reports of players
// [begin, end) into the block's own sum and returns the first player with invalid input (end if
// none); the block sums are added in block order, so the result is bit-identical for any thread
// count and schedule.
template <class AddRange>
MeanEstimate block_mean(std::uint64_t n, std::size_t d, int threads, AddRange&& add_range) {
  if (threads <= 0) threads = omp_get_max_threads();
  constexpr std::uint64_t kBlock = 4096;
  const std::uint64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> block_sums(blocks * d, 0.0);
  std::uint64_t first_bad = n;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4) reduction(min : first_bad)
  for (std::int64_t b = 0; b < static_cast<std::int64_t>(blocks); ++b) {
    const std::uint64_t begin = static_cast<std::uint64_t>(b) * kBlock, end = std::min(n, begin + kBlock);
    const std::uint64_t bad = add_range(begin, end, block_sums.data() + static_cast<std::uint64_t>(b) * d);
    if (bad < end) first_bad = std::min(first_bad, bad);
  }
  if (first_bad < n)
    throw InputError("player " + std::to_string(first_bad) +
                     ": a value outside the mechanism's domain ([-1, 1] per coordinate, or a vector of norm above 1)");
  MeanEstimate est;
  est.players = n;
  est.mean.assign(d, 0.0);
  for (std::uint64_t b = 0; b < blocks; ++b)
    for (std::size_t j = 0; j < d; ++j) est.mean[j] += block_sums[b * d + j];
  for (auto& m : est.mean) m = n ? m / static_cast<double>(n) : 0.0;
  return est;
}
}  // namespace detail

// The mean of n players' Algorithm 4 reports. value(i, j) returns player i's coordinate j in
// [-1, 1]; only the sampled coordinates are read (O(k) work a player). Player i's randomness is
// PlayerStream(seed, i). InputError naming the first player with a value outside [-1, 1].
template <class M, class Value>
MeanEstimate simulate_sampled_mean(const SampledCoordinates<M>& mech, std::uint64_t n, std::uint64_t seed, Value&& value,
                                   int threads = 0) {
  if (mech.dimension() == 1) {
    // The scalar mechanism itself (no sampling word), in chunks: values and words first, then
    // the reports in a loop the compiler vectorises, then the sum in player order.
    const M& m = mech.scalar();
    return detail::block_mean(n, 1, threads, [&](std::uint64_t begin, std::uint64_t end, double* sum) {
      constexpr std::uint64_t kChunk = 256;
      double t[kChunk], y[kChunk];
      std::uint64_t w1[kChunk], w2[kChunk], bad = end;
      for (std::uint64_t c = begin; c < end; c += kChunk) {
        const std::uint64_t len = std::min(kChunk, end - c);
        for (std::uint64_t k = 0; k < len; ++k) {
          t[k] = value(c + k, std::size_t{0});
          const PlayerStream s(seed, c + k);
          w1[k] = s.word(1);
          w2[k] = s.word(2);
          if (!(t[k] >= -1.0 && t[k] <= 1.0) && bad == end) bad = c + k;
        }
#pragma omp simd
        for (std::uint64_t k = 0; k < len; ++k) y[k] = m.from_words(t[k], w1[k], w2[k]);
        double acc = sum[0];
        for (std::uint64_t k = 0; k < len; ++k) acc += y[k];
        sum[0] = acc;
      }
      return bad;
    });
  }
  return detail::block_mean(n, mech.dimension(), threads, [&](std::uint64_t begin, std::uint64_t end, double* sum) {
    std::uint64_t bad = end;
    for (std::uint64_t i = begin; i < end; ++i)
      if (!mech.sample_from_stream([&](std::size_t j) { return value(i, j); }, PlayerStream(seed, i),
                                   [sum](std::size_t j, double y) { sum[j] += y; }) &&
          bad == end)
        bad = i;
    return bad;
  });
}

// The mean of n players' PrivUnit reports; fill(i, double* g) writes player i's vector (norm
// <= 1, rounded to the sphere as report_ball does). InputError for a norm above 1.
template <class Fill>
MeanEstimate simulate_privunit_mean(const PrivUnit& mech, std::uint64_t n, std::uint64_t seed, Fill&& fill,
                                    int threads = 0) {
  const std::size_t d = mech.dimension();
  return detail::block_mean(n, d, threads, [&, d](std::uint64_t begin, std::uint64_t end, double* sum) {
    std::vector<double> g(d), y(d);
    std::uint64_t bad = end;
    for (std::uint64_t i = begin; i < end; ++i) {
      std::fill(g.begin(), g.end(), 0.0);
      fill(i, g.data());
      double norm2 = 0;
      for (std::size_t j = 0; j < d; ++j) norm2 += g[j] * g[j];
      if (!(norm2 <= 1.0 + 2e-9) && bad == end) bad = i;
      mech.report_from_stream(g.data(), PlayerStream(seed, i), y.data());
      for (std::size_t j = 0; j < d; ++j) sum[j] += y[j];
    }
    return bad;
  });
}

// Interactive one-pass LDP-SGD with these randomisers in place of DJW's L2 mechanism (the loop
// of ldp_sgd): player t's gradient g at the current theta, divided by the bound L of its norm
// (so g / L lies in the unit ball and in [-1, 1]^p), is reported by
//   Piecewise / Hybrid: Algorithm 4 over PM / HM with the whole eps, times L;
//   PrivUnit:           PrivUnit(p, eps).report_ball, times L;
// then projected SGD with step D / (G sqrt t), G = L sqrt(max E||report / L||^2) (the norm of a
// PrivUnit report, L / m, exactly), and the averaged iterate.
enum class GradientMechanism { Piecewise, Hybrid, PrivUnit };
GradientMechanism parse_gradient_mechanism(const std::string& name);  // "pm" | "hm" | "privunit"
ErmResult ldp_sgd_mean_mechanism(const ErmProblem& problem, const Players& players, double eps,
                                 GradientMechanism mechanism, std::uint64_t seed);

}  // namespace privrace::ldp
