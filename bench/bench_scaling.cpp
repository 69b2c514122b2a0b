// Thread scaling of every stage of `privrace sketch` and of dense queries. Thread grids run
// 1 .. all cores of the machine, so the same binary gives the 16-core figures there:
//   build/bench/bench_scaling --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Arguments: the first is the thread count; the build's second argument is its variant.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <filesystem>
#include <unistd.h>

#include "privrace/core/random.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"

using namespace privrace;

namespace {
DenseMatrix cube_points(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(255.0 * rng.unit());
  return x;
}
std::shared_ptr<const LshFamily> l2_family(std::size_t rows, std::size_t dim) {
  return make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = 5.0, .rows = rows, .dim = dim, .seed = 1});
}
void thread_grid(benchmark::internal::Benchmark* b, bool with_variant) {
  for (int t = 1; t <= omp_get_num_procs(); ++t) {
    if (with_variant) {
      b->Args({t, 0});
      b->Args({t, 1});
    } else {
      b->Args({t});
    }
  }
}
}  // namespace

// Dense build, skin-sized (245,057 x 3), R = W = 1000, with the stage times as counters
// (seconds per build): sub-sketches allocated serially and faulted inside the fill (variant 0)
// against allocated and pre-faulted by their own threads (variant 1).
static void BM_BuildStages(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const bool prefault = state.range(1) == 1;
  const DenseMatrix x = cube_points(245057, 3, 4);
  const auto family = l2_family(1000, 3);
  BuildStages sum;
  for (auto _ : state) {
    RaceSketch sketch(family, 1000);
    const BuildReport r = build_dense(sketch, x, {.threads = threads, .strategy = BuildStrategy::Replicate, .prefault_partials = prefault});
    benchmark::DoNotOptimize(sketch.counts().data());
    sum.allocate += r.stages.allocate;
    sum.fill += r.stages.fill;
    sum.merge += r.stages.merge;
    sum.fill_thread_max += r.stages.fill_thread_max;
    sum.fill_thread_mean += r.stages.fill_thread_mean;
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["allocate_s"] = sum.allocate / it;
  state.counters["fill_s"] = sum.fill / it;
  state.counters["merge_s"] = sum.merge / it;
  state.counters["imbalance"] = sum.fill_thread_max / std::max(1e-12, sum.fill_thread_mean);
  state.counters["row_updates/s"] = benchmark::Counter(it * 245057.0 * 1000.0, benchmark::Counter::kIsRate);
  state.SetLabel(prefault ? "prefaulted" : "faulted in fill");
}
BENCHMARK(BM_BuildStages)->Apply([](auto* b) { thread_grid(b, true); })->Unit(benchmark::kMillisecond)->UseRealTime();

// Seeded discrete Laplace noise for R = 1000, W = 1000 (table sampler, privatize: one stream
// per block of 2^16 counts).
static void BM_NoiseStreams(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto family = l2_family(1000, 3);
  const PrivacySpec spec{.epsilon = 1.0};
  for (auto _ : state) {
    state.PauseTiming();
    RaceSketch s(family, 1000);
    state.ResumeTiming();
    omp_set_num_threads(threads);
    privatize(s, spec, {.seeded = true, .seed = 7});
    benchmark::DoNotOptimize(s.counts().data());
  }
  omp_set_num_threads(omp_get_num_procs());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000000);
}
BENCHMARK(BM_NoiseStreams)->Apply([](auto* b) { thread_grid(b, false); })->Unit(benchmark::kMillisecond)->UseRealTime();

// Release randomness, every thread drawing 4 MiB from CryptoRandom (the thread's public DRBG,
// 64 KiB requests).
static void BM_CsprngThreads(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr std::size_t kWords = std::size_t{1} << 19;
  for (auto _ : state) {
#pragma omp parallel num_threads(threads)
    {
      std::vector<std::uint64_t> out(kWords);
      CryptoRandom rng;
      rng.take(out.data(), kWords);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * threads * static_cast<std::int64_t>(kWords * 8));
}
BENCHMARK(BM_CsprngThreads)->Apply([](auto* b) { thread_grid(b, false); })->Unit(benchmark::kMillisecond)->UseRealTime();

// Encode + write (+ fsync) of a noisy R = 1000, W = 10,000 sketch (10^7 counts, ten blocks).
static void BM_WriteSketch(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto family = l2_family(1000, 3);
  RaceSketch s(family, 10000);
  privatize(s, {.epsilon = 1.0}, {.seeded = true, .seed = 3});
  const std::string path = (std::filesystem::temp_directory_path() / ("bench_scaling_" + std::to_string(::getpid()) + ".rsk")).string();
  SketchWriteTimings sum;
  omp_set_num_threads(threads);
  for (auto _ : state) {
    SketchWriteTimings t;
    write_sketch_file(path, {{"rows", 1000}, {"width", 10000}}, s.counts(), &t);
    sum.encode_seconds += t.encode_seconds;
    sum.write_seconds += t.write_seconds;
    sum.sync_seconds += t.sync_seconds;
    sum.bytes = t.bytes;
  }
  omp_set_num_threads(omp_get_num_procs());
  std::filesystem::remove(path);
  const double it = static_cast<double>(state.iterations());
  state.counters["encode_s"] = sum.encode_seconds / it;
  state.counters["write_s"] = sum.write_seconds / it;
  state.counters["fsync_s"] = sum.sync_seconds / it;
  state.counters["MB"] = static_cast<double>(sum.bytes) / 1e6;
}
BENCHMARK(BM_WriteSketch)->Apply([](auto* b) { thread_grid(b, false); })->Unit(benchmark::kMillisecond)->UseRealTime();

// 100,000 dense queries (d = 3) against an R = 1000, W = 1000 sketch in parallel batches.
static void BM_DenseQueries(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto family = l2_family(1000, 3);
  RaceSketch sketch(family, 1000);
  build_dense(sketch, cube_points(20000, 3, 6));
  const DenseMatrix q = cube_points(100000, 3, 7);
  for (auto _ : state) benchmark::DoNotOptimize(sketch.query_dense(q, {.threads = threads}));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 100000);
}
BENCHMARK(BM_DenseQueries)->Apply([](auto* b) { thread_grid(b, false); })->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
