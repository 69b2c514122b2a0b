// Figure 7 as the paper ran it, and substitute-data labels: the PCA preprocessing (against a
// direct Eigen SVD), the private data-informed KME points (budget split, noise scale and
// distribution), the Bernstein refusal's time and memory estimates, and records of a
// substitute data set carrying its note. Everything is seeded and runs in a few seconds.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <Eigen/SVD>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiment.hpp"
#include "privrace/baselines/bernstein.hpp"
#include "privrace/baselines/kme.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "data/dataset.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;
using nlohmann::json;

namespace {

using privrace::testing::TempDir;
using privrace::testing::write;

// n rows in d columns with a few strong directions of unequal variance (seeded).
DenseMatrix correlated(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom rng(seed);
  Eigen::MatrixXd mix(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < mix.size(); ++i) mix.data()[i] = sample_normal(rng);
  for (Eigen::Index j = 0; j < mix.cols(); ++j) mix.row(j) *= 3.0 / (1.0 + static_cast<double>(j));
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    Eigen::VectorXd z(static_cast<Eigen::Index>(d));
    for (Eigen::Index j = 0; j < z.size(); ++j) z(j) = sample_normal(rng);
    x.row(i) = (mix.transpose() * z).cast<Real>().transpose();
    x.row(i).array() += 5.0f;
  }
  return x;
}

// ---------------------------------------------------------------- PCA
TEST(Pca, AgreesWithADirectSvdOfTheCentredTable) {
  const DenseMatrix x = correlated(300, 6, 1);
  const PcaFit fit = fit_pca(x, 3);
  ASSERT_EQ(fit.basis.rows(), 6);
  ASSERT_EQ(fit.basis.cols(), 3);
  // Orthonormal basis, variances in decreasing order.
  EXPECT_LT((fit.basis.transpose() * fit.basis - Eigen::MatrixXd::Identity(3, 3)).cwiseAbs().maxCoeff(), 1e-10);
  EXPECT_GT(fit.variance(0), fit.variance(1));
  EXPECT_GT(fit.variance(1), fit.variance(2));
  // Direct SVD: centred = U S V^T; the principal directions are V's columns, variance s^2/(n-1).
  const Eigen::MatrixXd xd = x.cast<double>();
  const Eigen::MatrixXd centred = xd.rowwise() - xd.colwise().mean();
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(centred, Eigen::ComputeThinV);
  for (int j = 0; j < 3; ++j) {
    const double s = svd.singularValues()(j);
    EXPECT_NEAR(fit.variance(j), s * s / 299.0, 1e-6 * fit.variance(0)) << j;
    EXPECT_NEAR(std::abs(fit.basis.col(j).dot(svd.matrixV().col(j))), 1.0, 1e-6) << j;  // same up to sign
  }
  EXPECT_NEAR(fit.total_variance, svd.singularValues().squaredNorm() / 299.0, 1e-6 * fit.total_variance);
  // The projection is (x - mean) V_k.
  const DenseMatrix p = fit.project(x);
  ASSERT_EQ(p.cols(), 3);
  EXPECT_NEAR(static_cast<double>(p(7, 1)), (centred.row(7) * fit.basis.col(1))(0), 1e-4);
  EXPECT_THROW(fit_pca(x, 0), UsageError);
  EXPECT_THROW(fit_pca(x, 7), UsageError);
}

// A throw-away repository: datasets/registry.json with one real 5-column CSV table.
struct Repo {
  TempDir dir;
  Repo() {
    unsetenv("PRIVRACE_DATA");
    const DenseMatrix x = correlated(600, 5, 2);
    std::ostringstream csv;
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      for (Eigen::Index j = 0; j < x.cols(); ++j) csv << (j ? "," : "") << x(i, j);
      csv << "\n";
    }
    write(root() / "datasets" / "tab" / "tab.csv", csv.str());
    const json reg = {
        {"schema", 1},
        {"datasets",
         {{"tab",
           {{"kind", "table"}, {"source_url", "test"}, {"format", "csv"}, {"header", false}, {"rows", 600}, {"columns", 5},
            {"substitute", {{"label", "tab v1, not v2"}, {"detail", "version 1 of the table; the paper used version 2"}}},
            {"files", {{{"path", "tab/tab.csv"}, {"sha256", nullptr}, {"sha256_note", "test"}}}},
            {"features", {1, 2, 3, 4, 5}}, {"label", nullptr}, {"preprocessing", {{"scale", "unit_cube"}}}}}}}};
    write(root() / "datasets" / "registry.json", reg.dump());
  }
  fs::path root() const { return dir.path / "repo"; }
  DatasetRegistry datasets() const { return DatasetRegistry::load_from_repo(root().string()); }
};

TEST(Pca, LoaderReducesScalesAndRecordsTheBasis) {
  Repo repo;
  const auto reg = repo.datasets();
  Preprocessing p = Preprocessing::from_json(json::parse(R"({"scale": "unit_cube", "pca": {"components": 2}})"));
  DataSearch search;
  search.repo_root = repo.root().string();
  const LoadedDataset d = load_dataset(reg, "tab", p, search);
  ASSERT_FALSE(d.stand_in);
  ASSERT_EQ(d.x.cols(), 2);
  ASSERT_EQ(d.x.rows(), 600);
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"pc1", "pc2"}));
  // pca.scale unit_cube: every component spans exactly [0, 1].
  for (Eigen::Index j = 0; j < 2; ++j) {
    EXPECT_FLOAT_EQ(d.x.col(j).minCoeff(), 0.0f);
    EXPECT_FLOAT_EQ(d.x.col(j).maxCoeff(), 1.0f);
  }
  const json& pca = d.preprocessing.at("pca");
  EXPECT_EQ(pca.at("components"), 2);
  EXPECT_EQ(pca.at("input_dim"), 5);
  EXPECT_EQ(pca.at("private"), false);
  EXPECT_EQ(pca.at("basis").size(), 2u);
  const auto ratio = pca.at("explained_variance_ratio").get<std::vector<double>>();
  EXPECT_GE(ratio[0], ratio[1]);
  EXPECT_LE(ratio[0] + ratio[1], 1.0 + 1e-12);
  // The same projection as fitting the unit-cube-scaled table directly.
  Preprocessing plain = Preprocessing::from_json(json::parse(R"({"scale": "unit_cube"})"));
  const LoadedDataset full = load_dataset(reg, "tab", plain, search);
  const PcaFit fit = fit_pca(full.x, 2);
  const DenseMatrix proj = fit.project(full.x);
  const double lo = proj.col(0).minCoeff(), hi = proj.col(0).maxCoeff();
  EXPECT_NEAR(static_cast<double>(d.x(11, 0)), (static_cast<double>(proj(11, 0)) - lo) / (hi - lo), 1e-5);
  // Bad declarations are usage errors naming the key.
  EXPECT_THROW(Preprocessing::from_json(json::parse(R"({"pca": {"components": 0}})")), UsageError);
  EXPECT_THROW(Preprocessing::from_json(json::parse(R"({"pca": {"components": 2, "whiten": true}})")), UsageError);
  EXPECT_THROW(Preprocessing::from_json(json::parse(R"({"pca": {"scale": "none"}})")), UsageError);
  p.pca_components = 6;
  EXPECT_THROW(load_dataset(reg, "tab", p, search), UsageError);
}

// ---------------------------------------------------------------- KME, private data-informed points
TEST(KmePrivatePoints, SummaryIsLaplaceAtSensitivityTwoDOverEpsilon) {
  // 1000 rows in [0,1]^2; the released mean's error times N must be Lap(2d / eps).
  SeededRandom data_rng(3);
  DenseMatrix x(1000, 2);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<Real>(0.3 + 0.4 * data_rng.unit());
  const baselines::Domain dom{0, 1};
  const double eps = 1.0, b = 2.0 * 2 / eps;
  double true_mean = 0;
  for (Eigen::Index i = 0; i < x.rows(); ++i) true_mean += x(i, 0);
  SeededRandom rng(4);
  double abs_sum = 0, sq_sum = 0;
  const int reps = 20000;
  for (int r = 0; r < reps; ++r) {
    const auto m = baselines::private_moments(x, dom, eps, rng);
    EXPECT_DOUBLE_EQ(m.noise_scale, b);
    const double err = m.mean[0] * 1000.0 - true_mean;  // no clamping: the mean stays near 0.5
    abs_sum += std::abs(err);
    sq_sum += err * err;
  }
  EXPECT_NEAR(abs_sum / reps / b, 1.0, 0.03);            // E|Lap(b)| = b
  EXPECT_NEAR(sq_sum / reps / (2 * b * b), 1.0, 0.06);   // Var Lap(b) = 2 b^2
  // The sd follows the data (uniform on [0.3, 0.7]: sd 0.4 / sqrt 12) at a large epsilon.
  const auto sharp = baselines::private_moments(x, dom, 1e4, rng);
  EXPECT_NEAR(sharp.sd[1], 0.4 / std::sqrt(12.0), 0.01);
  EXPECT_THROW(baselines::private_moments(x, dom, 0.0, rng), UsageError);
  // Points drawn from the summary lie in the domain and are reproducible from their seed.
  const DoubleMatrix z1 = baselines::moment_points(sharp, 500, dom, 9), z2 = baselines::moment_points(sharp, 500, dom, 9);
  EXPECT_EQ(z1, z2);
  EXPECT_GE(z1.minCoeff(), 0.0);
  EXPECT_LE(z1.maxCoeff(), 1.0);
  EXPECT_NEAR(z1.col(0).mean(), sharp.mean[0], 0.02);
}

TEST(KmeRankCap, OnlyMemoryBoundsTheRankByDefault) {
  const double gib2 = 2.0 * (1ULL << 30);
  EXPECT_EQ(baselines::kme_rank_cap(5000, 0, gib2), 5000u);       // the full span fits
  EXPECT_EQ(baselines::kme_rank_cap(100000, 0, gib2), 2684u);     // 2 GiB / (8 x 100k)
  EXPECT_EQ(baselines::kme_rank_cap(100000, 1500, gib2), 1500u);  // an explicit cap
  EXPECT_EQ(baselines::kme_rank_cap(10, 0, 1.0), 1u);             // never below 1
}

// ---------------------------------------------------------------- Bernstein refusal
TEST(BernsteinRefusal, CarriesTimeAndMemoryEstimates) {
  DenseMatrix x(1000, 8);
  x.setConstant(0.5f);
  KernelSpec k;
  k.kernel = Kernel::L2;
  k.bandwidth = 0.5;
  const double lattice = std::pow(21.0, 8);
  try {
    baselines::BernsteinRelease r(x, k, baselines::Domain{0, 1}, 20, 3600.0, 1e8);
    FAIL() << "degree 20 in 8 dimensions must be refused";
  } catch (const baselines::InfeasibleError& e) {
    EXPECT_DOUBLE_EQ(e.operations, lattice * 1000);
    EXPECT_DOUBLE_EQ(e.estimated_seconds, lattice * 1000 / 1e8);
    EXPECT_DOUBLE_EQ(e.estimated_bytes, lattice * 16);  // the exact values and one private copy
    EXPECT_NE(std::string(e.what()).find("GiB"), std::string::npos) << e.what();
  }
  // Memory alone: degree 4 is fast (5^8 x 1000 / 1e8 = 3.9 s) but refused under a 1 MB limit.
  try {
    baselines::BernsteinRelease r(x, k, baselines::Domain{0, 1}, 4, 3600.0, 1e8, 1e6);
    FAIL() << "expected a memory refusal";
  } catch (const baselines::InfeasibleError& e) {
    EXPECT_DOUBLE_EQ(e.estimated_bytes, std::pow(5.0, 8) * 16);
    EXPECT_LT(e.estimated_seconds, 3600);
    EXPECT_NE(std::string(e.what()).find("max_memory_gb"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- records
std::vector<json> read_records(const fs::path& p) {
  std::vector<json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

TEST(Fig7Records, SubstituteNoteRefusalEstimatesAndKmeBudgetSplit) {
  Repo repo;
  const json cfg = json::parse(R"({
    "name": "t_fig7",
    "task": {"type": "kde", "kernel": "l2", "bandwidth": 0.5, "queries": 100},
    "dataset": {"name": "tab", "preprocessing": {"scale": "unit_cube", "pca": {"components": 3}}},
    "metric": "mre",
    "methods": [
      {"name": "bernstein", "label": "Bernstein", "grid": {"degree": [2, 20]}, "fixed": {"max_seconds": 60, "max_memory_gb": 0.0001}},
      {"name": "kme", "label": "KME private", "fixed": {"points": 300, "synthetic": "private_normal",
                                                         "summary_share": 0.25, "max_rank": 200}}
    ],
    "epsilons": [2.0],
    "repetitions": 1,
    "seed": 5,
    "threads": 1
  })");
  const fs::path cfg_path = repo.dir.path / "cfg.json";
  write(cfg_path, cfg.dump());
  experiments::RunOptions o;
  o.config_path = cfg_path.string();
  o.repo_root = repo.root().string();
  o.out_dir = (repo.dir.path / "results").string();
  o.threads = 1;
  o.print_summary = false;
  const auto report = experiments::run_experiment(o);
  const auto records = read_records(report.results_path);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    ASSERT_TRUE(r.at("data").contains("substitute")) << r.dump();
    EXPECT_EQ(r.at("data").at("substitute").at("label"), "tab v1, not v2");
    EXPECT_FALSE(r.at("stand_in").get<bool>());
    EXPECT_EQ(r.at("data").at("dim"), 3);
    EXPECT_EQ(r.at("data").at("pca").at("private"), false);
  }
  const double n = records[0].at("data").at("train_rows").get<double>();
  for (const auto& r : records) {
    const json& det = r.at("details");
    if (r.at("method") == "bernstein" && r.at("params").at("degree") == 20) {
      EXPECT_TRUE(det.contains("refused"));
      EXPECT_DOUBLE_EQ(det.at("estimated_seconds").get<double>(), std::pow(21.0, 3) * n / 1e8);
      EXPECT_DOUBLE_EQ(det.at("estimated_bytes").get<double>(), std::pow(21.0, 3) * 16);
      EXPECT_TRUE(r.at("metrics").at("mre").is_null());  // NaN: nothing was released
    } else if (r.at("method") == "bernstein") {
      EXPECT_FALSE(det.contains("refused"));
      EXPECT_DOUBLE_EQ(det.at("estimated_bytes").get<double>(), 27.0 * 16);
    } else {
      const json& split = det.at("budget_split");
      EXPECT_DOUBLE_EQ(split.at("summary_epsilon").get<double>(), 0.5);
      EXPECT_DOUBLE_EQ(split.at("weights_epsilon").get<double>(), 1.5);
      EXPECT_DOUBLE_EQ(split.at("summary_epsilon").get<double>() + split.at("weights_epsilon").get<double>(), 2.0);
      EXPECT_DOUBLE_EQ(det.at("summary_noise_scale").get<double>(), 2.0 * 3 / 0.5);
      EXPECT_DOUBLE_EQ(det.at("noise_sigma").get<double>(), baselines::kme_sigma(1.5, 0.01, 2.0 / n));
    }
  }
}

}  // namespace
