// M2M fit cost: the 10 means of Random10 (27,000 uniform rows in [0,1]^10) from a private sketch,
// n_s = 10^5 synthetic points (the paper's setting). BM_M2mFit times the whole fit (synthetic
// points, P^T P, factorisation, solve, weights) plus the 10 weighted means, per map; the
// counters give each stage's seconds and the solve's memory (m x m doubles + one chunk:
// independent of n_s; P, n_s x m, is never formed). BM_M2mFitSamples varies n_s at RACE
// R = W = 80 to show the memory does not grow with it. BM_EigenLlt is the baseline: Eigen's
// single-threaded LLT of the same m x m matrix as the blocked parallel Cholesky.
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>

#include "privrace/core/random.hpp"
#include "privrace/tasks/m2m.hpp"

using namespace privrace;

namespace {
DenseMatrix random10() {
  SeededRandom rng(1);
  DenseMatrix x(27000, 10);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<Real>(rng.unit());
  return x;
}

FeatureSketchRelease release_of(const std::string& kind) {
  static const DenseMatrix data = random10();
  FeatureSketchSpec spec;
  spec.kind = kind;
  spec.features = 200;
  spec.sigma = 1.0;
  spec.rows = 80;
  spec.width = 80;
  spec.bandwidth = 0.1;
  spec.bins = 100;
  spec.lo = {0.0};
  spec.hi = {1.0};
  spec.seed = 7;
  const auto sums = build_feature_sums(data, spec);
  FeatureSketchPrivacy privacy;
  privacy.epsilon = 1.0;
  return release_feature_sketch(*sums, privacy, NoiseSource{true, 3});
}

void fit_means(benchmark::State& state, const FeatureSketchRelease& rel, std::size_t samples) {
  M2mOptions opt;
  opt.domain = BoxDomain::uniform(10, 0.0, 1.0);
  opt.samples = samples;
  nlohmann::json last;
  std::size_t bytes = 0;
  for (auto _ : state) {
    const M2mModel model(rel, opt);
    const Eigen::VectorXd means = weighted_means(model.synthetic().cast<double>(), model.average_weights());
    benchmark::DoNotOptimize(means.data());
    last = model.describe();
    bytes = model.solve_bytes();
  }
  state.counters["m"] = static_cast<double>(rel.map->size());
  state.counters["gram_s"] = last.at("gram_seconds").get<double>();
  state.counters["factor_s"] = last.at("factor_seconds").get<double>();
  state.counters["weights_s"] = last.at("weight_seconds").get<double>();
  state.counters["solve_MiB"] = static_cast<double>(bytes) / (1 << 20);
}
}  // namespace

// range(0): 0 RFF (m = 200), 1 RACE (R = W = 80, m = 6400), 2 HIST (100 bins, m = 1000).
static void BM_M2mFit(benchmark::State& state) {
  static const char* kinds[] = {"rff", "race", "hist"};
  const FeatureSketchRelease rel = release_of(kinds[state.range(0)]);
  state.SetLabel(kinds[state.range(0)]);
  fit_means(state, rel, 100000);
}
BENCHMARK(BM_M2mFit)->Arg(1)->Arg(0)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3)
    ->ReportAggregatesOnly(true);

// RACE R = W = 80 at n_s = 2.5e4, 1e5, 4e5: time grows with n_s only in the Gram counts and the
// weights; solve_MiB stays the same.
static void BM_M2mFitSamples(benchmark::State& state) {
  static const FeatureSketchRelease rel = release_of("race");
  fit_means(state, rel, static_cast<std::size_t>(state.range(0)));
}
BENCHMARK(BM_M2mFitSamples)->Arg(25000)->Arg(400000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// Baseline for the factorisation: Eigen's LLT (one thread) on an m = 6400 SPD matrix, against
// parallel_cholesky_lower on the same matrix.
static void BM_Cholesky(benchmark::State& state) {
  const Eigen::Index m = 6400;
  SeededRandom rng(2);
  Eigen::MatrixXd b(m, 64);
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = rng.unit();
  Eigen::MatrixXd a = b * b.transpose() / 64.0;
  a.diagonal().array() += 0.1;
  for (auto _ : state) {
    Eigen::MatrixXd work = a;
    if (state.range(0) == 0) {
      Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(work);
      benchmark::DoNotOptimize(llt.info());
    } else {
      benchmark::DoNotOptimize(parallel_cholesky_lower(work));
    }
  }
  state.SetLabel(state.range(0) == 0 ? "eigen_llt" : "parallel_blocked");
}
BENCHMARK(BM_Cholesky)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3)
    ->ReportAggregatesOnly(true);

// The ridge solve of one release on a shared RACE design (R = W = 80, m = 6400, n_s = 10^5),
// range(0): 0 the factorisation, 1 conjugate gradients (M2mRidgeSolver); range(1): epsilon in
// hundredths (1: eps 0.01, lambda ~ 10^3; 100: eps 1, lambda ~ 0.5). Counters: the solve's
// seconds and the CG iterations (docs: the Automatic rule takes CG where its bound is <= m / 64).
static void BM_RidgeSolve(benchmark::State& state) {
  const bool cg = state.range(0) == 1;
  static const DenseMatrix data = random10();
  FeatureSketchSpec spec;
  spec.kind = "race";
  spec.rows = 80;
  spec.width = 80;
  spec.bandwidth = 0.1;
  spec.seed = 7;
  static const auto sums = build_feature_sums(data, spec);
  FeatureSketchPrivacy privacy;
  privacy.epsilon = static_cast<double>(state.range(1)) / 100.0;
  const FeatureSketchRelease rel = release_feature_sketch(*sums, privacy, NoiseSource{true, 3});
  M2mOptions opt;
  opt.domain = BoxDomain::uniform(10, 0.0, 1.0);
  opt.samples = 100000;
  opt.ridge_solver = cg ? M2mRidgeSolver::ConjugateGradient : M2mRidgeSolver::Cholesky;
  const auto design = std::make_shared<const M2mDesign>(rel.map, opt);
  nlohmann::json last;
  for (auto _ : state) {
    const M2mModel model(design, rel);
    benchmark::DoNotOptimize(model.weights().data());
    last = model.describe();
  }
  state.counters["factor_s"] = last.at("factor_seconds").get<double>();
  state.counters["cg_iterations"] = last.at("cg_iterations").get<double>();
  state.counters["lambda"] = last.at("lambda").get<double>();
  state.SetLabel(cg ? "conjugate gradients" : "cholesky");
}
BENCHMARK(BM_RidgeSolve)->Args({0, 1})->Args({1, 1})->Args({0, 100})->Args({1, 100})->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Iterations(1);

BENCHMARK_MAIN();
