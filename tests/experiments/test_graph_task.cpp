// The graph experiment task end to end on a tiny edge list written here: config -> runner ->
// records with every metric; the cached ground truth equals a brute-force Jaccard sum.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "experiment.hpp"
#include "graph_task.hpp"
#include "privrace/core/error.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;
using namespace privrace::experiments;
using nlohmann::json;

namespace {

using privrace::testing::TempDir;
using privrace::testing::write;

// A small directed graph with communities, a self-loop, a duplicate and comment lines.
std::vector<std::pair<int, int>> tiny_edges() {
  std::vector<std::pair<int, int>> e;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 12; ++i)
      for (int j = 0; j < 12; ++j)
        if (i != j && (i * 7 + j * 3 + c) % 4 != 0) e.push_back({c * 12 + i, c * 12 + j});
  e.push_back({5, 20});
  e.push_back({30, 2});
  e.push_back({7, 7});  // self-loop
  e.push_back({5, 20});  // duplicate
  return e;
}

// A fake repository whose registry has one directed graph "tiny" that drops self-loops.
struct Repo {
  TempDir dir;
  Repo() {
    unsetenv("PRIVRACE_DATA");
    std::ostringstream g;
    g << "# tiny test graph\n# FromNodeId\tToNodeId\n";
    for (auto [u, v] : tiny_edges()) g << u << '\t' << v << "\r\n";
    write(root() / "datasets" / "tiny" / "tiny.txt", g.str());
    const json reg = {{"schema", 1},
                      {"datasets",
                       {{"tiny",
                         {{"kind", "graph"}, {"tasks", {"graph"}}, {"source_url", "test"}, {"format", "snap_edgelist"},
                          {"directed", true}, {"self_loops", "drop"},
                          {"files", {{{"path", "tiny/tiny.txt"}, {"role", "data"}, {"sha256", nullptr}, {"sha256_note", "test"}}}}}}}}};
    write(root() / "datasets" / "registry.json", reg.dump());
  }
  fs::path root() const { return dir.path / "repo"; }
  fs::path out() const { return dir.path / "results"; }
};

json config() {
  return json::parse(R"({
    "name": "t_graph",
    "task": {"type": "graph", "queries": 10, "query_seed": 2},
    "dataset": {"name": "tiny"},
    "metric": "mre",
    "methods": [{"name": "race_graph", "label": "RACE", "grid": {"rows": [200]}, "fixed": {"width": 64, "file_bytes": true}}],
    "epsilons": [1, 1000],
    "repetitions": 2,
    "seed": 5,
    "threads": 2
  })");
}

RunOptions options(const Repo& repo, const json& cfg) {
  const fs::path p = repo.dir.path / "cfg.json";
  write(p, cfg.dump(2));
  RunOptions o;
  o.config_path = p.string();
  o.repo_root = repo.root().string();
  o.out_dir = repo.out().string();
  o.threads = 2;
  o.print_summary = false;
  return o;
}

std::vector<json> records(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

double brute_jaccard_sum(const std::vector<std::set<int>>& n, int q) {
  double s = 0;
  for (const auto& a : n) {
    const auto& b = n[q];
    std::size_t inter = 0;
    for (int x : a) inter += b.count(x);
    const std::size_t uni = a.size() + b.size() - inter;
    s += uni == 0 ? 1.0 : static_cast<double>(inter) / static_cast<double>(uni);
  }
  return s;
}

}  // namespace

TEST(GraphTask, EndToEndRecordsAndExactTruth) {
  Repo repo;
  const auto report = run_experiment(options(repo, config()));
  EXPECT_EQ(report.cells_run, 4u);
  const auto recs = records(report.results_path);
  ASSERT_EQ(recs.size(), 4u);
  for (const auto& r : recs) {
    for (const char* m : {"mre", "mre_debiased", "mre_density"}) {
      ASSERT_TRUE(r.at("metrics").contains(m)) << m;
      // The density needs N-hat > 0; on 36 nodes at eps = 1 the noise can make it negative.
      const bool undefined = std::string(m) == "mre_density" && r.at("details").at("n_hat").get<double>() <= 0;
      EXPECT_TRUE(r.at("metrics").at(m).is_number() || undefined) << r.dump();
    }
    if (r.at("rep").get<int>() == 0 && r.at("epsilon").get<double>() == 1) {
      EXPECT_GT(r.at("details").at("sketch_file_bytes").get<double>(), 0);  // the .rsk written once
    }
    EXPECT_GT(r.at("build_seconds").get<double>(), 0);
    EXPECT_GT(r.at("query_seconds_per_query").get<double>(), 0);
    EXPECT_EQ(r.at("details").at("edges").get<int>(), static_cast<int>(tiny_edges().size()) - 2);  // minus loop, dup
    EXPECT_EQ(r.at("details").at("nodes").get<int>(), 36);
    EXPECT_TRUE(r.at("details").contains("build_strategy"));
    EXPECT_EQ(r.at("data").at("self_loops_seen").get<int>(), 1) << r.at("data").dump();
  }
  // eps = 1000 is nearly the exact counts: the error is the MinHash floor (R = 200: small).
  for (const auto& r : recs) {
    if (r.at("epsilon").get<double>() == 1000) {
      EXPECT_LT(r.at("metrics").at("mre").get<double>(), 0.3) << r.dump();
    }
  }

  // Ground truth against brute force on the same loaded graph.
  auto reg = DatasetRegistry::load_from_repo(repo.root().string());
  const auto cfg = parse_config(config(), "cfg.json", false, builtin_registry(), reg);
  RunEnvironment env;
  env.datasets = &reg;
  env.search.repo_root = repo.root().string();
  env.cache_dir = (repo.out() / "cache").string();
  env.threads = 2;
  const auto ctx_base = builtin_registry().task("graph")->prepare(cfg, env);
  const auto& ctx = dynamic_cast<const GraphContext&>(*ctx_base);
  EXPECT_TRUE(ctx.truth_cache_hit);  // written by the run above
  std::vector<std::set<int>> n(36);
  for (auto [u, v] : tiny_edges()) {
    if (u != v) n[u].insert(v);
  }
  ASSERT_EQ(ctx.truth.size(), 10u);
  for (std::size_t i = 0; i < ctx.query_nodes.size(); ++i)
    EXPECT_NEAR(ctx.truth[i], brute_jaccard_sum(n, static_cast<int>(ctx.query_nodes[i])), 1e-9) << "query " << ctx.query_nodes[i];
}

TEST(GraphTask, RmatSourceAndScalingMethod) {
  Repo repo;
  json cfg = json::parse(R"({
    "name": "t_scaling",
    "task": {"type": "graph", "source": "rmat", "directed": "undirected", "rmat_scale": 6, "rmat_edge_factor": 4,
             "queries": 5, "ground_truth": false},
    "dataset": {"name": "tiny"},
    "methods": [{"name": "race_graph_scaling", "label": "build", "grid": {"rmat_scale": [8, 9], "threads": [1, 2]},
                 "fixed": {"rows": 50, "width": 100, "edge_factor": 4}}],
    "epsilons": [1],
    "repetitions": 1,
    "threads": 2
  })");
  const auto report = run_experiment(options(repo, cfg));
  const auto recs = records(report.results_path);
  ASSERT_EQ(recs.size(), 4u);
  for (const auto& r : recs) {
    EXPECT_GT(r.at("details").at("edges").get<double>(), 0);
    EXPECT_GT(r.at("details").at("ns_per_edge").get<double>(), 0);
    EXPECT_TRUE(r.at("data").at("stand_in").get<bool>());
  }
  // race_graph without the ground truth is refused with the option to change.
  cfg["methods"] = json::parse(R"([{"name": "race_graph", "label": "RACE", "fixed": {"rows": 10, "width": 10}}])");
  cfg["name"] = "t_scaling2";
  EXPECT_THROW(run_experiment(options(repo, cfg)), Error);
}
