// MinHash for sets: cost per set of the densified family's two paths (identical codes) and of
// classic MinHash, as the set grows, at R = 2000 (the paper's graph setting).
//
// The cost model in DensifiedMinHash::choose (doph.cpp) is fitted to BM_DophPath: on this
// machine (2-core AMD EPYC, AVX-512, Release) at R = 2000 the small path is faster up to
// |S| ~ 160 and the large path beyond (the numbers are quoted in doph.cpp).
#include <benchmark/benchmark.h>

#include <algorithm>

#include "privrace/core/random.hpp"
#include "privrace/lsh/families.hpp"

using namespace privrace;

namespace {
SetCollection random_sets(std::size_t count, std::size_t size, std::uint64_t seed) {
  SetCollection sets;
  SeededRandom rng(seed);
  std::vector<std::uint32_t> s;
  for (std::size_t i = 0; i < count; ++i) {
    s.clear();
    while (s.size() < size) {
      s.push_back(static_cast<std::uint32_t>(rng.below(1u << 24)));
      if (s.size() == size) {
        std::sort(s.begin(), s.end());
        s.erase(std::unique(s.begin(), s.end()), s.end());
      }
    }
    sets.push_back(s);
  }
  return sets;
}
constexpr std::size_t kRows = 2000;
}  // namespace

// range(0) = |S|, range(1) = path (0 auto, 1 small, 2 large).
static void BM_DophPath(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto path = static_cast<DensifiedMinHash::Path>(state.range(1));
  const DensifiedMinHash family(kRows, 1, 42);
  const SetCollection sets = random_sets(64, size, 3);
  std::vector<std::uint64_t> out(kRows);
  std::size_t i = 0;
  for (auto _ : state) {
    family.hash_one(sets.set(i++ & 63), out.data(), 0, kRows, path);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(state.range(1) == 0 ? "auto" : state.range(1) == 1 ? "small" : "large");
  state.counters["ns/code"] = benchmark::Counter(static_cast<double>(state.iterations()) * kRows,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DophPath)
    ->ArgsProduct({{1, 4, 12, 32, 48, 64, 96, 128, 192, 256, 512, 2000, 10000}, {1, 2, 0}})
    ->Unit(benchmark::kMicrosecond);

static void BM_ClassicMinHash(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto family = make_family(FamilySpec{.kernel = Kernel::JaccardClassic, .rows = kRows, .seed = 42});
  const SetCollection sets = random_sets(64, size, 3);
  CodeMatrix codes;
  std::size_t i = 0;
  for (auto _ : state) {
    const std::size_t k = i++ & 63;
    family->hash_sets(SetBatch{&sets, k, k + 1}, codes);
    benchmark::DoNotOptimize(codes.data());
  }
  state.counters["ns/code"] = benchmark::Counter(static_cast<double>(state.iterations()) * kRows,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ClassicMinHash)->Arg(12)->Arg(128)->Arg(2000)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
