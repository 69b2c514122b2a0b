// RDP accountant of the Poisson-subsampled Gaussian mechanism (privacy/rdp_accountant.hpp)
// against published values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/privacy/rdp_accountant.hpp"

namespace privrace {
namespace {

std::vector<double> integer_orders(int lo, int hi) {
  std::vector<double> o;
  for (int a = lo; a <= hi; ++a) o.push_back(a);
  return o;
}

TEST(RdpAccountant, AbadiSettingMatchesThePublishedValue) {
  // Abadi et al. 2016 (q = 0.01, sigma = 4, 10^4 steps, delta = 1e-5). Reference: TensorFlow
  // Privacy, tensorflow_privacy/privacy/analysis/rdp_accountant_test.py, test_get_privacy_spent:
  // compute_rdp(0.01, 4, 10000, orders = 2..32) and get_privacy_spent(target_delta = 1e-5)
  // give epsilon = 1.258575 at order 20.
  const RdpEpsilon e = dp_sgd_epsilon(0.01, 4.0, 10000, 1e-5, integer_orders(2, 32));
  EXPECT_NEAR(e.epsilon, 1.258575, 5e-6);
  EXPECT_EQ(e.order, 20);
  // To 2 significant digits with the default (finer, fractional) orders: 1.3. More orders can
  // only lower it.
  const RdpEpsilon d = dp_sgd_epsilon(0.01, 4.0, 10000, 1e-5);
  EXPECT_LE(d.epsilon, e.epsilon + 1e-12);
  EXPECT_NEAR(d.epsilon, 1.26, 0.01);
}

TEST(RdpAccountant, FractionalOrdersMatchThePublishedValues) {
  // Same file, test_compute_rdp: compute_rdp(0.01, 2.5, 50, [1.5, 2.5, 5, 50, 100]) =
  // [0.00065, 0.001085, 0.00218075, 0.023846, 167.416307] (5 decimal places).
  const double orders[] = {1.5, 2.5, 5, 50, 100};
  const double expected[] = {0.00065, 0.001085, 0.00218075, 0.023846, 167.416307};
  for (int i = 0; i < 5; ++i)
    EXPECT_NEAR(50 * subsampled_gaussian_rdp(0.01, 2.5, orders[i]), expected[i], 1e-5) << "order " << orders[i];
  // The fractional series at an integer order agrees with the binomial sum.
  // (alpha = 3 through the series: perturb by 1e-9 to force the fractional path.)
  EXPECT_NEAR(subsampled_gaussian_rdp(0.05, 1.3, 3.0 + 1e-9), subsampled_gaussian_rdp(0.05, 1.3, 3.0), 1e-7);
  // q = 1 is the plain Gaussian mechanism: alpha / (2 sigma^2).
  EXPECT_DOUBLE_EQ(subsampled_gaussian_rdp(1.0, 2.0, 4.0), 0.5);
}

TEST(RdpAccountant, EpsilonIsMonotoneInStepsAndSigma) {
  double prev = 0;
  for (const std::size_t steps : {1, 10, 100, 1000, 10000, 100000}) {
    const double e = dp_sgd_epsilon(0.01, 1.5, steps, 1e-5).epsilon;
    EXPECT_GT(e, prev) << steps;
    prev = e;
  }
  prev = std::numeric_limits<double>::infinity();
  for (const double sigma : {0.6, 0.8, 1.0, 1.5, 2.0, 4.0, 8.0, 16.0}) {
    const double e = dp_sgd_epsilon(0.01, sigma, 1000, 1e-5).epsilon;
    EXPECT_LT(e, prev) << sigma;
    prev = e;
  }
}

TEST(RdpAccountant, NoiseMultiplierSearchHitsTheTargetOrSaysItCannot) {
  const double sigma = find_noise_multiplier(1.0, 0.01, 5000, 1e-5);
  EXPECT_LE(dp_sgd_epsilon(0.01, sigma, 5000, 1e-5).epsilon, 1.0);
  EXPECT_GT(dp_sgd_epsilon(0.01, sigma * (1 - 1e-3), 5000, 1e-5).epsilon, 1.0);  // the smallest, to the tolerance
  // The Abadi setting inverted: epsilon 1.258575 needs sigma ~ 4 (over orders 2..32).
  const auto o = integer_orders(2, 32);
  EXPECT_NEAR(find_noise_multiplier(1.258575, 0.01, 10000, 1e-5, {}, o), 4.0, 1e-3);
  try {
    find_noise_multiplier(1e-6, 0.5, 100000, 1e-5, {0.1, 50.0});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("too small for any noise multiplier in [0.100000, 50.000000]"), std::string::npos) << m;
  }
  EXPECT_THROW(dp_sgd_epsilon(0.01, 1.0, 10, 0.0), UsageError);
  EXPECT_THROW(dp_sgd_epsilon(0.01, 1.0, 10, 1.0), UsageError);
  EXPECT_THROW(dp_sgd_epsilon(1.5, 1.0, 10, 1e-5), UsageError);
  EXPECT_THROW(dp_sgd_epsilon(0.01, 0.0, 10, 1e-5), UsageError);
}

}  // namespace
}  // namespace privrace
