// LDP mean mechanisms (PM, HM, PrivUnit) against Duchi's 1-D mechanism in the same run. Medians:
//   build/bench/bench_ldp_mean --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// items_per_second = scalar reports per second (PrivUnit: vector reports). The bulk cells are
// the simulators of mean_mechanisms.hpp over 2^22 players with values t_i in [-1, 1], on 1 and
// 2 threads; the baselines are the project's own bulk path for Duchi's mechanism
// (sampled_bit_average with d = 1: one BitRandomizer bit a player) and DuchiMechanism through
// the same simulator as PM and HM.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/mean_mechanisms.hpp"
#include "privrace/ldp/protocols.hpp"
#include "privrace/privacy/mechanisms.hpp"

using namespace privrace;
using namespace privrace::ldp;

namespace {
constexpr std::uint64_t kPlayers = std::uint64_t{1} << 22;
constexpr double kEps = 1.0;
inline double value_of(std::uint64_t i) { return static_cast<double>(i & 1023) / 511.5 - 1.0; }

template <class M>
void BM_BulkScalar(benchmark::State& state) {
  const SampledCoordinates<M> mech(1, kEps);
  const int threads = static_cast<int>(state.range(0));
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const auto est = simulate_sampled_mean(mech, kPlayers, seed++, [](std::uint64_t i, std::size_t) { return value_of(i); },
                                           threads);
    benchmark::DoNotOptimize(est.mean.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kPlayers));
}

// The project's existing bulk path for Duchi's mechanism: one bit a player, u = (t + 1) / 2.
void BM_BulkDuchiProjectBits(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const auto est = sampled_bit_average(kPlayers, 1, kEps, 7, seed++,
                                         [](std::uint64_t i, std::size_t) { return 0.5 * (value_of(i) + 1.0); }, threads);
    benchmark::DoNotOptimize(est.mean.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kPlayers));
}

// Per-player reports from a seeded RandomSource (the path audits and real players use).
template <class M>
void BM_PerPlayerScalar(benchmark::State& state) {
  const M mech(kEps);
  SeededRandom rng(3);
  std::uint64_t i = 0;
  double sum = 0;
  for (auto _ : state) {
    sum += mech.report(value_of(i++), rng);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// Algorithm 4 in d = 16 at eps = 6 (k = 2 sampled coordinates a player).
template <class M>
void BM_BulkVector16(benchmark::State& state) {
  const SampledCoordinates<M> mech(16, 6.0);
  const int threads = static_cast<int>(state.range(0));
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const auto est = simulate_sampled_mean(
        mech, kPlayers / 4, seed++, [](std::uint64_t i, std::size_t j) { return value_of(i + 97 * j); }, threads);
    benchmark::DoNotOptimize(est.mean.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kPlayers / 4));
}

void BM_BulkPrivUnit(benchmark::State& state) {
  const std::size_t d = static_cast<std::size_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const PrivUnit mech(d, kEps);
  constexpr std::uint64_t n = 1 << 16;
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const auto est = simulate_privunit_mean(mech, n, seed++, [d](std::uint64_t i, double* g) {
      for (std::size_t j = 0; j < d; ++j) g[j] = value_of(i + 31 * j) / std::sqrt(static_cast<double>(d));
    }, threads);
    benchmark::DoNotOptimize(est.mean.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

// The Asi-Feldman-Talwar parameter search (once per epsilon and dimension).
void BM_PrivUnitParameters(benchmark::State& state) {
  const std::size_t d = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    const PrivUnit mech(d, 2.0);
    benchmark::DoNotOptimize(mech.m());
  }
}
}  // namespace

BENCHMARK(BM_BulkDuchiProjectBits)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_BulkScalar, DuchiMechanism)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_BulkScalar, PiecewiseMechanism)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_BulkScalar, HybridMechanism)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_PerPlayerScalar, DuchiMechanism);
BENCHMARK_TEMPLATE(BM_PerPlayerScalar, PiecewiseMechanism);
BENCHMARK_TEMPLATE(BM_PerPlayerScalar, HybridMechanism);
BENCHMARK_TEMPLATE(BM_BulkVector16, PiecewiseMechanism)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_BulkVector16, HybridMechanism)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BulkPrivUnit)->Args({3, 2})->Args({100, 2})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivUnitParameters)->Arg(3)->Arg(1000)->Unit(benchmark::kMillisecond);

// Standard normals, 1000 a call (one DJW l2 report in d = 1000, ldp_highdim's full LDP-SGD):
// Box-Muller one at a time (sample_normal) against the bulk ziggurat (fill_normal), and the
// whole DJW l2 privatizer. items_per_second = normals (reports) per second, one thread.
void BM_NormalBoxMuller(benchmark::State& state) {
  SeededRandom rng(1);
  std::vector<double> z(1000);
  for (auto _ : state) {
    for (auto& v : z) v = sample_normal(rng);
    benchmark::DoNotOptimize(z.data());
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
void BM_NormalZiggurat(benchmark::State& state) {
  SeededRandom rng(1);
  std::vector<double> z(1000);
  for (auto _ : state) {
    fill_normal(rng, z.data(), z.size());
    benchmark::DoNotOptimize(z.data());
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
// One DJW report in d = range(0): range(1) = 0 the one-call function (its constants and buffer
// made each call), 1 a DjwL2 kept over the players (as the LDP-SGD loops do). Same reports.
void BM_DjwL2Report(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  SeededRandom rng(1);
  std::vector<double> g(d, 0.0), z(d);
  g[0] = 0.5;
  g[d - 1] = -0.25;
  DjwL2 kept(d, 1.0, 1.0);
  for (auto _ : state) {
    if (state.range(1) == 0) djw_l2_privatize(g.data(), d, 1.0, 1.0, rng, z.data());
    else kept.privatize(g.data(), rng, z.data());
    benchmark::DoNotOptimize(z.data());
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_NormalBoxMuller);
BENCHMARK(BM_NormalZiggurat);
BENCHMARK(BM_DjwL2Report)->ArgsProduct({{1, 3, 1000}, {0, 1}})->Repetitions(5)->ReportAggregatesOnly(true);

BENCHMARK_MAIN();
