// exp_shifted (core/vector_math.hpp): libmvec's vector exp where the values are inference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "privrace/core/vector_math.hpp"

namespace privrace {
namespace {

// Distance in units in the last place between two finite positive doubles (or zeros).
double ulps(double a, double b) {
  if (a == b) return 0;
  const double unit = std::nextafter(std::max(a, b), 0.0);
  return std::fabs(a - b) / (std::max(a, b) - unit);
}

TEST(ExpShifted, WithinFourUlpOfExpOverTheRangeOfAModelsTables) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-740.0, 0.0);  // exp(x - max) of a table: x - max <= 0
  std::vector<double> x(100003), y;
  for (double& v : x) v = u(gen);
  y = x;
  exp_shifted(y.data(), y.size(), 0.0);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(x[i]);
    if (want < std::numeric_limits<double>::min()) {
      EXPECT_LE(std::fabs(y[i] - want), 4 * std::numeric_limits<double>::denorm_min()) << x[i];  // subnormal: absolute
      continue;
    }
    worst = std::max(worst, ulps(y[i], want));
  }
  EXPECT_LE(worst, 4.0);
}

TEST(ExpShifted, SubtractsTheShiftFirstAndKeepsTheEdges) {
  std::vector<double> x = {5.0, 3.0, -std::numeric_limits<double>::infinity(), 5.0 - 800.0, 4.0};
  exp_shifted(x.data(), x.size(), 5.0);
  EXPECT_EQ(x[0], 1.0);  // the table's largest entry: exactly 1
  EXPECT_NEAR(x[1], std::exp(-2.0), 4e-16 * std::exp(-2.0));
  EXPECT_EQ(x[2], 0.0);  // a structural zero (-inf potential) stays 0
  EXPECT_EQ(x[3], 0.0);  // below the smallest subnormal
  EXPECT_NEAR(x[4], std::exp(-1.0), 4e-16 * std::exp(-1.0));
}

TEST(ExpShifted, AValueDoesNotDependOnItsPlaceOrTheArraysLength) {
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-50.0, 0.0);
  std::vector<double> base(64);
  for (double& v : base) v = u(gen);
  std::vector<double> whole = base;
  exp_shifted(whole.data(), whole.size(), 0.0);
  // Every offset and length: the last one to three values take the padded path.
  for (std::size_t first = 0; first < 8; ++first)
    for (std::size_t n = 0; first + n <= base.size(); n += 1 + n / 4) {
      std::vector<double> part(base.begin() + static_cast<std::ptrdiff_t>(first),
                               base.begin() + static_cast<std::ptrdiff_t>(first + n));
      exp_shifted(part.data(), part.size(), 0.0);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(part[i], whole[first + i]) << "offset " << first << " length " << n;
    }
  // The shift is subtracted as x - shift: a shifted array gives the same bits as its difference.
  std::vector<double> shifted(base.size());
  for (std::size_t i = 0; i < base.size(); ++i) shifted[i] = base[i] + 3.0;
  std::vector<double> diff(base.size());
  for (std::size_t i = 0; i < base.size(); ++i) diff[i] = shifted[i] - 3.0;
  exp_shifted(shifted.data(), shifted.size(), 3.0);
  exp_shifted(diff.data(), diff.size(), 0.0);
  EXPECT_EQ(shifted, diff);
}

}  // namespace
}  // namespace privrace

namespace privrace {
namespace {

TEST(SoftplusSigmoid, AgreesWithTheScalarFormulasToAFewUlp) {
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(-40.0, 40.0);
  std::vector<double> x(10007), loss(x.size()), sig(x.size());
  for (double& v : x) v = u(gen);
  x[0] = 0.0;
  softplus_sigmoid(x.data(), x.size(), loss.data(), sig.data());
  double worst_loss = 0, worst_sig = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double z = x[i];
    const double want_loss = z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
    const double want_sig = 1.0 / (1.0 + std::exp(-z));
    worst_loss = std::max(worst_loss, ulps(loss[i], want_loss));
    worst_sig = std::max(worst_sig, ulps(sig[i], want_sig));
  }
  EXPECT_LE(worst_loss, 8.0);
  EXPECT_LE(worst_sig, 8.0);
  EXPECT_EQ(sig[0], 0.5);
  EXPECT_NEAR(loss[0], std::log(2.0), 1e-15);
}

TEST(SoftplusSigmoid, NeitherOverflowsAtTheEnds) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {800.0, -800.0, inf, -inf, 1e308, -1e308, 710.0};
  std::vector<double> loss(x.size()), sig(x.size());
  softplus_sigmoid(x.data(), x.size(), loss.data(), sig.data());
  EXPECT_EQ(loss[0], 800.0);
  EXPECT_EQ(sig[0], 1.0);
  EXPECT_EQ(loss[1], 0.0);  // log1p(e^-800) underflows to 0
  EXPECT_EQ(sig[1], 0.0);
  EXPECT_EQ(loss[2], inf);
  EXPECT_EQ(sig[2], 1.0);
  EXPECT_EQ(loss[3], 0.0);
  EXPECT_EQ(sig[3], 0.0);
  EXPECT_EQ(loss[4], 1e308);
  EXPECT_EQ(loss[5], 0.0);
  EXPECT_EQ(loss[6], 710.0);  // e^710 overflows; the formula never forms it
  // Without the sigmoid's array the losses are the same.
  std::vector<double> only(x.size());
  softplus_sigmoid(x.data(), x.size(), only.data(), nullptr);
  EXPECT_EQ(only, loss);
}

TEST(SoftplusSigmoid, AValueDoesNotDependOnItsPlaceOrTheArraysLength) {
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> u(-30.0, 30.0);
  std::vector<double> base(40), whole_l(40), whole_s(40);
  for (double& v : base) v = u(gen);
  softplus_sigmoid(base.data(), base.size(), whole_l.data(), whole_s.data());
  for (std::size_t first = 0; first < 5; ++first)
    for (std::size_t n = 0; first + n <= base.size(); ++n) {
      std::vector<double> l(n), s(n);
      softplus_sigmoid(base.data() + first, n, l.data(), s.data());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(l[i], whole_l[first + i]) << "offset " << first << " length " << n;
        ASSERT_EQ(s[i], whole_s[first + i]) << "offset " << first << " length " << n;
      }
    }
}

}  // namespace
}  // namespace privrace
