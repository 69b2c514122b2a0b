// Graph Jaccard sketches at scale (issue 6): Slashdot (82,168 nodes, 948,464 edges) at the
// paper's R = 2000, W = 100k; R-MAT graphs for thread scaling and time per edge as the graph
// grows 16x; exact ground truth for 2000 query nodes. Wall-clock (real) time throughout.
//
// Run: bench_graph --benchmark_filter=Slashdot (needs ../shared/datasets/snap or $PRIVRACE_DATA).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "privrace/io/edge_list.hpp"
#include "privrace/lsh/families.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/tasks/graph.hpp"

using namespace privrace;
namespace fs = std::filesystem;

namespace {

std::string slashdot_path() {
  std::vector<fs::path> dirs;
  if (const char* d = std::getenv("PRIVRACE_DATA")) dirs.emplace_back(d);
  dirs.emplace_back("datasets");
  dirs.emplace_back("../shared/datasets");
  dirs.push_back(fs::path(__FILE__).parent_path() / ".." / "datasets");
  dirs.push_back(fs::path(__FILE__).parent_path() / ".." / ".." / "shared" / "datasets");
  for (const auto& d : dirs)
    if (fs::exists(d / "snap" / "soc-Slashdot0902.txt.gz")) return (d / "snap" / "soc-Slashdot0902.txt.gz").string();
  return {};
}

const SetCollection* slashdot() {
  static std::unique_ptr<SetCollection> g;
  if (!g) {
    const std::string p = slashdot_path();
    if (p.empty()) return nullptr;
    g = std::make_unique<SetCollection>(read_edge_list(p));
  }
  return g.get();
}

const SetCollection& rmat(unsigned scale, double edge_factor, bool undirected) {
  static std::map<std::tuple<unsigned, double, bool>, std::unique_ptr<SetCollection>> cache;
  auto& slot = cache[{scale, edge_factor, undirected}];
  if (!slot) slot = std::make_unique<SetCollection>(generate_rmat({.scale = scale, .edge_factor = edge_factor, .seed = 7, .undirected = undirected}));
  return *slot;
}

std::shared_ptr<const LshFamily> jaccard(std::size_t rows) {
  return std::shared_ptr<const LshFamily>(make_family(FamilySpec{.kernel = Kernel::Jaccard, .rows = rows, .seed = 1}));
}

const char* kStrategies[] = {"two_phase", "replicate", "split_rows"};

// Sketch build only (allocation of the zeroed target outside the timing, as a reused buffer
// would be).
void build_bench(benchmark::State& state, const SetCollection& g, std::size_t rows, std::size_t width, int threads,
                 const std::string& strategy) {
  const auto family = jaccard(rows);
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto sketch = std::make_unique<RaceSketch>(family, width);
    state.ResumeTiming();
    const auto rep = build_set_sketch(*sketch, g, {.threads = threads, .strategy = parse_build_strategy(strategy, Kernel::Jaccard)});
    seconds += rep.seconds;
    benchmark::DoNotOptimize(sketch->row(0));
    state.PauseTiming();
    sketch.reset();
    state.ResumeTiming();
  }
  state.SetLabel(strategy);
  state.counters["edges"] = static_cast<double>(g.ids.size());
  state.counters["ns/edge"] = seconds * 1e9 / (static_cast<double>(g.ids.size()) * static_cast<double>(state.iterations()));
}

}  // namespace

static void BM_SlashdotLoad(benchmark::State& state) {
  const std::string p = slashdot_path();
  if (p.empty()) return state.SkipWithError("soc-Slashdot0902.txt.gz not found");
  for (auto _ : state) benchmark::DoNotOptimize(read_edge_list(p).ids.data());
}
BENCHMARK(BM_SlashdotLoad)->Unit(benchmark::kMillisecond)->UseRealTime();

// R = 2000, W = 100k (1.6 GB of counts): threads x strategy.
static void BM_SlashdotSketch(benchmark::State& state) {
  const SetCollection* g = slashdot();
  if (!g) return state.SkipWithError("soc-Slashdot0902.txt.gz not found");
  build_bench(state, *g, 2000, 100000, static_cast<int>(state.range(0)), kStrategies[state.range(1)]);
}
BENCHMARK(BM_SlashdotSketch)->ArgsProduct({{1, 2}, {0, 1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

// Queries: 2000 seeded query nodes' neighbour sets, one batch; time per query.
static void BM_SlashdotQuery(benchmark::State& state) {
  const SetCollection* g = slashdot();
  if (!g) return state.SkipWithError("soc-Slashdot0902.txt.gz not found");
  static std::unique_ptr<RaceSketch> sketch;
  if (!sketch) {
    sketch = std::make_unique<RaceSketch>(jaccard(2000), 100000);
    build_set_sketch(*sketch, *g);
  }
  const SetCollection q = sets_of_nodes(*g, choose_query_nodes(g->size(), 2000, 1));
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(sketch->query_sets(SetBatch{&q, 0, q.size()}).data());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["us/query"] = seconds * 1e6 / (2000.0 * static_cast<double>(state.iterations()));
}
BENCHMARK(BM_SlashdotQuery)->Unit(benchmark::kMillisecond)->UseRealTime();

// Exact f(q) for 2000 query nodes; range(0) = threads.
static void BM_SlashdotGroundTruth(benchmark::State& state) {
  const SetCollection* g = slashdot();
  if (!g) return state.SkipWithError("soc-Slashdot0902.txt.gz not found");
  const SetCollection in = transpose_sets(*g, g->size());
  const auto nodes = choose_query_nodes(g->size(), 2000, 1);
  for (auto _ : state)
    benchmark::DoNotOptimize(exact_jaccard_sums_nodes(*g, in, nodes, static_cast<int>(state.range(0))).data());
}
BENCHMARK(BM_SlashdotGroundTruth)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Google+-sized R-MAT (scale 17, edge factor 100, directed: 13.1M edge draws over 131k
// nodes, average out-degree ~100): R = 2000, W = 100k; threads x strategy.
static void BM_RmatGplusSketch(benchmark::State& state) {
  build_bench(state, rmat(17, 100.0, false), 2000, 100000, static_cast<int>(state.range(0)), kStrategies[state.range(1)]);
}
BENCHMARK(BM_RmatGplusSketch)->ArgsProduct({{1, 2}, {0}})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

static void BM_RmatGenerate(benchmark::State& state) {
  const auto scale = static_cast<unsigned>(state.range(0));
  for (auto _ : state) {
    const auto g = generate_rmat({.scale = scale, .edge_factor = 16, .seed = 7, .threads = static_cast<int>(state.range(1))});
    benchmark::DoNotOptimize(g.ids.data());
    state.counters["edges"] = static_cast<double>(g.ids.size());
  }
}
BENCHMARK(BM_RmatGenerate)->ArgsProduct({{20}, {1, 2}})->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Time per edge as the graph grows 16x (Graph500 R-MAT, edge factor 16, undirected: scale 16
// -> 20 is 1M -> 16.8M edge draws), R = 2000, W = 100k, two_phase, range(1) threads.
static void BM_RmatScaling(benchmark::State& state) {
  build_bench(state, rmat(static_cast<unsigned>(state.range(0)), 16.0, true), 2000, 100000, static_cast<int>(state.range(1)), "two_phase");
}
BENCHMARK(BM_RmatScaling)->ArgsProduct({{16, 18, 20}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

BENCHMARK_MAIN();
