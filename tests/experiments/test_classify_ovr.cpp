// Multi-class objective perturbation (one-vs-rest, epsilon / K per class) and the nursery data
// set it is run on (integer-coded categorical attributes, 5 classes).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>
#include <algorithm>

#include "privrace/baselines/objective_perturbation.hpp"
#include "privrace/core/error.hpp"
#include "data/dataset.hpp"

namespace fs = std::filesystem;

namespace privrace {
namespace {

// n rows of norm <= 1 in d dimensions, K classes (labels i mod K).
void toy(std::size_t n, std::size_t d, std::size_t k, DoubleMatrix& x, std::vector<int>& y) {
  SeededRandom rng(4);
  x.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  y.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < d; ++j) x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rng.unit() - 0.5;
    x.row(static_cast<Eigen::Index>(i)) /= std::sqrt(static_cast<double>(d));
    y[i] = static_cast<int>(i % k);
  }
}

TEST(OneVsRest, SplitsEpsilonAcrossClassesAndNoiseMatchesItsScale) {
  DoubleMatrix x;
  std::vector<int> y;
  toy(200, 3, 5, x, y);
  const double eps = 2.0, lambda = 0.1;
  // Each class gets eps / K = 0.4, and Theorem 9's correction is applied to that share:
  // eps' = 0.4 - log(1 + 2c/(n lambda) + c^2/(n lambda)^2), c = 1/4.
  const double nl = 200 * lambda;
  const double expected_prime = eps / 5 - std::log(1 + 0.5 / nl + 0.0625 / (nl * nl));
  double norm_sum = 0;
  std::size_t fits = 0;
  for (std::uint64_t s = 0; s < 300; ++s) {
    SeededRandom rng(derive_seed(77, s));
    const auto res = objective_perturbation_one_vs_rest(x, y, 5, eps, lambda, rng);
    ASSERT_EQ(res.fits.size(), 5u);
    EXPECT_DOUBLE_EQ(res.epsilon_per_class, eps / 5);
    for (const auto& f : res.fits) {
      EXPECT_NEAR(f.epsilon_prime, expected_prime, 1e-12);
      norm_sum += f.noise_norm;
      ++fits;
    }
  }
  // ||b|| ~ Gamma(d, 2 / eps'): mean 2 d / eps'; 1500 draws, relative sd of the mean 1/sqrt(3 * 1500).
  const double mean = norm_sum / static_cast<double>(fits), want = 2 * 3 / expected_prime;
  EXPECT_NEAR(mean / want, 1.0, 5 / std::sqrt(3.0 * 1500));
  // With the whole epsilon instead the scale would be 5x smaller: far outside the band.
  EXPECT_GT(mean, 3 * (2 * 3 / (eps - std::log(1 + 0.5 / nl + 0.0625 / (nl * nl)))));
}

TEST(OneVsRest, NonPrivateFitSeparatesClassesAndBadInputIsRefused) {
  DoubleMatrix x(4, 2);
  x << 0.5, 0, -0.5, 0, 0, 0.5, 0, -0.5;
  const std::vector<int> y = {0, 1, 2, 0};
  SeededRandom rng(1);
  const auto res = objective_perturbation_one_vs_rest(x, y, 3, std::numeric_limits<double>::infinity(), 1e-3, rng);
  EXPECT_TRUE(std::isinf(res.epsilon_per_class));
  const Eigen::MatrixXd m = x * res.weights();
  Eigen::Index best = 0;
  m.row(1).maxCoeff(&best);
  EXPECT_EQ(best, 1);
  m.row(2).maxCoeff(&best);
  EXPECT_EQ(best, 2);
  EXPECT_THROW(objective_perturbation_one_vs_rest(x, {0, 1, 3, 0}, 3, 1.0, 0.1, rng), UsageError);  // label 3 of 3 classes
  EXPECT_THROW(objective_perturbation_one_vs_rest(x, {0, 0, 0, 0}, 1, 1.0, 0.1, rng), UsageError);  // one class
  EXPECT_THROW(objective_perturbation_one_vs_rest(x, {0, 1}, 3, 1.0, 0.1, rng), UsageError);        // sizes differ
}

DataSearch repo_search() {
  DataSearch s;
  s.repo_root = PRIVRACE_SOURCE_DIR;
  s.allow_stand_in = false;
  return s;
}

TEST(Nursery, LoaderYields12960RowsAnd5Classes) {
  const auto reg = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  LoadedDataset d;
  try {
    d = load_dataset(reg, "nursery", Preprocessing::from_json(reg.entry("nursery").at("preprocessing")), repo_search());
  } catch (const InputError& e) {
    GTEST_SKIP() << "nursery data not present: " << e.what();
  }
  EXPECT_EQ(d.x.rows(), 12960);
  EXPECT_EQ(d.x.cols(), 8);
  const std::set<double> classes(d.y.begin(), d.y.end());
  EXPECT_EQ(classes.size(), 5u);
  EXPECT_EQ(*classes.begin(), 0.0);
  EXPECT_EQ(*classes.rbegin(), 4.0);
  EXPECT_EQ(std::count(d.y.begin(), d.y.end(), 1.0), 2);  // 'recommend' (second level of the schema): 2 rows
  EXPECT_GE(d.x.minCoeff(), 0.0f);
  EXPECT_LE(d.x.maxCoeff(), 1.0f);
}

TEST(Nursery, LevelOutsideTheSchemaIsRefusedNamingTheRow) {
  // Levels are coded from the registry's public schema, not from the rows seen, so a schema
  // level absent from the training rows still has its code; a level outside the schema is an
  // error naming the file, the row and the value.
  const auto reg = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  const fs::path dir = fs::temp_directory_path() / ("privrace-nursery-" + std::to_string(::getpid()));
  fs::create_directories(dir / "nursery");
  {
    std::ofstream out(dir / "nursery" / "nursery.data");
    out << "usual,proper,complete,1,convenient,convenient,nonprob,recommended,recommend\n";
    out << "usual,proper,complete,1,convenient,convenient,nonprob,priority,priority\n";
    out << "usual,proper,complete,1,castle,convenient,nonprob,priority,priority\n";
  }
  DataSearch s;
  s.data_dir = dir.string();
  s.allow_stand_in = false;
  s.verify_checksums = false;
  std::string msg;
  try {
    load_dataset(reg, "nursery", Preprocessing::from_json(reg.entry("nursery").at("preprocessing")), s);
  } catch (const InputError& e) {
    msg = e.what();
  }
  fs::remove_all(dir);
  EXPECT_NE(msg.find("castle"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3"), std::string::npos) << msg;
}

}  // namespace
}  // namespace privrace
