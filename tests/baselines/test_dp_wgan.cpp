// DP-WGAN (baselines/dp_wgan.hpp): per-example clipping, a short training run, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "privrace/baselines/dp_wgan.hpp"
#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

// A build without libtorch has no DP-WGAN module (CMakeLists.txt): the fits are skipped there,
// and the last test checks the error a fit gives instead.
#define SKIP_WITHOUT_MODULE()                                                                      \
  if (!PRIVRACE_DP_WGAN_MODULE_BUILT)                                                              \
  GTEST_SKIP() << "built without libtorch: no DP-WGAN module (PRIVRACE_WITH_TORCH=1 scripts/test.sh)"

TEST(DpWgan, ClippingBoundsEveryPerExampleGradient) {
  SKIP_WITHOUT_MODULE();
  SeededRandom rng(1);
  DoubleMatrix batch(64, 3);
  for (Eigen::Index i = 0; i < batch.size(); ++i) batch.data()[i] = rng.unit();
  DpWganOptions o;
  o.hidden = 16;
  // A clip below the typical norm (so most are clipped) and one above every norm.
  const ClippingCheck tight = dp_wgan_clipping_check(batch, o, 0.05, 2);
  ASSERT_EQ(tight.norms_after.size(), 64u);
  int clipped = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    EXPECT_LE(tight.norms_after[i], 0.05 * (1 + 1e-5)) << i;
    if (tight.norms_before[i] > 0.05) {
      ++clipped;
      EXPECT_NEAR(tight.norms_after[i], 0.05, 1e-6);
    } else {
      EXPECT_NEAR(tight.norms_after[i], tight.norms_before[i], 1e-7);
    }
  }
  EXPECT_GT(clipped, 32);
  // The batched clipped sum used in training equals the sum of one-at-a-time clipped gradients.
  EXPECT_LT(tight.batched_sum_error, 1e-5);
  const ClippingCheck loose = dp_wgan_clipping_check(batch, o, 1e6, 2);
  for (std::size_t i = 0; i < 64; ++i) EXPECT_NEAR(loose.norms_after[i], loose.norms_before[i], 1e-6);
  EXPECT_LT(loose.batched_sum_error, 1e-4);
}

TEST(DpWgan, ShortTrainingMovesTheSyntheticMeanTowardTheData) {
  SKIP_WITHOUT_MODULE();
  // A 2-D mixture on [0, 10]^2: 70% around (7, 2), 30% around (2, 8); mean (5.5, 3.8).
  SeededRandom rng(3);
  DenseMatrix data(4000, 2);
  for (Eigen::Index i = 0; i < data.rows(); ++i) {
    const bool a = rng.unit() < 0.7;
    data(i, 0) = static_cast<Real>((a ? 7.0 : 2.0) + 0.5 * sample_normal(rng));
    data(i, 1) = static_cast<Real>((a ? 2.0 : 8.0) + 0.5 * sample_normal(rng));
  }
  const Eigen::Vector2d truth = data.cast<double>().colwise().mean().transpose();
  DpWganOptions o;
  o.hidden = 32;
  o.batch = 128;
  o.generator_steps = 300;
  o.critic_steps = 5;  // 1500 DP-SGD steps at q = 128 / 4000, epsilon 5: sigma ~1.5
  o.threads = 1;
  DpWgan gen(o);
  SeededRandom noise(4);
  gen.fit(data, TableBox::uniform(2, 0, 10), {5.0, 1e-5}, noise);
  const auto rec = gen.privacy_record();
  EXPECT_LE(rec.at("accounted_epsilon").get<double>(), 5.0);
  EXPECT_GT(gen.noise_multiplier(), 0.1);
  const DoubleMatrix syn = gen.sample(4000, 5);
  EXPECT_EQ(gen.sample(4000, 5), syn);  // deterministic per seed
  // A shorter sample draws the same noise rows, but the BLAS may block a product by its row
  // count (OpenBLAS on AMD EPYC does), so the prefix agrees to rounding, not to the bit.
  EXPECT_LT((gen.sample(10, 5) - syn.topRows(10)).cwiseAbs().maxCoeff(), 1e-4);
  EXPECT_GE(syn.minCoeff(), 0.0);
  EXPECT_LE(syn.maxCoeff(), 10.0);
  const Eigen::Vector2d mean = syn.colwise().mean().transpose();
  // An untrained generator's rows sit near the box centre (5, 5): distance 1.3 from the data
  // mean. After training the synthetic mean is at most half as far.
  const double start = (Eigen::Vector2d(5, 5) - truth).norm();
  std::printf("data mean (%.2f, %.2f), synthetic (%.2f, %.2f), sigma %.3f, %.1f s\n", truth(0), truth(1), mean(0), mean(1),
              gen.noise_multiplier(), gen.training_seconds());
  EXPECT_LT((mean - truth).norm(), 0.5 * start);
}

TEST(DpWgan, BadInputIsRefusedWithTheValue) {
  SKIP_WITHOUT_MODULE();
  const DenseMatrix data = DenseMatrix::Random(1000, 2).cwiseAbs();
  DpWganOptions o;
  o.generator_steps = 2;
  o.critic_steps = 1;
  o.batch = 50;
  DpWgan gen(o);
  SeededRandom noise(1);
  const TableBox box = TableBox::uniform(2, 0, 1);
  EXPECT_NE(error_of([&] { gen.fit(data, box, {1.0, 0.0}, noise); }).find("delta 0.000000 is outside (0, 1)"), std::string::npos);
  EXPECT_NE(error_of([&] { gen.fit(data, box, {1.0, 1.0}, noise); }).find("delta 1.000000 is outside (0, 1)"), std::string::npos);
  EXPECT_NE(error_of([&] { gen.fit(data, box, {1.0, -1e-5}, noise); }).find("outside (0, 1)"), std::string::npos);
  EXPECT_NE(error_of([&] { gen.fit(data, box, {1e-9, 1e-5}, noise); }).find("too small for any noise multiplier"), std::string::npos);
  EXPECT_NE(error_of([&] { gen.sample(5, 1); }).find("before fit"), std::string::npos);
  gen.fit(data, box, {1.0, 1e-5}, noise);
  EXPECT_NE(error_of([&] { gen.sample(0, 1); }).find("synthetic size 0"), std::string::npos);
  EXPECT_NE(error_of([&] { gen.fit(data.topRows(40), box, {1.0, 1e-5}, noise); }).find("more than the batch size 50"),
            std::string::npos);
}

TEST(DpWgan, TheModuleIsLoadedOnlyWhenAGeneratorIsMadeAndAMissingOneIsAClearError) {
  SKIP_WITHOUT_MODULE();
  // The test executable links no libtorch (ctest `structure` checks with ldd); the module is
  // opened by the first DpWgan.
  DpWgan first;
  const std::string path = dp_wgan_module_path();
  EXPECT_NE(path.find("libprivrace_dp_wgan.so"), std::string::npos) << path;
  setenv("PRIVRACE_DP_WGAN_MODULE", "/nonexistent/libprivrace_dp_wgan.so", 1);
  const std::string e = error_of([] { DpWgan g; });
  unsetenv("PRIVRACE_DP_WGAN_MODULE");
  EXPECT_NE(e.find("PRIVRACE_DP_WGAN_MODULE"), std::string::npos) << e;
  EXPECT_NE(e.find("/nonexistent/libprivrace_dp_wgan.so"), std::string::npos) << e;
  DpWgan again;  // the loaded module serves again once the override is gone
  EXPECT_EQ(dp_wgan_module_path(), path);
}

TEST(DpWgan, WithoutTheModuleAFitIsAClearErrorNamingThePlacesTried) {
  if (PRIVRACE_DP_WGAN_MODULE_BUILT) GTEST_SKIP() << "this build has the DP-WGAN module (the test above loads it)";
  const std::string e = error_of([] { DpWgan g; });
  EXPECT_NE(e.find("the DP-WGAN module (libprivrace_dp_wgan.so, built with libtorch) is not available"), std::string::npos) << e;
  EXPECT_NE(e.find("not found"), std::string::npos) << e;
  setenv("PRIVRACE_DP_WGAN_MODULE", "/nonexistent/libprivrace_dp_wgan.so", 1);
  const std::string forced = error_of([] { DpWgan g; });
  unsetenv("PRIVRACE_DP_WGAN_MODULE");
  EXPECT_NE(forced.find("/nonexistent/libprivrace_dp_wgan.so"), std::string::npos) << forced;
}

}  // namespace
}  // namespace privrace::baselines
