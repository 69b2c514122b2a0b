// Feature-map sketches for M2M: building the exact sums of 10^6 x 10 points (one parallel pass)
// for RFF (m = 200: one GEMM a batch, float cos/sin, quantised to the 2^-20 grid), HIST
// (100 bins) and RACE (R = W = 80), and the release (noise once). Report medians:
//   build/bench/bench_feature_sketch --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "privrace/core/random.hpp"
#include "privrace/sketch/feature_sketch.hpp"

using namespace privrace;

namespace {
const DenseMatrix& unit_cube_points() {
  static const DenseMatrix x = [] {
    SeededRandom rng(1);
    DenseMatrix m(1000000, 10);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(rng.unit());
    return m;
  }();
  return x;
}
FeatureSketchSpec spec_of(const std::string& kind) {
  FeatureSketchSpec s;
  s.kind = kind;
  s.features = 200;
  s.sigma = 1.0;
  s.bins = 100;
  s.lo = {0.0};
  s.hi = {1.0};
  s.rows = s.width = 80;
  s.bandwidth = 0.1;
  s.seed = 7;
  return s;
}
}  // namespace

// Wall time of build_feature_sums on 10^6 x 10 points; the argument is the thread count.
static void BM_BuildFeatureSums(benchmark::State& state, const std::string& kind) {
  const DenseMatrix& x = unit_cube_points();
  const FeatureSketchSpec spec = spec_of(kind);
  for (auto _ : state) {
    auto sums = build_feature_sums(x, spec, static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(sums.get());
  }
  state.counters["points/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(x.rows()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_BuildFeatureSums, rff, std::string("rff"))->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_BuildFeatureSums, hist, std::string("hist"))->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_BuildFeatureSums, race, std::string("race"))->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// One release (sketch copy, discrete Laplace on every sum, the noisy count, the header).
static void BM_ReleaseFeatureSketch(benchmark::State& state, const std::string& kind) {
  const auto sums = build_feature_sums(unit_cube_points().topRows(10000), spec_of(kind), 1);
  FeatureSketchPrivacy priv;
  std::uint64_t seed = 0;
  for (auto _ : state) {
    auto rel = release_feature_sketch(*sums, priv, NoiseSource{true, ++seed});
    benchmark::DoNotOptimize(rel.sums.data());
  }
}
BENCHMARK_CAPTURE(BM_ReleaseFeatureSketch, rff, std::string("rff"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ReleaseFeatureSketch, race, std::string("race"))->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
