// A graph data set whose file is absent runs on an R-MAT stand-in with the registry's node and
// edge counts, recorded as a stand-in; with stand-ins off, or no size in the registry, it is
// an error naming the file.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <tuple>

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

json graph_entry(bool directed, json nodes, json edges) {
  json e = {{"kind", "graph"}, {"tasks", {"graph"}}, {"source_url", "test"}, {"format", "snap_edgelist"},
            {"directed", directed}, {"self_loops", "keep"},
            {"files", {{{"path", "g/absent.txt.gz"}, {"role", "data"}, {"sha256", nullptr}, {"sha256_note", "test"}}}}};
  if (!nodes.is_null()) e["nodes"] = nodes;
  if (!edges.is_null()) e["edges"] = edges;
  return e;
}

struct Repo {
  TempDir dir;
  Repo() {
    unsetenv("PRIVRACE_DATA");
    const json reg = {{"schema", 1},
                      {"datasets",
                       {{"dir_graph", graph_entry(true, 3000, 20000)},
                        {"undir_graph", graph_entry(false, 5000, 15000)},
                        {"unsized", graph_entry(true, nullptr, nullptr)}}}};
    write(dir.path / "repo" / "datasets" / "registry.json", reg.dump());
  }
  std::string root() const { return (dir.path / "repo").string(); }
};

// The context keeps pointers to the config: all three live together.
struct Prepared {
  DatasetRegistry reg;
  std::unique_ptr<ExperimentConfig> cfg;
  std::unique_ptr<TaskContext> ctx;
  const GraphContext& graph() const { return dynamic_cast<const GraphContext&>(*ctx); }
};

std::unique_ptr<Prepared> prepare(const Repo& repo, const std::string& name, bool allow_stand_in) {
  const json cfg_json = {{"name", "t_" + name},
                         {"task", {{"type", "graph"}, {"queries", 20}, {"query_seed", 3}}},
                         {"dataset", {{"name", name}}},
                         {"metric", "mre"},
                         {"methods", {{{"name", "race_graph"}, {"label", "RACE"}, {"fixed", {{"rows", 10}, {"width", 10}}}}}},
                         {"epsilons", {1}},
                         {"repetitions", 1},
                         {"seed", 5},
                         {"threads", 2}};
  auto p = std::make_unique<Prepared>();
  p->reg = DatasetRegistry::load_from_repo(repo.root());
  p->cfg = std::make_unique<ExperimentConfig>(parse_config(cfg_json, "cfg.json", false, builtin_registry(), p->reg));
  RunEnvironment env;
  env.datasets = &p->reg;
  env.search.repo_root = repo.root();
  env.search.allow_stand_in = allow_stand_in;
  env.cache_dir = (repo.dir.path / "cache").string();
  env.threads = 2;
  p->ctx = builtin_registry().task("graph")->prepare(*p->cfg, env);
  return p;
}

}  // namespace

TEST(GraphStandIn, AbsentGraphIsAnRmatGraphOfTheRegistrySize) {
  Repo repo;
  for (const auto& [name, directed, nodes, edges] :
       {std::tuple{"dir_graph", true, 3000u, 20000u}, std::tuple{"undir_graph", false, 5000u, 15000u}}) {
    SCOPED_TRACE(name);
    const auto prepared = prepare(repo, name, true);
    const auto& ctx = prepared->graph();
    EXPECT_TRUE(ctx.data.stand_in);
    EXPECT_NE(ctx.data.stand_in_reason.find("g/absent.txt.gz"), std::string::npos) << ctx.data.stand_in_reason;
    EXPECT_EQ(ctx.nodes, nodes);
    // Directed: stored neighbours; undirected: each pair stored twice (self-loops once).
    const auto made = ctx.data_summary.at("source_detail").at("rmat").at("edges").get<double>();
    EXPECT_LE(std::abs(made - edges), 0.01 * edges) << ctx.data_summary.dump();
    const double stored = static_cast<double>(ctx.edges);
    EXPECT_LE(std::abs(stored - (directed ? 1.0 : 2.0) * edges), (directed ? 0.01 : 0.03) * edges) << stored;
    EXPECT_TRUE(ctx.data_summary.at("stand_in").get<bool>());
    EXPECT_EQ(ctx.data_summary.at("source").get<std::string>(), "rmat");
    EXPECT_EQ(ctx.data_summary.at("directed").get<bool>(), directed);
    EXPECT_EQ(ctx.truth.size(), 20u);
    // Seeded: the same graph again.
    const auto again = prepare(repo, name, true);
    EXPECT_EQ(again->graph().sets.ids, ctx.sets.ids);
  }
}

TEST(GraphStandIn, ErrorWhenStandInsAreOffOrTheRegistryGivesNoSize) {
  Repo repo;
  const auto message = [&](const std::string& name, bool allow) -> std::string {
    try {
      prepare(repo, name, allow);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string off = message("dir_graph", false);
  EXPECT_NE(off.find("g/absent.txt.gz"), std::string::npos) << off;
  EXPECT_NE(off.find("datasets/fetch.sh dir_graph"), std::string::npos) << off;
  const std::string unsized = message("unsized", true);
  EXPECT_NE(unsized.find("\"nodes\""), std::string::npos) << unsized;
}
