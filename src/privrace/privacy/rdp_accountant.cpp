#include "privrace/privacy/rdp_accountant.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "privrace/core/error.hpp"

namespace privrace {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)).
double log_add(double a, double b) {
  if (a == -kInf) return b;
  if (b == -kInf) return a;
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}
// log(exp(a) - exp(b)), a >= b.
double log_sub(double a, double b) {
  if (b == -kInf) return a;
  if (b >= a) return -kInf;
  return a + std::log1p(-std::exp(b - a));
}

// log(erfc(x)), accurate where erfc underflows (x > 25: the asymptotic series).
double log_erfc(double x) {
  if (x < 25) return std::log(std::erfc(x));
  const double x2 = x * x;
  return -x2 - std::log(x) - 0.5 * std::log(std::numbers::pi) + std::log1p(-0.5 / x2 + 0.75 / (x2 * x2));
}

// log A_alpha for integer alpha: a finite binomial sum.
double log_a_integer(double q, double sigma, int alpha) {
  double log_a = -kInf;
  for (int k = 0; k <= alpha; ++k) {
    const double log_binom = std::lgamma(alpha + 1.0) - std::lgamma(k + 1.0) - std::lgamma(alpha - k + 1.0);
    const double term = log_binom + (alpha - k) * std::log1p(-q) + k * std::log(q) + (static_cast<double>(k) * k - k) / (2 * sigma * sigma);
    log_a = log_add(log_a, term);
  }
  return log_a;
}

// log A_alpha for fractional alpha: Mironov, Talwar & Zhang (2019), Section 3.3. A is split at
// z0 = sigma^2 log(1/q - 1) + 1/2, the point where the two mixture components cross, and each
// side expanded in the (generalised, possibly negative) binomial series; the erfc factors are
// the Gaussian tails of each side.
double log_a_fractional(double q, double sigma, double alpha) {
  double log_a0 = -kInf, log_a1 = -kInf;
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  double coef = 1;  // C(alpha, i), by the recurrence C(alpha, i) = C(alpha, i - 1) (alpha - i + 1) / i
  for (int i = 0; i < 100000; ++i) {
    if (i > 0) coef *= (alpha - i + 1) / i;
    if (coef == 0) break;
    const double log_coef = std::log(std::abs(coef));
    const double j = alpha - i;
    const double log_t0 = log_coef + i * std::log(q) + j * std::log1p(-q);
    const double log_t1 = log_coef + j * std::log(q) + i * std::log1p(-q);
    const double log_e0 = std::log(0.5) + log_erfc((i - z0) / (std::numbers::sqrt2 * sigma));
    const double log_e1 = std::log(0.5) + log_erfc((z0 - j) / (std::numbers::sqrt2 * sigma));
    const double log_s0 = log_t0 + (static_cast<double>(i) * i - i) / (2 * sigma * sigma) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2 * sigma * sigma) + log_e1;
    if (coef > 0) {
      log_a0 = log_add(log_a0, log_s0);
      log_a1 = log_add(log_a1, log_s1);
    } else {
      log_a0 = log_sub(log_a0, log_s0);
      log_a1 = log_sub(log_a1, log_s1);
    }
    if (i > alpha && std::max(log_s0, log_s1) < -30 + std::max(log_a0, log_a1)) break;
  }
  return log_add(log_a0, log_a1);
}

void check_q_sigma(double q, double sigma) {
  if (!(q >= 0 && q <= 1)) throw UsageError("rdp accountant: sampling rate q = " + std::to_string(q) + " is outside [0, 1]");
  if (!(sigma > 0) || !std::isfinite(sigma))
    throw UsageError("rdp accountant: noise multiplier sigma = " + std::to_string(sigma) + "; expected a finite sigma > 0");
}

}  // namespace

std::vector<double> default_rdp_orders() {
  std::vector<double> orders;
  for (int x = 11; x <= 109; ++x) orders.push_back(x / 10.0);
  for (int a = 11; a <= 256; ++a) orders.push_back(a);
  // Large orders for small targets: log(1/delta) / (alpha - 1) bounds epsilon from below, so
  // epsilon = 0.01 at delta = 1e-5 needs alpha > 1150 whatever sigma is.
  for (const int a : {320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192})
    orders.push_back(a);
  return orders;
}

double subsampled_gaussian_rdp(double q, double sigma, double alpha) {
  check_q_sigma(q, sigma);
  if (!(alpha > 1)) throw UsageError("rdp accountant: order " + std::to_string(alpha) + " must exceed 1");
  if (q == 0) return 0;
  if (q == 1) return alpha / (2 * sigma * sigma);  // the plain Gaussian mechanism
  if (std::isinf(alpha)) return kInf;
  const double log_a = alpha == std::floor(alpha) && alpha < 1e6 ? log_a_integer(q, sigma, static_cast<int>(alpha))
                                                                   : log_a_fractional(q, sigma, alpha);
  return std::isfinite(log_a) ? log_a / (alpha - 1) : kInf;
}

RdpEpsilon dp_sgd_epsilon(double q, double sigma, std::size_t steps, double delta, const std::vector<double>& orders) {
  check_q_sigma(q, sigma);
  if (!(delta > 0 && delta < 1)) throw UsageError("rdp accountant: delta " + std::to_string(delta) + " is outside (0, 1)");
  RdpEpsilon best{kInf, 0};
  for (const double alpha : orders) {
    if (!(alpha > 1)) continue;
    const double rdp = static_cast<double>(steps) * subsampled_gaussian_rdp(q, sigma, alpha);
    const double eps = rdp + std::log(1 / delta) / (alpha - 1);
    if (eps < best.epsilon) best = {eps, alpha};
  }
  if (best.order == 0) throw UsageError("rdp accountant: no RDP order above 1 was given");
  return best;
}

double find_noise_multiplier(double target_epsilon, double q, std::size_t steps, double delta,
                             const NoiseMultiplierSearch& search, const std::vector<double>& orders) {
  if (!(target_epsilon > 0) || !std::isfinite(target_epsilon))
    throw UsageError("noise multiplier search: target epsilon " + std::to_string(target_epsilon) + "; expected a finite epsilon > 0");
  if (!(search.sigma_min > 0 && search.sigma_min < search.sigma_max) || !std::isfinite(search.sigma_max))
    throw UsageError("noise multiplier search: bad range [" + std::to_string(search.sigma_min) + ", " + std::to_string(search.sigma_max) + "]");
  auto eps_at = [&](double sigma) { return dp_sgd_epsilon(q, sigma, steps, delta, orders).epsilon; };
  const double at_max = eps_at(search.sigma_max);
  if (at_max > target_epsilon)
    throw UsageError("noise multiplier search: epsilon " + std::to_string(target_epsilon) +
                     " is too small for any noise multiplier in [" + std::to_string(search.sigma_min) + ", " +
                     std::to_string(search.sigma_max) + "]: even sigma = " + std::to_string(search.sigma_max) +
                     " gives epsilon " + std::to_string(at_max) + " (q = " + std::to_string(q) +
                     ", steps = " + std::to_string(steps) + ", delta = " + std::to_string(delta) + ")");
  if (eps_at(search.sigma_min) <= target_epsilon) return search.sigma_min;
  double lo = search.sigma_min, hi = search.sigma_max;  // eps(lo) > target >= eps(hi)
  for (int iter = 0; iter < 200 && hi / lo - 1 > search.relative_tolerance; ++iter) {
    const double mid = std::sqrt(lo * hi);
    (eps_at(mid) <= target_epsilon ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace privrace
