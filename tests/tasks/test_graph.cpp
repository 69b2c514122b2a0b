// Graph tasks: exact Jaccard sums against brute force, query choice, relative error, R-MAT
// shape and determinism, graph sketches identical for any thread count and strategy, the
// sketch estimating the exact sums, and the CLI on an edge list.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/io/edge_list.hpp"
#include "privrace/lsh/families.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "privrace/tasks/graph.hpp"
#include "test_util.hpp"

using namespace privrace;

namespace {

// A random directed graph with a few hubs, some empty out-sets and self-loops.
SetCollection random_graph(std::size_t n, std::uint64_t seed, bool symmetric) {
  SeededRandom rng(seed);
  std::vector<std::uint64_t> edges;
  for (std::size_t u = 0; u < n; ++u) {
    if (rng.below(8) == 0) continue;  // empty out-set
    const std::size_t deg = u % 17 == 0 ? 40 + rng.below(40) : 1 + rng.below(8);
    for (std::size_t k = 0; k < deg; ++k) {
      const auto v = static_cast<std::uint32_t>(rng.below(4) == 0 ? rng.below(10) : rng.below(n));  // skew towards 0..9
      edges.push_back(pack_edge(static_cast<std::uint32_t>(u), v));
    }
  }
  EdgeListReport rep;
  return edges_to_sets(edges, n, symmetric, true, rep);
}

std::vector<double> brute_force(const SetCollection& g, const SetCollection& queries) {
  std::vector<double> f(queries.size(), 0.0);
  for (std::size_t q = 0; q < queries.size(); ++q)
    for (std::size_t u = 0; u < g.size(); ++u) f[q] += MinHash::jaccard(g.set(u), queries.set(q));
  return f;
}

}  // namespace

TEST(GraphGroundTruth, EqualsBruteForceDirectedAndSymmetric) {
  for (const bool symmetric : {false, true}) {
    const SetCollection g = random_graph(400, symmetric ? 2 : 1, symmetric);
    const SetCollection in = symmetric ? g : transpose_sets(g, g.size());
    std::vector<std::uint32_t> nodes(g.size());
    std::iota(nodes.begin(), nodes.end(), 0u);
    const auto exact = exact_jaccard_sums_nodes(g, in, nodes, 3);
    const auto brute = brute_force(g, sets_of_nodes(g, nodes));
    ASSERT_EQ(exact.size(), brute.size());
    for (std::size_t i = 0; i < exact.size(); ++i) EXPECT_NEAR(exact[i], brute[i], 1e-9) << "node " << i;
    // Arbitrary query sets too, including an empty one and ids no node links to.
    SetCollection q;
    q.push_back(std::vector<std::uint32_t>{});
    q.push_back(std::vector<std::uint32_t>{0, 1, 2, 3});
    q.push_back(std::vector<std::uint32_t>{5, 399});
    const auto e2 = exact_jaccard_sums(g, in, q, 1);
    const auto b2 = brute_force(g, q);
    for (std::size_t i = 0; i < e2.size(); ++i) EXPECT_NEAR(e2[i], b2[i], 1e-9);
  }
}

TEST(GraphGroundTruth, SameForAnyThreadCount) {
  const SetCollection g = random_graph(1000, 5, false);
  const SetCollection in = transpose_sets(g, g.size());
  const auto nodes = choose_query_nodes(g.size(), 300, 9);
  const auto one = exact_jaccard_sums_nodes(g, in, nodes, 1);
  EXPECT_EQ(one, exact_jaccard_sums_nodes(g, in, nodes, 2));
  EXPECT_EQ(one, exact_jaccard_sums_nodes(g, in, nodes, 3));
}

TEST(GraphQueries, SeededDistinctSorted) {
  const auto a = choose_query_nodes(82168, 2000, 1);
  EXPECT_EQ(a.size(), 2000u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::adjacent_find(a.begin(), a.end()), a.end());
  EXPECT_LT(a.back(), 82168u);
  EXPECT_EQ(a, choose_query_nodes(82168, 2000, 1));
  EXPECT_NE(a, choose_query_nodes(82168, 2000, 2));
  EXPECT_EQ(choose_query_nodes(5, 10, 1), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
  // Roughly uniform: the mean id is near the middle.
  const double mean = std::accumulate(a.begin(), a.end(), 0.0) / 2000.0;
  EXPECT_NEAR(mean, 82168 / 2.0, 82168 * 0.03);
}

TEST(Rmat, DegreeSkewDeterminismAndSymmetry) {
  const RmatOptions o{.scale = 14, .edge_factor = 16, .seed = 3, .threads = 1};
  EdgeListReport rep;
  const SetCollection g = generate_rmat(o, &rep);
  ASSERT_EQ(g.size(), 16384u);
  EXPECT_EQ(rep.edges, g.ids.size());
  // Same graph on more threads (fixed per-block streams).
  RmatOptions o2 = o;
  o2.threads = 3;
  const SetCollection g2 = generate_rmat(o2);
  EXPECT_EQ(g.ids, g2.ids);
  EXPECT_EQ(g.offsets, g2.offsets);
  // Undirected: v in N(u) iff u in N(v); no self-loops by default.
  const SetCollection t = transpose_sets(g, g.size());
  EXPECT_EQ(t.ids, g.ids);
  EXPECT_EQ(t.offsets, g.offsets);
  for (std::size_t u = 0; u < g.size(); ++u)
    for (const auto v : g.set(u)) ASSERT_NE(v, u);
  // Power-law skew: the top 1% of nodes hold a large share of the edges, the max degree is
  // far above the mean, and many nodes are isolated (Graph500 R-MAT at a = 0.57).
  std::vector<std::uint64_t> deg(g.size());
  for (std::size_t u = 0; u < g.size(); ++u) deg[u] = g.set(u).size();
  std::sort(deg.rbegin(), deg.rend());
  const double total = static_cast<double>(g.ids.size());
  const double top = std::accumulate(deg.begin(), deg.begin() + 164, 0.0);
  const double mean = total / static_cast<double>(g.size());
  EXPECT_GT(top / total, 0.15) << "top 1% share";
  EXPECT_GT(static_cast<double>(deg.front()), 30 * mean);
  EXPECT_GT(rep.empty_sets, g.size() / 20);
  EXPECT_GT(rep.duplicates, 0u);
  // A different seed gives a different graph; a directed one is not symmetric.
  EXPECT_NE(generate_rmat({.scale = 14, .edge_factor = 16, .seed = 4}).ids, g.ids);
  const SetCollection d = generate_rmat({.scale = 12, .edge_factor = 8, .seed = 3, .undirected = false});
  EXPECT_NE(transpose_sets(d, d.size()).ids, d.ids);
}

TEST(Rmat, RefusesWhatDoesNotFitWithTheEstimate) {
  try {
    generate_rmat({.scale = 28, .edge_factor = 16, .memory_limit = 1u << 30});
    FAIL() << "no error";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("MiB"), std::string::npos) << e.what();
  }
  // 2^28 edge draws (scale 24, edge factor 16), undirected: about 2.6 GB of CSR (not built here).
  EXPECT_LT(rmat_bytes({.scale = 24, .edge_factor = 16}), 2.7e9);
}

TEST(GraphSketch, CountsIdenticalForAnyThreadCountAndStrategy) {
  const SetCollection g = generate_rmat({.scale = 11, .edge_factor = 8, .seed = 5});
  const auto family = std::shared_ptr<const LshFamily>(make_family(FamilySpec{.kernel = Kernel::Jaccard, .rows = 96, .seed = 3}));
  RaceSketch ref(family, 500);
  build_set_sketch(ref, g, {.threads = 1});
  EXPECT_EQ(ref.total(), static_cast<std::int64_t>(96 * g.size()));
  for (const int threads : {2, 3}) {
    for (const std::string strategy : {"two_phase", "replicate", "split_rows"}) {
      RaceSketch s(family, 500);
      // A small chunk budget forces several chunks (and a partial last mini batch).
      const auto rep = build_set_sketch(s, g, {.threads = threads, .strategy = parse_build_strategy(strategy, Kernel::Jaccard), .chunk_bytes = 96 * 4 * 300});
      EXPECT_EQ(to_string(rep.strategy), strategy);
      EXPECT_TRUE(std::equal(s.counts().begin(), s.counts().end(), ref.counts().begin())) << threads << " " << strategy;
    }
  }
}

TEST(GraphSketch, EstimatesTheExactSums) {
  // Non-private sketch of a graph: the debiased mean over rows tracks the exact f(q).
  const SetCollection g = random_graph(3000, 8, true);
  const auto family = std::shared_ptr<const LshFamily>(make_family(FamilySpec{.kernel = Kernel::Jaccard, .rows = 400, .seed = 4}));
  RaceSketch s(family, 20000);
  build_set_sketch(s, g, {.threads = 2});
  const auto nodes = choose_query_nodes(g.size(), 200, 3);
  const SetCollection q = sets_of_nodes(g, nodes);
  const auto truth = exact_jaccard_sums(g, g, q);
  QueryOptions opts;
  opts.debias = true;
  const auto est = s.query_sets(SetBatch{&q, 0, q.size()}, opts);
  EXPECT_LT(privrace::testing::reference_mean_relative_error(est, truth), 0.15);
  // Batches of queries run in parallel: the answers do not depend on the thread count, and a
  // query answered alone equals the same query answered in a batch.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto serial = s.query_sets(SetBatch{&q, 0, q.size()}, opts);
  omp_set_num_threads(saved);
  EXPECT_EQ(serial, est);
  EXPECT_EQ(s.query_sets(SetBatch{&q, 150, 151}, opts).front(), est[150]);
}

namespace {
int run(const std::string& args, std::string* out = nullptr) {
  const std::string cmd = std::string(PRIVRACE_CLI) + " " + args + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string text;
  std::array<char, 4096> buf{};
  while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) text.append(buf.data(), n);
  const int status = pclose(pipe);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST(GraphCli, SketchAnEdgeListAndQuerySets) {
  const auto dir = privrace::testing::temp_dir("graph_cli");
  const SetCollection g = random_graph(500, 11, false);
  {
    std::ofstream f(dir / "g.txt");
    f << "# Directed graph\r\n";
    for (std::size_t u = 0; u < g.size(); ++u)
      for (const auto v : g.set(u)) f << u << "\t" << v << "\r\n";
    std::ofstream q(dir / "q.txt");
    q << "1 2 3\n\n7\n";
  }
  const std::string gp = (dir / "g.txt").string(), rsk = (dir / "g.rsk").string();
  ASSERT_EQ(run("sketch -i " + gp + " --format edgelist --kernel jaccard -R 64 -W 256 --no-privacy --seed 3 -q -o " + rsk), 0);
  nlohmann::json header;
  const RaceSketch s = load_sketch(rsk, &header);
  EXPECT_EQ(header["family"]["scheme"], "doph") << header.dump();
  // The records are the nodes with an out-neighbour (a node without one is not a record).
  std::size_t with_neighbours = 0;
  for (std::size_t u = 0; u < g.size(); ++u) with_neighbours += g.set(u).empty() ? 0 : 1;
  ASSERT_LT(with_neighbours, 500u) << "the graph should have nodes without out-neighbours";
  EXPECT_NEAR(s.n_hat(), static_cast<double>(with_neighbours), 1e-9);
  std::string out;
  ASSERT_EQ(run("query " + rsk + " --queries " + (dir / "q.txt").string() + " --kernel-sum", &out), 0);
  std::istringstream lines(out);
  std::vector<double> values;
  for (double v; lines >> v;) values.push_back(v);
  ASSERT_EQ(values.size(), 3u);
  // The CLI's estimates equal the library's on the same sketch.
  SetCollection q;
  q.push_back(std::vector<std::uint32_t>{1, 2, 3});
  q.push_back(std::vector<std::uint32_t>{});
  q.push_back(std::vector<std::uint32_t>{7});
  const auto lib = s.query_sets(SetBatch{&q, 0, 3});
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(values[i], lib[i], 1e-6 * std::max(1.0, lib[i]));
  // Bad usage and bad input.
  EXPECT_EQ(run("sketch -i " + gp + " --format edgelist --kernel l2 -R 4 -W 8 --no-privacy -q -o " + rsk), 2);
  EXPECT_EQ(run("sketch -i " + gp + " --undirected --kernel jaccard -R 4 -W 8 --no-privacy -q -o " + rsk), 2);
  {
    std::ofstream(dir / "bad.txt") << "0 1\n1 two\n";
  }
  EXPECT_EQ(run("sketch -i " + (dir / "bad.txt").string() + " --format edgelist --kernel jaccard -R 4 -W 8 --no-privacy -q -o " +
                (dir / "bad.rsk").string()),
            1);
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.rsk"));
  // Undirected + cache: the second run reads the cache and gives the same sketch.
  const std::string cache = (dir / "g.csr").string();
  for (const char* out : {"u0.rsk", "u1.rsk"})  // (no "u" + to_string(i): GCC 12's -Wrestrict false positive)
    ASSERT_EQ(run("sketch -i " + gp + " --format edgelist --undirected --graph-cache " + cache +
                  " --kernel jaccard -R 16 -W 64 --no-privacy --seed 5 -q -o " + (dir / out).string()),
              0);
  nlohmann::json h0, h1;
  const RaceSketch u0 = load_sketch((dir / "u0.rsk").string(), &h0), u1 = load_sketch((dir / "u1.rsk").string(), &h1);
  EXPECT_TRUE(std::equal(u0.counts().begin(), u0.counts().end(), u1.counts().begin()));
  EXPECT_FALSE(h0["graph"]["from_cache"].get<bool>()) << h0.dump();
  EXPECT_TRUE(h1["graph"]["from_cache"].get<bool>());
  EXPECT_TRUE(h1["graph"]["symmetrised"].get<bool>());
  std::filesystem::remove_all(dir);
}
