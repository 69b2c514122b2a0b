// Engine microbenchmarks: hashing per family, sketch build (row-updates per second), query
// latency, merge, privatization, thread scaling, and large zeroed arrays made, written and
// released again as an experiment does per cell (kept blocks reused or not, one run). Report medians:
//   build/bench/bench_engine --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <array>
#include <benchmark/benchmark.h>
#include <omp.h>

#include "privrace/core/random.hpp"
#include "privrace/core/zeroed_pages.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/lsh/gaussian.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"

using namespace privrace;

namespace {
// Uniform points in [0, 255]^d (the skin data's range for d = 3).
DenseMatrix cube_points(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(255.0 * rng.unit());
  return x;
}

std::shared_ptr<const LshFamily> family_for(const std::string& kernel, std::size_t rows, std::size_t dim) {
  return make_family(FamilySpec{.kernel = parse_kernel(kernel), .bandwidth = 5.0, .power = kernel == "angular" ? 4u : 1u, .rows = rows, .dim = dim, .seed = 1});
}
}  // namespace

// Codes per second of one family on one thread (batch of 256 points, R = 1000).
static void BM_Hash(benchmark::State& state, const std::string& kernel) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const auto family = family_for(kernel, 1000, d);
  const DenseMatrix x = cube_points(256, d, 2);
  CodeMatrix codes;
  for (auto _ : state) {
    family->hash_dense(x, codes);
    benchmark::DoNotOptimize(codes.data());
  }
  state.counters["codes/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 256 * 1000, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Hash, l2, std::string("l2"))->Arg(3)->Arg(8)->Arg(128)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Hash, angular, std::string("angular"))->Arg(3)->Arg(8)->Arg(128)->Unit(benchmark::kMicrosecond);

static void BM_HashMinHash(benchmark::State& state) {
  const auto family = make_family(FamilySpec{.kernel = Kernel::Jaccard, .rows = 1000, .seed = 1});
  SetCollection sets;
  SeededRandom rng(3);
  for (int i = 0; i < 64; ++i) {
    std::vector<std::uint32_t> s;
    for (std::uint32_t e = 0; e < static_cast<std::uint32_t>(state.range(0)); ++e) s.push_back(static_cast<std::uint32_t>(rng.below(1u << 20)));
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    sets.push_back(s);
  }
  CodeMatrix codes;
  for (auto _ : state) {
    family->hash_sets(SetBatch{&sets, 0, sets.size()}, codes);
    benchmark::DoNotOptimize(codes.data());
  }
  state.counters["codes/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 64 * 1000, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HashMinHash)->Arg(12)->Arg(100)->Unit(benchmark::kMicrosecond);

// Whole build, R = 1000, W = 1000, N = 245,057 (the skin data set's size), given threads.
static void BM_Build(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const std::size_t n = d >= 128 ? 20000 : 245057;
  const DenseMatrix x = cube_points(n, d, 4);
  const auto family = family_for("l2", 1000, d);
  for (auto _ : state) {
    RaceSketch sketch(family, 1000);
    build_dense(sketch, x, {.threads = threads});
    benchmark::DoNotOptimize(sketch.counts().data());
  }
  state.counters["row_updates/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n) * 1000, benchmark::Counter::kIsRate);
  state.counters["threads"] = threads;
}
BENCHMARK(BM_Build)->ArgsProduct({{3, 8, 128}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();

// Thread scaling on N = 1,000,000 points, d = 3: 1 .. all cores.
static void BM_BuildScaling(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const DenseMatrix x = cube_points(1000000, 3, 5);
  const auto family = family_for("l2", 1000, 3);
  for (auto _ : state) {
    RaceSketch sketch(family, 1000);
    build_dense(sketch, x, {.threads = threads});
    benchmark::DoNotOptimize(sketch.counts().data());
  }
  state.counters["row_updates/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BuildScaling)->DenseRange(1, omp_get_num_procs())->Unit(benchmark::kMillisecond)->UseRealTime();

// Latency of one query (R = 1000, d = 3 and 10), and of a batch of 256 queries per query.
static void BM_Query(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const auto batch = static_cast<std::size_t>(state.range(1));
  const auto family = family_for("l2", 1000, d);
  RaceSketch sketch(family, 1000);
  build_dense(sketch, cube_points(10000, d, 6));
  const DenseMatrix q = cube_points(batch, d, 7);
  for (auto _ : state) benchmark::DoNotOptimize(sketch.query_dense(q));
  state.counters["us/query"] = benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(batch),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["us/query"] = state.counters["us/query"];
}
BENCHMARK(BM_Query)->ArgsProduct({{3, 10}, {1, 256}})->Unit(benchmark::kMicrosecond);

static void BM_Merge(benchmark::State& state) {
  const auto family = family_for("l2", 1000, 3);
  RaceSketch a(family, 1000), b(family, 1000);
  for (auto _ : state) {
    a.merge(b);
    benchmark::DoNotOptimize(a.counts().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 1000 * 1000 * 8);
}
BENCHMARK(BM_Merge)->Unit(benchmark::kMillisecond);

// Noise for an R = 1000, W = 1000 sketch (10^6 counts: the table sampler): the exact discrete
// Laplace against the floating-point floor(S + Lap) of the paper, both from the CSPRNG.
static void BM_Privatize(benchmark::State& state, NoiseMechanism mechanism) {
  const auto family = family_for("l2", 1000, 3);
  for (auto _ : state) {
    RaceSketch s(family, 1000);
    privatize(s, {.epsilon = 1.0, .mechanism = mechanism}, {});
    benchmark::DoNotOptimize(s.counts().data());
  }
}
BENCHMARK_CAPTURE(BM_Privatize, discrete_laplace, NoiseMechanism::DiscreteLaplace)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Privatize, floored_laplace, NoiseMechanism::FlooredLaplace)->Unit(benchmark::kMillisecond);

// One exact discrete Laplace draw at scale 2000 (R = 2000, eps = 1): the Bernoulli(exp)
// construction (range(0) = 0) and the table inversion as add_to draws it (1: the compact levels
// of 2^8, 32-bit first reads), from the CSPRNG and from the seeded stream (range(1)). The former
// forms are measured by building this benchmark at the previous main, not by copies kept here.
static void BM_DiscreteLaplaceDraw(benchmark::State& state) {
  const DiscreteLaplace noise(2000.0);
  const auto table = noise.bulk_sampler();
  const bool use_table = state.range(0) == 1;
  std::unique_ptr<RandomSource> rng = make_noise_source(state.range(1) == 1, 7);
  std::vector<std::int64_t> counts(4096, 0);
  for (auto _ : state) {
    noise.add_to(counts, *rng, use_table ? table.get() : nullptr);
    benchmark::DoNotOptimize(counts.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 4096);
  state.SetLabel(std::string(use_table ? "table" : "bernoulli_exp") + (state.range(1) == 1 ? ", seeded" : ", csprng"));
}
BENCHMARK(BM_DiscreteLaplaceDraw)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);

// One exact discrete Gaussian draw: the rejection construction (DiscreteGaussian::sample,
// range(0) = 0) and the table inversion of add_to (1), at sigma = range(1) (3: MST/AIM's
// small sigmas; 272: the audit's R = 2000 at eps 1, delta 1e-5; 2000: a wide sketch's
// noise), from the CSPRNG and from the seeded stream (range(2)). Items: draws.
static void BM_DiscreteGaussianDraw(benchmark::State& state) {
  const DiscreteGaussian noise(static_cast<double>(state.range(1)));
  const auto table = state.range(0) == 1 ? noise.bulk_sampler() : nullptr;
  std::unique_ptr<RandomSource> rng = make_noise_source(state.range(2) == 1, 7);
  std::vector<std::int64_t> counts(4096, 0);
  for (auto _ : state) {
    noise.add_to(counts, *rng, table.get());
    benchmark::DoNotOptimize(counts.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 4096);
  state.SetLabel(std::string(table ? "table" : "rejection (sample)") + (state.range(2) == 1 ? ", seeded" : ", csprng"));
}
BENCHMARK(BM_DiscreteGaussianDraw)->ArgsProduct({{0, 1}, {3, 272, 2000}, {0, 1}})->Unit(benchmark::kMicrosecond);

// range(0): MiB of int64 counts (128: a PrivBayes table of 16^6 cells; 1536: a graph sketch of
// R = 2000, W = 100k); range(1): 0 = every block fresh (page cache limit 0), 1 = kept blocks
// reused. Each iteration allocates, writes every count and releases.
static void BM_LargeZeroedArray(benchmark::State& state) {
  const std::size_t saved = page_cache_limit();
  const auto n = static_cast<std::size_t>(state.range(0)) << 17;  // 8-byte counts per MiB
  set_page_cache_limit(state.range(1) ? std::max(saved, n * 8) : 0);
  for (auto _ : state) {
    std::vector<std::int64_t, ZeroedPageAllocator<std::int64_t>> counts(n);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) counts[i] += static_cast<std::int64_t>(i);
    benchmark::DoNotOptimize(counts.data());
  }
  set_page_cache_limit(saved);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 8));
}
BENCHMARK(BM_LargeZeroedArray)->ArgsProduct({{128, 1536}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// The noise of a wide sketch at the scale of Slashdot's (R = 2000, eps = 1: scale 2000), per
// count, on 2000 x 10,000 counts (160 MB: out of cache, as in `privrace sketch`), through the
// release path's privatize on range(0) threads. Items: counts.
static void BM_PrivatizeWide(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  const auto family = family_for("l2", 2000, 3);
  RaceSketch s(family, 10000);
  for (auto _ : state) {
    state.PauseTiming();
    RaceSketch copy(family, 10000);
    state.ResumeTiming();
    privatize(copy, {.epsilon = 1.0}, {});
    benchmark::DoNotOptimize(copy.counts().data());
  }
  omp_set_num_threads(saved);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 2000 * 10000);
}
BENCHMARK(BM_PrivatizeWide)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Encoding of noisy counts (scale 2000, as Slashdot's) for the sketch file, on range(0)
// threads: 2^24 counts (128 MiB of int64). Bytes: the int64 counts in; the label says the
// encoded size per count.
static void BM_EncodeCounts(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  const std::size_t n = std::size_t{1} << 24;
  std::vector<std::int64_t> counts(n, 40);
  const DiscreteLaplace noise(2000.0);
  SeededRandom rng(3);
  noise.add_to(counts, rng, noise.bulk_sampler().get());
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    const EncodedCountBlocks blocks = encode_count_blocks(counts);
    bytes = blocks.frame_bytes();
    benchmark::DoNotOptimize(bytes);
  }
  omp_set_num_threads(saved);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 8));
  state.counters["encoded_bytes_per_s"] =
      benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(std::to_string(static_cast<double>(bytes) / static_cast<double>(n)) + " bytes/count");
}
BENCHMARK(BM_EncodeCounts)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Decoding the same (a reader's cost).
static void BM_DecodeCounts(benchmark::State& state) {
  const std::size_t n = std::size_t{1} << 24;
  std::vector<std::int64_t> counts(n, 40);
  const DiscreteLaplace noise(2000.0);
  SeededRandom rng(3);
  noise.add_to(counts, rng, noise.bulk_sampler().get());
  const EncodedCountBlocks blocks = encode_count_blocks(counts);
  std::vector<std::int64_t> out(n);
  for (auto _ : state) {
    decode_count_blocks(blocks, out, "bench");
    benchmark::DoNotOptimize(out.data());
  }
  if (out != counts) state.SkipWithError("decoded counts differ");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 8));
}
BENCHMARK(BM_DecodeCounts)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
