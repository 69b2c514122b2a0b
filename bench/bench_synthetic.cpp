// Synthetic-data generators on a 27,000 x 10 table (the shape of the M2M paper's LifeSci and
// Random10): DP-Copula fit + one synthetic table of the same size (target: under 1 s), PrivBayes
// (degree 2, 16 bins) the same, DP-WGAN's training at epsilon = 1, delta = 1e-5 with the default
// schedule (1000 generator steps x 5 DP-SGD critic steps, expected batch 256; target: under
// 5 minutes), and the RDP accountant's noise-multiplier search. Baseline in the same run: one
// pass over the table computing its column means.
#include <benchmark/benchmark.h>

#include "privrace/baselines/dp_copula.hpp"
#include "privrace/baselines/dp_wgan.hpp"
#include "privrace/baselines/privbayes.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/rdp_accountant.hpp"

using namespace privrace;
using namespace privrace::baselines;

namespace {
constexpr std::size_t kRows = 27000, kCols = 10;

// Correlated rows in [0, 1]^10: a latent factor plus noise, squashed.
const DenseMatrix& table() {
  static const DenseMatrix t = [] {
    SeededRandom rng(1);
    DenseMatrix x(kRows, kCols);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const double f = rng.unit();
      for (Eigen::Index j = 0; j < x.cols(); ++j) x(i, j) = static_cast<Real>(0.5 * f + 0.5 * rng.unit());
    }
    return x;
  }();
  return t;
}
}  // namespace

static void BM_ColumnMeansBaseline(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(table().cast<double>().colwise().mean().eval());
}
BENCHMARK(BM_ColumnMeansBaseline)->Unit(benchmark::kMillisecond);

static void BM_DpCopulaFitAndSample(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    DpCopula gen;
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {1.0, 0}, noise);
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
BENCHMARK(BM_DpCopulaFitAndSample)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_PrivBayesFitAndSample(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    PrivBayesGenerator gen;
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {1.0, 0}, noise);
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
BENCHMARK(BM_PrivBayesFitAndSample)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_NoiseMultiplierSearch(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(find_noise_multiplier(1.0, 256.0 / kRows, 5000, 1e-5));
}
BENCHMARK(BM_NoiseMultiplierSearch)->Unit(benchmark::kMillisecond);

// range(0) = torch threads. One iteration: the training is minutes at full size.
static void BM_DpWganTrain(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    DpWganOptions o;
    o.threads = static_cast<int>(state.range(0));
    DpWgan gen(o);
    SeededRandom noise(++seed);
    gen.fit(table(), TableBox::uniform(kCols, 0, 1), {1.0, 1e-5}, noise);
    state.counters["sigma"] = gen.noise_multiplier();
    benchmark::DoNotOptimize(gen.sample(kRows, seed).data());
  }
}
BENCHMARK(BM_DpWganTrain)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_MAIN();
