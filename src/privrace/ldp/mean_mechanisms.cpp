#include "privrace/ldp/mean_mechanisms.hpp"

#include <boost/math/special_functions/beta.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <chrono>
#include <numbers>
#include <sstream>

#include "privrace/privacy/mechanisms.hpp"

namespace privrace::ldp {

namespace {

// Boost's double functions without the internal promotion to long double: about 3x faster and
// still accurate to a few ulps, which the sampler and the parameter search need.
using MeanBetaPolicy = boost::math::policies::policy<boost::math::policies::promote_double<false>>;

std::string show_value(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace

void check_unit_interval(double t, const char* what) {
  if (!(t >= -1.0 && t <= 1.0))
    throw InputError(std::string(what) + " = " + show_value(t) + ", expected a value in [-1, 1]");
}

void check_finite_epsilon(double eps, const char* mechanism) {
  if (!(eps > 0.0) || !std::isfinite(eps))
    throw UsageError(std::string(mechanism) + ": epsilon = " + show_value(eps) + ", expected a finite epsilon > 0");
}

// ---------------------------------------------------------------------------------------------
// Duchi et al.'s 1-D mechanism

DuchiMechanism::DuchiMechanism(double eps)
    : eps_(eps), bound_(0), bit_((check_finite_epsilon(eps, "Duchi's mechanism"), eps)), lo_(0), gap_(0) {
  bound_ = 1.0 / (bit_.p_hi() - bit_.p_lo());
  lo_ = std::ldexp(bit_.p_lo(), BitRandomizer::kFractionBits);
  gap_ = std::ldexp(bit_.p_hi(), BitRandomizer::kFractionBits) - lo_;
}

double DuchiMechanism::report(double t, RandomSource& rng) const {
  check_unit_interval(t, "Duchi's mechanism: the player's value");
  return from_word(t, rng.next());
}

// ---------------------------------------------------------------------------------------------
// Piecewise Mechanism

PiecewiseMechanism::PiecewiseMechanism(double eps) : eps_(eps) {
  check_finite_epsilon(eps, "the Piecewise Mechanism");
  const double em1 = std::expm1(0.5 * eps);  // e^{eps/2} - 1, accurate for small eps
  h_ = em1 + 1.0;
  c_ = (h_ + 1.0) / em1;
  // p = (e^eps - e^{eps/2}) / (2 e^{eps/2} + 2) = e^{eps/2} (e^{eps/2} - 1) / (2 (e^{eps/2} + 1))
  p_ = h_ * em1 / (2.0 * (h_ + 1.0));
  q_ = p_ / std::exp(eps);
  inv_p_ = 1.0 / p_;
  inv_q_ = 1.0 / q_;
}

double PiecewiseMechanism::density(double t, double y) const {
  if (!(y >= -c_ && y <= c_)) return 0.0;
  return (y >= left(t) && y <= right(t)) ? p_ : q_;
}

double PiecewiseMechanism::cdf(double t, double y) const {
  if (y <= -c_) return 0.0;
  if (y >= c_) return 1.0;
  const double l = left(t), r = right(t);
  if (y < l) return q_ * (y + c_);
  if (y <= r) return q_ * (l + c_) + p_ * (y - l);
  return q_ * (l + c_) + p_ * (r - l) + q_ * (y - r);
}

double PiecewiseMechanism::report(double t, RandomSource& rng) const {
  check_unit_interval(t, "the Piecewise Mechanism: the player's value");
  return from_uniform(t, rng.unit());
}

// ---------------------------------------------------------------------------------------------
// Hybrid Mechanism

double HybridMechanism::threshold_epsilon() {
  // eps* = ln((-5 + 2 (6353 - 405 sqrt 241)^{1/3} + 2 (6353 + 405 sqrt 241)^{1/3}) / 27), about 0.61.
  const double r = 405.0 * std::sqrt(241.0);
  return std::log((-5.0 + 2.0 * std::cbrt(6353.0 - r) + 2.0 * std::cbrt(6353.0 + r)) / 27.0);
}

HybridMechanism::HybridMechanism(double eps)
    : eps_(eps),
      alpha_(0),
      pm_((check_finite_epsilon(eps, "the Hybrid Mechanism"), eps)),
      duchi_(eps) {
  alpha_ = eps > threshold_epsilon() ? -std::expm1(-0.5 * eps) : 0.0;
}

double HybridMechanism::report(double t, RandomSource& rng) const {
  check_unit_interval(t, "the Hybrid Mechanism: the player's value");
  return rng.unit() < alpha_ ? pm_.report(t, rng) : duchi_.report(t, rng);
}

std::size_t sampled_coordinates(std::size_t d, double eps) {
  if (d == 0) throw UsageError("Algorithm 4 (sampled coordinates): dimension d = 0, expected d >= 1");
  check_finite_epsilon(eps, "Algorithm 4 (sampled coordinates)");
  const double k = std::floor(eps / 2.5);
  return std::max<std::size_t>(1, std::min<std::size_t>(d, k >= static_cast<double>(d) ? d : static_cast<std::size_t>(k)));
}

// ---------------------------------------------------------------------------------------------
// PrivUnit

void PrivUnit::set(std::size_t d, double p, double gamma) {
  d_ = d;
  p_ = p;
  gamma_ = gamma;
  if (d == 1) {  // V = +-u: the cap is {u}, half of the two points
    a_ = 0;
    q_ = 0.5;
    m_ = 2.0 * p - 1.0;
    return;
  }
  a_ = 0.5 * static_cast<double>(d - 1);
  const double tau = 0.5 * (1.0 + gamma);
  q_ = boost::math::ibetac(a_, a_, tau, MeanBetaPolicy());
  // (1 - gamma^2)^a / (2^{d-2} (d - 1) B(a, a)), in logs (d may be large).
  const double log_k = a_ * std::log1p(-gamma * gamma) - static_cast<double>(d - 2) * std::numbers::ln2 -
                       std::log(static_cast<double>(d - 1)) -
                       (2.0 * std::lgamma(a_) - std::lgamma(2.0 * a_));
  m_ = std::exp(log_k) * (p / q_ - (1.0 - p) / (1.0 - q_));
}

double PrivUnit::privacy_loss() const {
  return std::log(p_ / (1.0 - p_)) + std::log((1.0 - q_) / q_);
}

PrivUnit PrivUnit::with_split(std::size_t d, double eps0, double eps1) {
  if (d == 0) throw UsageError("PrivUnit: dimension d = 0, expected d >= 1");
  if (!(eps0 >= 0.0) || !(eps1 >= 0.0) || !std::isfinite(eps0 + eps1) || !(eps0 + eps1 > 0.0))
    throw UsageError("PrivUnit: the split eps0 = " + show_value(eps0) + ", eps1 = " + show_value(eps1) +
                     ", expected eps0, eps1 >= 0 with a finite positive sum");
  PrivUnit u;
  u.eps0_ = eps0;
  u.eps1_ = eps1;
  const double p = 1.0 / (1.0 + std::exp(-eps0));
  if (d == 1) {  // no cap to shrink: the whole budget is the sign's
    u.eps0_ = eps0 + eps1;
    u.eps1_ = 0;
    u.set(1, 1.0 / (1.0 + std::exp(-(eps0 + eps1))), 0.0);
    return u;
  }
  // The largest gamma whose cap has uniform measure q >= 1 / (1 + e^eps1), i.e. (1 - q) / q <= e^eps1.
  const double a = 0.5 * static_cast<double>(d - 1);
  const double target = 1.0 / (1.0 + std::exp(eps1));
  double tau = boost::math::ibetac_inv(a, a, target, MeanBetaPolicy());
  double gamma = std::clamp(2.0 * tau - 1.0, 0.0, std::nextafter(1.0, 0.0));
  u.set(d, p, gamma);
  // Rounding of the inverse can leave the cap a hair too small: shrink gamma until the exact
  // condition holds as computed.
  for (int i = 0; i < 200 && u.privacy_loss() > eps0 + eps1 && gamma > 0; ++i) {
    gamma = std::max(0.0, gamma - std::max(1e-15, 1e-13 * gamma) * (1 << std::min(i, 30)));
    u.set(d, p, gamma);
  }
  if (!(u.privacy_loss() <= eps0 + eps1 + 1e-12))
    throw Error("PrivUnit: could not meet the privacy condition for d = " + std::to_string(d) + ", eps0 = " +
                show_value(eps0) + ", eps1 = " + show_value(eps1));
  return u;
}

PrivUnit::PrivUnit(std::size_t d, double eps) {
  if (d == 0) throw UsageError("PrivUnit: dimension d = 0, expected d >= 1");
  check_finite_epsilon(eps, "PrivUnit");
  if (d == 1) {
    *this = with_split(1, eps, 0.0);
    return;
  }
  // Maximise m over eps0 in [0, eps] (eps1 = eps - eps0): a grid, then golden section around the
  // best grid point. m is smooth and, in every case we tabulated, unimodal in eps0.
  auto m_of = [&](double e0) { return with_split(d, e0, eps - e0).m(); };
  constexpr int kGrid = 48;
  int best = 0;
  double best_m = -1;
  for (int i = 0; i <= kGrid; ++i) {
    const double m = m_of(eps * i / kGrid);
    if (m > best_m) {
      best_m = m;
      best = i;
    }
  }
  double lo = eps * std::max(0, best - 1) / kGrid, hi = eps * std::min(kGrid, best + 1) / kGrid;
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo), f1 = m_of(x1), f2 = m_of(x2);
  for (int it = 0; it < 60 && hi - lo > 1e-9 * eps; ++it) {
    if (f1 < f2) {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = m_of(x2);
    } else {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = m_of(x1);
    }
  }
  double e0 = 0.5 * (lo + hi);
  if (m_of(e0) < best_m) e0 = eps * best / kGrid;
  *this = with_split(d, e0, eps - e0);
}

double PrivUnit::projection_variance() const {
  double w2 = 1.0;  // E[<V, u>^2]
  if (d_ > 1) {
    // E[W^2 1{W >= gamma}] = I_{1 - gamma^2}(3/2, (d-1)/2) / (2 d) for gamma >= 0, W^2 ~ Beta(1/2, (d-1)/2).
    const double dd = static_cast<double>(d_);
    const double tail = boost::math::ibetac(1.5, 0.5 * (dd - 1.0), gamma_ * gamma_, MeanBetaPolicy()) / (2.0 * dd);
    w2 = p_ * tail / q_ + (1.0 - p_) * (1.0 / dd - tail) / (1.0 - q_);
  }
  return w2 / (m_ * m_) - 1.0;
}

double PrivUnit::dot_cdf(double w, bool cap) const {
  if (d_ == 1) return cap ? (w >= 1.0 ? 1.0 : 0.0) : (w >= -1.0 ? 1.0 : 0.0);
  if (w <= -1.0) return 0.0;
  if (w >= 1.0) return 1.0;
  const double b = 0.5 * (1.0 + w);
  if (cap) {
    if (w < gamma_) return 0.0;
    return (q_ - boost::math::ibetac(a_, a_, b, MeanBetaPolicy())) / q_;
  }
  return std::min(boost::math::ibeta(a_, a_, b, MeanBetaPolicy()), 1.0 - q_) / (1.0 - q_);
}

double PrivUnit::dot_from_uniform(bool cap, double v) const {
  if (d_ == 1) return cap ? 1.0 : -1.0;
  // B = (1 + W) / 2 ~ Beta(a, a) restricted to [tau, 1] (cap) or [0, tau): inverse CDF at a
  // uniform point of the restricted mass.
  const double b = cap ? boost::math::ibetac_inv(a_, a_, q_ * (1.0 - v), MeanBetaPolicy())
                       : boost::math::ibeta_inv(a_, a_, (1.0 - q_) * v, MeanBetaPolicy());
  const double w = 2.0 * b - 1.0;
  return cap ? std::max(w, gamma_) : std::min(w, gamma_);  // rounding at tau only
}

void PrivUnit::finish(const double* u, double s, double w, double* out) const {
  double dot = 0;
  for (std::size_t j = 0; j < d_; ++j) dot += out[j] * s * u[j];
  double nz = 0;
  for (std::size_t j = 0; j < d_; ++j) {
    out[j] -= dot * s * u[j];
    nz += out[j] * out[j];
  }
  nz = std::sqrt(nz);
  const double side = nz > 0 ? std::sqrt(std::max(0.0, 1.0 - w * w)) / nz : 0.0;
  for (std::size_t j = 0; j < d_; ++j) out[j] = (w * s * u[j] + side * out[j]) / m_;
}

void PrivUnit::report(const double* u, RandomSource& rng, double* out) const {
  double n2 = 0;
  for (std::size_t j = 0; j < d_; ++j) n2 += u[j] * u[j];
  const double norm = std::sqrt(n2);
  if (!(std::abs(norm - 1.0) <= 1e-9))
    throw InputError("PrivUnit: the player's vector has norm " + show_value(norm) + ", expected a unit vector (norm 1 within 1e-9)");
  const bool cap = rng.unit() < p_;
  const double w = dot_from_uniform(cap, rng.unit());
  for (std::size_t j = 0; j < d_; ++j) out[j] = sample_normal(rng);
  finish(u, 1.0 / norm, w, out);
}

void PrivUnit::report_ball(const double* g, RandomSource& rng, double* out) const {
  double n2 = 0;
  for (std::size_t j = 0; j < d_; ++j) n2 += g[j] * g[j];
  const double norm = std::sqrt(n2);
  if (!(norm <= 1.0 + 1e-9))
    throw InputError("PrivUnit: the player's vector has norm " + show_value(norm) + ", expected a norm of at most 1");
  if (norm == 0) {
    std::vector<double> e1(d_, 0.0);
    e1[0] = 1.0;
    const double s = rng.bit() ? 1.0 : -1.0;
    const bool cap = rng.unit() < p_;
    const double w = dot_from_uniform(cap, rng.unit());
    for (std::size_t j = 0; j < d_; ++j) out[j] = sample_normal(rng);
    finish(e1.data(), s, w, out);
    return;
  }
  const double s = (rng.unit() < 0.5 * (1.0 + std::min(norm, 1.0)) ? 1.0 : -1.0) / norm;
  const bool cap = rng.unit() < p_;
  const double w = dot_from_uniform(cap, rng.unit());
  for (std::size_t j = 0; j < d_; ++j) out[j] = sample_normal(rng);
  finish(g, s, w, out);
}

void PrivUnit::report_from_stream(const double* g, const PlayerStream& st, double* out) const {
  double n2 = 0;
  for (std::size_t j = 0; j < d_; ++j) n2 += g[j] * g[j];
  const double norm = std::sqrt(n2);
  const bool cap = unit53(st.word(1)) < p_;
  const double w = dot_from_uniform(cap, unit53(st.word(2)));
  // Box-Muller: two normals from two uniforms, 1 - U in (0, 1] for the logarithm.
  for (std::size_t j = 0; j < d_; j += 2) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - unit53(st.word(3 + j))));
    const double angle = 2.0 * std::numbers::pi * unit53(st.word(4 + j));
    out[j] = r * std::cos(angle);
    if (j + 1 < d_) out[j + 1] = r * std::sin(angle);
  }
  if (norm == 0) {
    std::vector<double> e1(d_, 0.0);
    e1[0] = 1.0;
    finish(e1.data(), (st.word(0) & 1) ? 1.0 : -1.0, w, out);
    return;
  }
  const double s = (unit53(st.word(0)) < 0.5 * (1.0 + std::min(norm, 1.0)) ? 1.0 : -1.0) / norm;
  finish(g, s, w, out);
}

// ---------------------------------------------------------------------------------------------
// LDP-SGD with the mean mechanisms

GradientMechanism parse_gradient_mechanism(const std::string& name) {
  if (name == "pm") return GradientMechanism::Piecewise;
  if (name == "hm") return GradientMechanism::Hybrid;
  if (name == "privunit") return GradientMechanism::PrivUnit;
  throw UsageError("gradient mechanism '" + name + "': expected pm, hm or privunit");
}

ErmResult ldp_sgd_mean_mechanism(const ErmProblem& pr, const Players& pl, double eps, GradientMechanism mechanism,
                                 std::uint64_t seed) {
  pr.validate();
  check_finite_epsilon(eps, "LDP-SGD with a mean mechanism");
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t p = static_cast<std::size_t>(pr.p), n = pl.size();
  const double L = pr.gradient_bound() > 0 ? pr.gradient_bound() : 1.0, D = pr.diameter();
  const PiecewiseVector pm(p, eps);
  const HybridVector hm(p, eps);
  const PrivUnit pu = mechanism == GradientMechanism::PrivUnit ? PrivUnit(p, eps) : PrivUnit(1, eps);
  double G = 0;  // root-mean-square bound of the report's norm
  switch (mechanism) {
    case GradientMechanism::Piecewise: G = L * std::sqrt(pm.second_moment_bound()); break;
    case GradientMechanism::Hybrid: G = L * std::sqrt(hm.second_moment_bound()); break;
    case GradientMechanism::PrivUnit: G = L * pu.norm(); break;
  }
  std::vector<double> theta(p, std::clamp(0.0, pr.lo, pr.hi)), avg(p, 0.0), grad(p), z(p);
  SeededRandom rng(derive_seed(seed, 0x56eULL + static_cast<std::uint64_t>(mechanism)));  // one pass in player order
  for (std::size_t t = 0; t < n; ++t) {
    pr.gradient(theta.data(), pl.row(t), pl.y[t], grad.data());
    double n2 = 0;
    for (std::size_t j = 0; j < p; ++j) n2 += grad[j] * grad[j];
    // Into the unit ball (so also into [-1, 1]^p); L bounds the norm, the clip only guards rounding.
    const double shrink = 1.0 / std::max(L, std::sqrt(n2));
    for (std::size_t j = 0; j < p; ++j) grad[j] = std::clamp(grad[j] * shrink, -1.0, 1.0);
    switch (mechanism) {
      case GradientMechanism::Piecewise: pm.report(grad.data(), rng, z.data()); break;
      case GradientMechanism::Hybrid: hm.report(grad.data(), rng, z.data()); break;
      case GradientMechanism::PrivUnit: pu.report_ball(grad.data(), rng, z.data()); break;
    }
    const double step = D / (G * std::sqrt(static_cast<double>(t + 1)));
    for (std::size_t j = 0; j < p; ++j) {
      theta[j] = std::clamp(theta[j] - step * L * z[j], pr.lo, pr.hi);
      avg[j] += (theta[j] - avg[j]) / static_cast<double>(t + 1);
    }
  }
  ErmResult r;
  r.theta = avg;
  r.player_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.risk = empirical_risk(pr, pl, r.theta.data());
  return r;
}

}  // namespace privrace::ldp
