// The dense fill against a plain kernel, in one run. The library's build (build_dense: the
// family's GEMM projections, bucket and column hash in one pass, four rows counted together,
// per-thread sub-sketches merged) and a plain p-stable kernel written for this comparison only:
// per LSH row, blocks of 1,024 points in structure-of-arrays order so the projection vectorises,
// the column by a multiply-shift hash and a multiply-high range reduction, four sub-histograms
// a row summed at the end, rows split among the threads. Both hash every point into every one
// of R = 1000 rows of W = 1000 columns; "ns/update" is thread-seconds per (point, row).
//
// Data: the skin data set (245,057 x 3) when PRIVRACE_DATA names the data folder (its
// skin/Skin_NonSkin.txt), else as many uniform points in [0, 255]^3. Report medians:
//   PRIVRACE_DATA=../shared/datasets build/bench/bench_fill --benchmark_repetitions=5
//     --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/lsh/gaussian.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/race_sketch.hpp"

using namespace privrace;

namespace {
constexpr std::size_t kRows = 1000, kWidth = 1000;
constexpr float kBandwidth = 5.0f;

DenseMatrix load_points() {
  std::vector<float> values;
  if (const char* dir = std::getenv("PRIVRACE_DATA")) {
    std::ifstream in(std::string(dir) + "/skin/Skin_NonSkin.txt");
    float b = 0, g = 0, r = 0;
    int label = 0;
    while (in >> b >> g >> r >> label) values.insert(values.end(), {b, g, r});
  }
  if (values.empty()) {
    SeededRandom rng(7);
    values.resize(245057 * 3);
    for (auto& v : values) v = static_cast<float>(255.0 * rng.unit());
  }
  const auto n = static_cast<Eigen::Index>(values.size() / 3);
  DenseMatrix x(n, 3);
  std::copy(values.begin(), values.end(), x.data());
  return x;
}

const DenseMatrix& points() {
  static const DenseMatrix x = load_points();
  return x;
}

void set_counters(benchmark::State& state, int threads) {
  const double updates = static_cast<double>(points().rows()) * static_cast<double>(kRows);
  state.counters["points"] = static_cast<double>(points().rows());
  state.counters["ns/update"] = benchmark::Counter(updates * static_cast<double>(state.iterations()) / threads,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The plain kernel: its own projections, offsets and hash constants (the same distributions).
struct PlainKernel {
  std::vector<float> a;  // kRows x 3, divided by the bandwidth
  std::vector<float> b;  // kRows, in [0, 1)
  std::vector<std::uint64_t> mult;  // kRows odd multipliers
  PlainKernel() : a(kRows * 3), b(kRows), mult(kRows) {
    SeededRandom rng(11);
    fill_gaussian(rng, a.data(), a.size());
    for (auto& v : a) v /= kBandwidth;
    for (auto& v : b) v = static_cast<float>(rng.unit());
    for (auto& m : mult) m = rng.next() | 1;
  }

  // Counts of every row into counts (kRows x kWidth, zeroed by the caller).
  void fill(const DenseMatrix& x, std::int64_t* counts, int threads) const {
    const std::size_t n = static_cast<std::size_t>(x.rows());
    constexpr std::size_t kBlock = 1024;
#pragma omp parallel num_threads(threads)
    {
      std::array<float, kBlock> x0, x1, x2;
      std::array<std::uint32_t, kBlock> col;
      std::vector<std::uint32_t> sub(4 * kWidth);
#pragma omp for schedule(static)
      for (std::size_t r = 0; r < kRows; ++r) {
        std::fill(sub.begin(), sub.end(), 0u);
        const float a0 = a[3 * r], a1 = a[3 * r + 1], a2 = a[3 * r + 2], off = b[r];
        const std::uint64_t m = mult[r];
        for (std::size_t start = 0; start < n; start += kBlock) {
          const std::size_t len = std::min(kBlock, n - start);
          const float* p = x.data() + 3 * start;
          for (std::size_t i = 0; i < len; ++i) {  // structure of arrays
            x0[i] = p[3 * i];
            x1[i] = p[3 * i + 1];
            x2[i] = p[3 * i + 2];
          }
          for (std::size_t i = 0; i < len; ++i) {  // vectorised: projection, bucket, column
            const float v = std::floor(a0 * x0[i] + a1 * x1[i] + a2 * x2[i] + off);
            const auto code = static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
            const std::uint64_t h = (m * code) >> 32;
            col[i] = static_cast<std::uint32_t>(((h & 0xFFFFFFFFULL) * kWidth) >> 32);
          }
          std::size_t i = 0;
          for (; i + 4 <= len; i += 4) {  // four sub-histograms: no store-to-load chain on one counter
            ++sub[col[i]];
            ++sub[kWidth + col[i + 1]];
            ++sub[2 * kWidth + col[i + 2]];
            ++sub[3 * kWidth + col[i + 3]];
          }
          for (; i < len; ++i) ++sub[col[i]];
        }
        std::int64_t* out = counts + r * kWidth;
        for (std::size_t c = 0; c < kWidth; ++c) out[c] = sub[c] + sub[kWidth + c] + sub[2 * kWidth + c] + sub[3 * kWidth + c];
      }
    }
  }
};
}  // namespace

static void BM_FillLibrary(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const std::shared_ptr<const LshFamily> family = make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = kBandwidth, .power = 1, .rows = kRows, .dim = 3, .seed = 1});
  for (auto _ : state) {
    RaceSketch sketch(family, kWidth);
    build_dense(sketch, points(), {.threads = threads});
    benchmark::DoNotOptimize(sketch.counts().data());
  }
  set_counters(state, threads);
}
BENCHMARK(BM_FillLibrary)->DenseRange(1, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_FillPlainKernel(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const PlainKernel kernel;
  std::vector<std::int64_t> counts(kRows * kWidth);
  for (auto _ : state) {
    std::fill(counts.begin(), counts.end(), 0);
    kernel.fill(points(), counts.data(), threads);
    benchmark::DoNotOptimize(counts.data());
  }
  std::int64_t total = 0;
  for (const auto c : counts) total += c;
  if (total != points().rows() * static_cast<std::int64_t>(kRows)) state.SkipWithError("plain kernel lost updates");
  set_counters(state, threads);
}
BENCHMARK(BM_FillPlainKernel)->DenseRange(1, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
