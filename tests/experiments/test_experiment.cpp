// The experiment runner: config validation messages, grid expansion, resume, repair of a
// killed run, results/CSV/summary files, the ground-truth cache, and the stand-in label.
// Runs use a throw-away repository root whose registry has one small, absent data set, so
// every run takes the stand-in path and finishes in well under a second.
#include <gtest/gtest.h>
#include <omp.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>
#include <chrono>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cost_estimate.hpp"
#include "experiment.hpp"
#include "kde_task.hpp"
#include "runner.hpp"
#include "shared_work.hpp"
#include "privrace/core/version.hpp"
#include "privrace/core/error.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace privrace;
using namespace privrace::experiments;
using nlohmann::json;

namespace {

using privrace::testing::TempDir;
using privrace::testing::write;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<json> read_records(const fs::path& p) {
  std::vector<json> out;
  std::istringstream in(read(p));
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));  // throws if corrupt
  return out;
}

// A fake repository: datasets/registry.json with one absent 2-D data set.
struct Repo {
  TempDir dir;
  std::string saved_env;
  bool had_env = false;
  Repo() {
    if (const char* e = std::getenv("PRIVRACE_DATA")) {
      had_env = true;
      saved_env = e;
    }
    unsetenv("PRIVRACE_DATA");
    const json reg = {{"schema", 1},
                      {"datasets",
                       {{"tiny",
                         {{"kind", "table"}, {"source_url", "test"}, {"format", "csv"}, {"rows", 3000}, {"columns", 2},
                          {"files", {{{"path", "tiny/tiny.csv"}, {"sha256", nullptr}, {"sha256_note", "test"}}}},
                          {"features", {1, 2}}, {"label", nullptr}, {"bounds", {{0, 1}, {0, 1}}},
                          {"preprocessing", {{"scale", "none"}}}}}}}};
    write(root() / "datasets" / "registry.json", reg.dump());
  }
  ~Repo() {
    if (had_env) setenv("PRIVRACE_DATA", saved_env.c_str(), 1);
  }
  fs::path root() const { return dir.path / "repo"; }
  fs::path out() const { return dir.path / "results"; }
  DatasetRegistry datasets() const { return DatasetRegistry::load_from_repo(root().string()); }
};

json base_config() {
  return json::parse(R"({
    "name": "t_kde",
    "task": {"type": "kde", "kernel": "l2", "bandwidth": 0.3, "queries": 200},
    "dataset": {"name": "tiny"},
    "metric": "mre",
    "methods": [{"name": "race", "label": "RACE", "grid": {"rows": [20, 50]}, "fixed": {"width": 100}}],
    "epsilons": [0.1, 10],
    "repetitions": 2,
    "seed": 3,
    "threads": 1,
    "quick": {"repetitions": 1, "epsilons": [10], "grids": {"RACE": {"rows": [20]}}}
  })");
}

std::string config_error(const json& j, const Repo& repo) {
  try {
    parse_config(j, "configs/x.json", false, builtin_registry(), repo.datasets());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(valid)";
}

RunOptions options(const Repo& repo, const fs::path& config) {
  RunOptions o;
  o.config_path = config.string();
  o.repo_root = repo.root().string();
  o.out_dir = repo.out().string();
  o.threads = 1;
  o.print_summary = false;
  return o;
}

// The records of a full run of `config` into OUT, by key, with work shared across groups
// (`share`) or made again for every group (PRIVRACE_SHARE_WORK=0), on `threads` threads split
// among `jobs` concurrent groups.
std::map<std::string, json> records_by_key(const Repo& repo, const fs::path& config, const std::string& out, bool share,
                                           int threads = 1, int jobs = 1) {
  if (share) unsetenv("PRIVRACE_SHARE_WORK");
  else setenv("PRIVRACE_SHARE_WORK", "0", 1);
  RunOptions o = options(repo, config);
  o.out_dir = (repo.dir.path / out).string();
  o.threads = threads;
  o.jobs = jobs;
  const auto report = run_experiment(o);
  unsetenv("PRIVRACE_SHARE_WORK");
  std::map<std::string, json> by_key;
  for (const json& r : read_records(report.results_path)) by_key[r.at("key").get<std::string>()] = r;
  return by_key;
}

fs::path write_config(const Repo& repo, const json& j, const std::string& name = "cfg.json") {
  const fs::path p = repo.dir.path / name;
  write(p, j.dump(2));
  return p;
}

// Algorithm 7 on a small generated population: 2 m x the sets x 3 radii x 2 epsilons x 2 repetitions.
json compressed_regression_config(const std::vector<std::string>& sets) {
  json j = json::parse(R"({
    "name": "t_highdim",
    "task": {"type": "ldp_highdim", "d": 40, "sparsity": 3, "nonzeros": 2, "popular": 6, "popular_mass": 0.5,
             "noise_sd": 0.1, "data_seed": 2},
    "dataset": {"name": "tiny"},
    "metric": "excess_risk",
    "selection": "all",
    "methods": [{"name": "ldp_compressed", "label": "Compressed",
                 "grid": {"players": [3000], "m": [4, 8], "radius": [0.5, 1, 2]}}],
    "epsilons": [1, 4],
    "repetitions": 2,
    "seed": 11,
    "threads": 1
  })");
  j["methods"][0]["grid"]["set"] = sets;
  return j;
}

}  // namespace

TEST(ExperimentConfig, ValidConfigExpands) {
  Repo repo;
  const auto cfg = parse_config(base_config(), "x.json", false, builtin_registry(), repo.datasets());
  EXPECT_EQ(cfg.methods.size(), 1u);
  const auto points = cfg.methods[0].expand();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].at("width"), 100);
  EXPECT_EQ(points[0].at("mechanism"), "discrete_laplace");  // defaults filled in
  EXPECT_EQ(cfg.epsilons, (std::vector<double>{0.1, 10}));
  const auto quick = parse_config(base_config(), "x.json", true, builtin_registry(), repo.datasets());
  EXPECT_EQ(quick.repetitions, 1);
  EXPECT_EQ(quick.methods[0].expand().size(), 1u);
  EXPECT_NE(quick.fingerprint(), cfg.fingerprint());
}

TEST(ExperimentConfig, LogspaceEpsilonsAreCanonical) {
  Repo repo;
  json j = base_config();
  j["epsilons"] = {{"logspace", {{"from", 1e-4}, {"to", 10}, {"count", 11}}}};
  const auto cfg = parse_config(j, "x.json", false, builtin_registry(), repo.datasets());
  ASSERT_EQ(cfg.epsilons.size(), 11u);
  EXPECT_EQ(cfg.epsilons.front(), 1e-4);
  EXPECT_EQ(cfg.epsilons[1], 0.000316227766017);  // half decades, 12 significant digits
  EXPECT_EQ(cfg.epsilons[6], 0.1);
  EXPECT_EQ(cfg.epsilons.back(), 10.0);
  EXPECT_EQ(cell_key("R", json{{"rows", 1}}, 0.1, 0), "R|{\"rows\":1}|eps=0.1|rep=0");
}

TEST(ExperimentConfig, ErrorsNameTheJsonPath) {
  Repo repo;
  json j = base_config();
  j.erase("epsilons");
  EXPECT_EQ(config_error(j, repo), "configs/x.json: $.epsilons: missing (required)");

  j = base_config();
  j["methods"][0]["grid"]["rows"] = {100, "many"};
  EXPECT_EQ(config_error(j, repo), "configs/x.json: $.methods[0].grid.rows: expected an array of positive integers");

  j = base_config();
  j["methods"].push_back({{"name", "race"}, {"label", "R2"}, {"grid", {{"rows", 5}}}});
  EXPECT_EQ(config_error(j, repo), "configs/x.json: $.methods[1].grid.rows: expected an array of positive integers");

  j = base_config();
  j["methods"][0]["name"] = "kme_typo";
  EXPECT_NE(config_error(j, repo).find("$.methods[0].name: unknown method 'kme_typo'"), std::string::npos);

  j = base_config();
  j["dataset"]["name"] = "skinn";
  EXPECT_NE(config_error(j, repo).find("$.dataset.name: unknown data set 'skinn' (known: tiny)"), std::string::npos);

  j = base_config();
  j["repetitions"] = "ten";
  EXPECT_EQ(config_error(j, repo), "configs/x.json: $.repetitions: expected a positive integer");

  j = base_config();
  j["task"]["bandwith"] = 5;
  EXPECT_NE(config_error(j, repo).find("$.task.bandwith: unknown key"), std::string::npos);

  j = base_config();
  j["methods"][0]["fixed"]["mechanism"] = "laplace";
  EXPECT_NE(config_error(j, repo).find("$.methods[0].fixed.mechanism: expected one of discrete_laplace"), std::string::npos);

  j = base_config();
  j["methods"][0].erase("grid");
  EXPECT_NE(config_error(j, repo).find("$.methods[0].grid.rows: missing"), std::string::npos);

  j = base_config();
  j["metric"] = "accuracy";
  EXPECT_NE(config_error(j, repo).find("$.metric:"), std::string::npos);

  j = base_config();
  j["task"]["type"] = "sorting";
  EXPECT_NE(config_error(j, repo).find("$.task.type: unknown task 'sorting'"), std::string::npos);

  j = base_config();
  j["quick"]["grids"]["NOPE"] = json::object();
  EXPECT_NE(config_error(j, repo).find("$.quick.grids.NOPE"), std::string::npos);
}

// A method's own "repetitions": fewer than the config's, never more; the quick section's
// repetitions cap it; the runner runs exactly that many; bad values name their path.
TEST(ExperimentConfig, MethodRepetitionsAreBoundedAndRun) {
  Repo repo;
  json j = base_config();
  j["repetitions"] = 3;
  j["quick"]["repetitions"] = 2;
  j["methods"].push_back({{"name", "race"}, {"label", "RACE-once"}, {"fixed", {{"rows", 20}, {"width", 100}}},
                          {"repetitions", 1}});
  j["methods"].push_back({{"name", "race"}, {"label", "RACE-three"}, {"fixed", {{"rows", 20}, {"width", 100}}},
                          {"repetitions", 3}});
  const auto full = parse_config(j, "x.json", false, builtin_registry(), repo.datasets());
  EXPECT_EQ(full.methods[0].repetitions, 3);  // no key: the config's
  EXPECT_EQ(full.methods[1].repetitions, 1);
  EXPECT_EQ(full.methods[2].repetitions, 3);
  const auto quick = parse_config(j, "x.json", true, builtin_registry(), repo.datasets());
  EXPECT_EQ(quick.methods[0].repetitions, 2);
  EXPECT_EQ(quick.methods[1].repetitions, 1);
  EXPECT_EQ(quick.methods[2].repetitions, 2);  // capped by the quick section

  // Cells: RACE 2 grid points x 2 eps x 3 reps + 1 x 2 x 1 + 1 x 2 x 3 = 20.
  const auto report = run_experiment(options(repo, write_config(repo, j)));
  EXPECT_EQ(report.cells_total, 20u);
  std::map<std::string, std::set<int>> reps;
  for (const auto& r : read_records(report.results_path)) {
    const std::string key = r.at("key").get<std::string>();
    reps[r.at("label").get<std::string>()].insert(std::stoi(key.substr(key.rfind("rep=") + 4)));
  }
  EXPECT_EQ(reps["RACE"], (std::set<int>{0, 1, 2}));
  EXPECT_EQ(reps["RACE-once"], (std::set<int>{0}));
  EXPECT_EQ(reps["RACE-three"], (std::set<int>{0, 1, 2}));

  json bad = j;
  bad["methods"][1]["repetitions"] = 4;
  EXPECT_EQ(config_error(bad, repo),
            "configs/x.json: $.methods[1].repetitions: expected at most $.repetitions (3); a method may run fewer "
            "repetitions than the config, not more");
  bad["methods"][1]["repetitions"] = 0;
  EXPECT_EQ(config_error(bad, repo), "configs/x.json: $.methods[1].repetitions: expected a positive integer");
  bad["methods"][1]["repetitions"] = "one";
  EXPECT_EQ(config_error(bad, repo), "configs/x.json: $.methods[1].repetitions: expected a positive integer");
}

// A quick grid entry replaces the full run's fixed value of that parameter.
TEST(ExperimentConfig, QuickGridReplacesAFixedValue) {
  Repo repo;
  json j = base_config();
  j["quick"]["grids"]["RACE"] = {{"width", {50}}};
  const auto full = parse_config(j, "x.json", false, builtin_registry(), repo.datasets());
  EXPECT_EQ(full.methods[0].expand().at(0).at("width"), 100);
  const auto quick = parse_config(j, "x.json", true, builtin_registry(), repo.datasets());
  const auto points = quick.methods[0].expand();
  ASSERT_EQ(points.size(), 2u);  // rows still from the full grid
  EXPECT_EQ(points[0].at("width"), 50);
}

TEST(ExperimentConfig, NotJsonGivesLineAndColumn) {
  Repo repo;
  const fs::path p = repo.dir.path / "broken.json";
  write(p, "{\n  \"name\": \"x\",\n  \"task\": {\"type\": \"kde\",}\n}\n");
  try {
    load_config(p.string(), false, builtin_registry(), repo.datasets());
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(p.string() + ":3:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  }
}

TEST(ExperimentRun, RecordsAreCompleteAndLabelledAsStandIn) {
  Repo repo;
  const auto report = run_experiment(options(repo, write_config(repo, base_config())));
  EXPECT_EQ(report.cells_total, 8u);  // 2 rows x 2 eps x 2 reps
  EXPECT_EQ(report.cells_run, 8u);
  EXPECT_TRUE(report.stand_in);
  const auto records = read_records(report.results_path);
  ASSERT_EQ(records.size(), 8u);
  for (const auto& r : records) {
    for (const char* key : {"config", "dataset", "stand_in", "method", "params", "epsilon", "rep", "seed", "metrics",
                            "build_seconds", "query_seconds_per_query", "threads", "git_commit", "key", "selection"})
      EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_TRUE(r.at("stand_in").get<bool>());
    EXPECT_EQ(r.at("config"), "t_kde");
    EXPECT_EQ(r.at("threads"), 1);
    EXPECT_TRUE(r.at("metrics").at("mre").is_number());
    EXPECT_TRUE(r.at("metrics").at("mre_debiased").is_number());
    EXPECT_EQ(r.at("git_commit"), privrace::git_commit());
  }
  // Every record's key is distinct, and the seed depends on (params, rep), not on epsilon.
  std::set<std::string> keys;
  for (const auto& r : records) keys.insert(r.at("key").get<std::string>());
  EXPECT_EQ(keys.size(), 8u);
  // CSV: header + one row per record; exactly one grid point is best at each epsilon.
  const std::string csv = read(report.csv_path);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  EXPECT_NE(csv.find("param_rows"), std::string::npos);
  const json summary = json::parse(read(report.summary_path));
  int best = 0;
  for (const auto& row : summary.at("rows")) best += row.at("best_over_grid").get<bool>() ? 1 : 0;
  EXPECT_EQ(best, 2);  // one per epsilon
  EXPECT_TRUE(summary.at("stand_in").get<bool>());
  // The ground truth was cached.
  std::size_t cached = 0;
  for (const auto& e : fs::directory_iterator(repo.out() / "cache")) cached += e.path().extension() == ".bin";
  EXPECT_EQ(cached, 1u);
}

TEST(ExperimentRun, RerunSkipsFinishedCellsAndReproduces) {
  Repo repo;
  const auto cfg = write_config(repo, base_config());
  const auto first = run_experiment(options(repo, cfg));
  const std::string before = read(first.results_path);
  const auto a = read_records(first.results_path);
  const auto second = run_experiment(options(repo, cfg));
  EXPECT_EQ(second.cells_skipped, 8u);
  EXPECT_EQ(second.cells_run, 0u);
  EXPECT_EQ(read(second.results_path), before);
  // Extending the sweep (another epsilon) runs only the new cells.
  json j = base_config();
  j["epsilons"] = {0.1, 1, 10};
  const auto third = run_experiment(options(repo, write_config(repo, j, "more.json")));
  EXPECT_EQ(third.cells_skipped, 8u);
  EXPECT_EQ(third.cells_run, 4u);
  // Same seeds give the same metrics: rerun into a fresh directory and compare one cell.
  RunOptions o = options(repo, cfg);
  o.out_dir = (repo.dir.path / "again").string();
  const auto fresh = run_experiment(o);
  const auto b = read_records(fresh.results_path);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].at("key"), b[i].at("key"));
    EXPECT_EQ(a[i].at("metrics"), b[i].at("metrics"));
  }
}

TEST(ExperimentRun, SharedWorkAcrossRepetitionsLeavesRecordsUnchanged) {
  // Bernstein's exact lattice and PrivBayes's binned table and scores are kept from one
  // repetition (and sample size) to the next; remaking them per group (PRIVRACE_SHARE_WORK=0)
  // must give the same seeded records, over several epsilons and repetitions.
  Repo repo;
  json j = base_config();
  j["methods"] = json::parse(R"([
    {"name": "bernstein", "label": "Bernstein", "grid": {"degree": [3, 5]}},
    {"name": "privbayes", "label": "PrivBayes", "grid": {"degree": [1, 2], "samples": [300, 600]}, "fixed": {"bins": 8}}])");
  j["epsilons"] = {0.5, 2.0, 8.0};
  j["repetitions"] = 3;
  j.erase("quick");
  const auto cfg = write_config(repo, j);
  const auto shared = records_by_key(repo, cfg, "shared", true), fresh = records_by_key(repo, cfg, "fresh", false);
  ASSERT_EQ(shared.size(), 2u * 3 * 3 + 4u * 3 * 3);
  ASSERT_EQ(shared.size(), fresh.size());
  std::size_t later_reps_with_shared_scores = 0;
  for (const auto& [key, a] : shared) {
    const json& b = fresh.at(key);
    EXPECT_EQ(a.at("metrics"), b.at("metrics")) << key;
    EXPECT_EQ(a.at("noise_seed"), b.at("noise_seed")) << key;
    if (a.at("label") == "PrivBayes") {
      EXPECT_EQ(a.at("details").at("network_parents"), b.at("details").at("network_parents")) << key;
      if (a.at("rep").get<int>() > 0 && a.at("details").at("scores_computed").get<int>() == 0) ++later_reps_with_shared_scores;
    }
  }
  EXPECT_GT(later_reps_with_shared_scores, 0u);  // sharing did happen
  // The making is recorded by the cell that carried it: shared, rep 0's first cell (for
  // PrivBayes only the first sample size: its table serves both); remade, every group's first
  // cell; never a later cell.
  for (const auto* run_records : {&shared, &fresh})
    for (const auto& [key, r] : *run_records) {
      const double made = r.at("shared_work_seconds").get<double>();
      const bool first = r.at("first_of_group").get<bool>(), rep0 = r.at("rep").get<int>() == 0;
      const bool reused_table = r.at("label") == "PrivBayes" && r.at("params").at("samples") == 600;
      if (first && (run_records == &fresh || (rep0 && !reused_table))) {
        EXPECT_GT(made, 0.0) << key;
      } else {
        EXPECT_EQ(made, 0.0) << key;
      }
      EXPECT_LE(made, r.at("wall_seconds").get<double>()) << key;
    }
}

// Algorithm 7 (ldp_highdim): the radii of one (set, players, m, repetition, epsilon) are fitted
// from one collection of reports. Collecting again for every cell (PRIVRACE_SHARE_WORK=0) gives
// the same records; the first radius makes the collection, the others reuse it; cells that differ
// only in the radius carry the same collection seed, and other cells different ones.
TEST(ExperimentRun, CompressedRegressionRadiiShareOneCollectionWithoutChangingRecords) {
  Repo repo;
  const json j = compressed_regression_config({"l1_ball", "simplex"});
  const auto cfg = write_config(repo, j);
  const auto shared = records_by_key(repo, cfg, "shared", true), fresh = records_by_key(repo, cfg, "fresh", false);
  ASSERT_EQ(shared.size(), 2u * 2 * 3 * 2 * 2);
  ASSERT_EQ(shared.size(), fresh.size());
  std::map<std::string, std::set<std::string>> seeds_by_collection;  // (set, m, rep, eps) -> seeds
  std::set<std::string> all_seeds;
  std::size_t made = 0, reused = 0;
  for (const auto& [key, a] : shared) {
    const json& b = fresh.at(key);
    EXPECT_EQ(a.at("metrics"), b.at("metrics")) << key;
    const json& d = a.at("details");
    EXPECT_EQ(d.at("collection_seed"), b.at("details").at("collection_seed")) << key;
    EXPECT_EQ(b.at("details").at("collection"), "made by this cell") << key;
    const bool first_radius = a.at("params").at("radius").get<double>() == 0.5;
    EXPECT_EQ(d.at("collection"), first_radius ? "made by this cell" : "reused: collected for another radius") << key;
    (first_radius ? made : reused) += 1;
    const std::string collection = a.at("params").at("set").dump() + a.at("params").at("m").dump() + "|" +
                                   a.at("rep").dump() + "|" + a.at("epsilon").dump();
    seeds_by_collection[collection].insert(d.at("collection_seed").get<std::string>());
    all_seeds.insert(d.at("collection_seed").get<std::string>());
    EXPECT_TRUE(std::isfinite(a.at("metrics").at("excess_risk").get<double>())) << key;
  }
  EXPECT_EQ(made, 16u);
  EXPECT_EQ(reused, 32u);
  // The population and each radius's optimum serve every repetition: their making is charged
  // (shared_work_seconds) to a cell of repetition 0, never to a later repetition's.
  std::size_t rep0_charged = 0;
  for (const auto& [key, a] : shared) {
    const double w = a.at("shared_work_seconds").get<double>();
    if (a.at("rep").get<int>() > 0) EXPECT_EQ(w, 0.0) << key;
    else rep0_charged += w > 0;
  }
  EXPECT_GE(rep0_charged, 6u);  // at least one per (set, radius)
  EXPECT_EQ(seeds_by_collection.size(), 16u);
  for (const auto& [collection, seeds] : seeds_by_collection) EXPECT_EQ(seeds.size(), 1u) << collection;
  EXPECT_EQ(all_seeds.size(), 16u);
}

// --jobs: groups run two at a time, each on one of the two threads, give the records of one job
// on both threads (the methods' results do not depend on their thread count), with work shared
// across repetitions (Bernstein's lattice, PrivBayes's scores) made once per parameter point
// whichever worker asks first, and Algorithm 7's collections shared by the radii. Records say
// the threads their group had and the jobs beside it; more jobs than threads are refused.
TEST(SharedWork, IsMadeOnTheRunsThreadsAndTheGroupGetsItsOwnBack) {
  TaskContext ctx;
  ctx.threads = 1;
  ctx.run_threads = 3;
  const int outer = omp_get_max_threads();
  omp_set_num_threads(1);
  take_shared_work_seconds();
  take_shared_work_threads();
  const SharedWork<int> cache;
  const auto made = cache.get(ctx, json{{"degree", 4}}, [] { return omp_get_max_threads(); });
  EXPECT_EQ(*made.first, 3);             // made on every thread of the run
  EXPECT_EQ(omp_get_max_threads(), 1);   // and the worker's group has its one thread back
  EXPECT_EQ(take_shared_work_threads(), 3);
  EXPECT_GE(take_shared_work_seconds(), 0.0);
  const auto reused = cache.get(ctx, json{{"degree", 4}}, [] { return -1; });
  EXPECT_EQ(*reused.first, 3);
  EXPECT_EQ(take_shared_work_threads(), 0);  // nothing made: nothing to price
  {
    const SharedWorkTimer timer(2);
    EXPECT_EQ(omp_get_max_threads(), 2);
  }
  EXPECT_EQ(omp_get_max_threads(), 1);
  EXPECT_EQ(take_shared_work_threads(), 2);
  omp_set_num_threads(outer);
}

// RecentObjects (the LDP tasks' populations): past its capacity it drops the least recently
// used, never the object just made, whatever order the keys sort in. The walk is ldp_smooth's:
// sources and sizes in turn, the largest made last and asked for again by the next group.
TEST(SharedWork, RecentObjectsDropTheLeastRecentlyUsedNotTheSmallestKey) {
  RecentObjects<std::pair<std::string, int>, int> kept(3);
  int made = 0;
  const auto get = [&](const std::string& source, int n) {
    if (auto found = kept.find({source, n})) return *found;
    ++made;
    kept.put({source, n}, std::make_shared<const int>(n));
    return n;
  };
  for (const int n : {4, 5, 6, 7})
    for (const std::string source : {"generated", "real"}) EXPECT_EQ(get(source, n), n);
  EXPECT_EQ(made, 8);
  EXPECT_EQ(kept.size(), 3u);
  // Held now: ("real", 6), ("generated", 7), ("real", 7). Each step: the key asked for and the
  // makings so far. ("generated", 7) sorts before every "real" key and is still held; a fourth
  // key drops the least recently used, and the keys used since it stay.
  const struct {
    const char* source;
    int n, made;
  } steps[] = {{"generated", 7, 8}, {"real", 7, 8},       // both held
               {"generated", 6, 9},                        // drops ("real", 6)
               {"real", 7, 9},      {"generated", 7, 9},   // still held
               {"real", 6, 10},                            // made again; drops ("generated", 6)
               {"generated", 7, 10}, {"real", 7, 10}, {"generated", 6, 11}};
  for (const auto& step : steps) {
    EXPECT_EQ(get(step.source, step.n), step.n);
    EXPECT_EQ(made, step.made) << step.source << " " << step.n;
    EXPECT_LE(kept.size(), 3u);
  }
}

// MadeOnce (Algorithm 7's collections): two workers make two keys at the same time (each
// making waits until the other's has started: made one after the other, the first would time
// out); a worker asking for a key being made waits, gets the same object and notes the wait;
// a failed making reaches its waiter and leaves no entry; the oldest scope is dropped.
namespace {
bool wait_for_flag(const std::atomic<bool>& flag) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}
}  // namespace

TEST(MadeOnce, DifferentKeysAreMadeAtTheSameTime) {
  const MadeOnce<int> once(2);
  std::atomic<bool> a_started{false}, b_started{false};
  bool a_saw_b = false, b_saw_a = false;
  std::thread other([&] {
    once.get("scope", "b", [&] {
      b_started = true;
      b_saw_a = wait_for_flag(a_started);
      return 2;
    });
  });
  const auto a = once.get("scope", "a", [&] {
    a_started = true;
    a_saw_b = wait_for_flag(b_started);
    return 1;
  });
  other.join();
  EXPECT_TRUE(a_saw_b);
  EXPECT_TRUE(b_saw_a);
  EXPECT_EQ(*a.first, 1);
  EXPECT_TRUE(a.second);
}

TEST(MadeOnce, AKeyBeingMadeIsWaitedForAndMadeOnce) {
  const MadeOnce<int> once(2);
  std::atomic<bool> making{false}, release{false};
  std::atomic<int> makings{0};
  std::pair<std::shared_ptr<const int>, bool> first;
  std::thread maker([&] {
    first = once.get("scope", "k", [&] {
      ++makings;
      making = true;
      wait_for_flag(release);
      return 7;
    });
  });
  ASSERT_TRUE(wait_for_flag(making));
  take_waited_seconds();
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  const auto second = once.get("scope", "k", [&] {
    ++makings;
    return -1;
  });
  maker.join();
  releaser.join();
  EXPECT_EQ(makings.load(), 1);
  EXPECT_TRUE(first.second);
  EXPECT_FALSE(second.second);
  EXPECT_EQ(first.first.get(), second.first.get());  // the same object
  EXPECT_GT(take_waited_seconds(), 0.01);            // the wait is noted, to be left unpriced
  const auto third = once.get("scope", "k", [] { return -1; });
  EXPECT_FALSE(third.second);
  EXPECT_EQ(*third.first, 7);
  EXPECT_EQ(take_waited_seconds(), 0.0);  // ready: nothing waited
}

TEST(MadeOnce, AFailedMakingReachesItsWaiterAndIsMadeAgainLater) {
  const MadeOnce<int> once(2);
  std::atomic<bool> making{false}, release{false};
  std::thread maker([&] {
    EXPECT_THROW(once.get("scope", "k",
                          [&]() -> int {
                            making = true;
                            wait_for_flag(release);
                            throw std::runtime_error("no collection");
                          }),
                 std::runtime_error);
  });
  ASSERT_TRUE(wait_for_flag(making));
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  EXPECT_THROW(once.get("scope", "k", [] { return -1; }), std::runtime_error);  // waited, then the maker's error
  maker.join();
  releaser.join();
  const auto again = once.get("scope", "k", [] { return 3; });
  EXPECT_TRUE(again.second);
  EXPECT_EQ(*again.first, 3);
}

TEST(MadeOnce, KeepsTheLatestScopesOnly) {
  const MadeOnce<int> once(2);
  int makings = 0;
  const auto make = [&] { return ++makings; };
  once.get("s1", "k", make);
  once.get("s2", "k", make);
  EXPECT_FALSE(once.get("s1", "k", make).second);  // two scopes held
  once.get("s3", "k", make);                        // s1 is the oldest: dropped
  EXPECT_FALSE(once.get("s2", "k", make).second);
  EXPECT_TRUE(once.get("s1", "k", make).second);
  EXPECT_EQ(makings, 4);
}

TEST(ExperimentRun, ConcurrentJobsGiveTheRecordsOfOneJob) {
  Repo repo;
  json kde = base_config();
  kde["methods"] = json::parse(R"([
    {"name": "race", "label": "RACE", "grid": {"rows": [20, 50]}, "fixed": {"width": 100}},
    {"name": "bernstein", "label": "Bernstein", "grid": {"degree": [3, 5]}},
    {"name": "privbayes", "label": "PrivBayes", "grid": {"degree": [1, 2]}, "fixed": {"bins": 8, "samples": 400}},
    {"name": "kme", "label": "KME", "grid": {"points": [200, 400]}}])");
  kde["epsilons"] = {0.5, 2.0, 8.0};
  kde["repetitions"] = 3;
  kde.erase("quick");
  const json highdim = compressed_regression_config({"l1_ball"});
  std::size_t compared = 0, made = 0;
  for (const json& j : {kde, highdim}) {
    const auto cfg = write_config(repo, j, j.at("name").get<std::string>() + ".json");
    const std::string name = j.at("name").get<std::string>();
    const auto one = records_by_key(repo, cfg, name + "_one_job", true, 2, 1);
    const auto two = records_by_key(repo, cfg, name + "_two_jobs", true, 2, 2);
    ASSERT_EQ(one.size(), two.size()) << name;
    for (const auto& [key, a] : one) {
      ASSERT_TRUE(two.count(key)) << key;
      const json& b = two.at(key);
      EXPECT_EQ(a.at("metrics"), b.at("metrics")) << key;
      EXPECT_EQ(a.at("seed"), b.at("seed")) << key;
      EXPECT_EQ(a.at("noise_seed"), b.at("noise_seed")) << key;
      EXPECT_EQ(a.at("threads"), 2) << key;
      EXPECT_EQ(a.at("jobs"), 1) << key;
      EXPECT_EQ(b.at("threads"), 1) << key;
      EXPECT_EQ(b.at("jobs"), 2) << key;
      // Work the groups share is made on all of the run's threads, whatever the jobs.
      for (const json* r : {&a, &b})
        if (r->at("shared_work_seconds").get<double>() > 0) {
          EXPECT_EQ(r->at("shared_work_threads"), 2) << key;
          ++made;
        } else {
          EXPECT_EQ(r->at("shared_work_threads"), 0) << key;
        }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2u * 3 * 3 + 2u * 3 * 3 + 2u * 3 * 3 + 2u * 3 * 3 + 2u * 3 * 2 * 2);
  EXPECT_GE(made, 8u);  // Bernstein's lattices and PrivBayes's scores, in each run
  {
    // Stopped (as if killed) after 7 records while two groups ran, then resumed with two jobs:
    // no record lost or written twice, and the same records as one job's uninterrupted run.
    const auto cfg = repo.dir.path / "t_kde.json";
    const auto one = records_by_key(repo, cfg, "t_kde_one_job", true, 2, 1);
    RunOptions part = options(repo, cfg);
    part.out_dir = (repo.dir.path / "t_kde_stopped").string();
    part.threads = 2;
    part.jobs = 2;
    part.stop_after = 7;
    const auto stopped = run_experiment(part);
    EXPECT_EQ(stopped.cells_run, 7u);
    ASSERT_EQ(read_records(stopped.results_path).size(), 7u);
    part.stop_after = 0;
    const auto resumed = run_experiment(part);
    EXPECT_EQ(resumed.cells_skipped, 7u);
    const auto records = read_records(resumed.results_path);
    ASSERT_EQ(records.size(), one.size());
    std::set<std::string> keys;
    for (const auto& r : records) {
      keys.insert(r.at("key").get<std::string>());
      EXPECT_EQ(r.at("metrics"), one.at(r.at("key").get<std::string>()).at("metrics")) << r.at("key");
    }
    EXPECT_EQ(keys.size(), one.size());
  }
  RunOptions o = options(repo, write_config(repo, base_config()));
  o.threads = 2;
  o.jobs = 3;
  try {
    run_experiment(o);
    ADD_FAILURE() << "three jobs on two threads ran";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--jobs 3 exceeds the 2 threads"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(repo.out() / "t_kde.jsonl"));
}

// MST and AIM as KDE baselines: the released KDE is the synthetic rows' KDE. At a very large
// epsilon it must come close to the data's (16 bins per attribute in [0, 1]: the bins' width
// 1/16 against the bandwidth 0.3), far closer than at eps = 0.1; each record states its budget;
// a second run of the same config gives the same records.
TEST(ExperimentRun, MstAndAimKdeReleasesRecordTheirBudgetAndApproachTheDataAtLargeEpsilon) {
  Repo repo;
  json j = base_config();
  j["methods"] = json::parse(R"([
    {"name": "mst", "label": "MST", "fixed": {"bins": 16, "iterations": 300, "samples": 20000}},
    {"name": "aim", "label": "AIM", "fixed": {"bins": 16, "round_iterations": 30, "final_iterations": 300, "samples": 20000}}])");
  j["epsilons"] = {0.1, 1e4};
  j["repetitions"] = 1;
  j.erase("quick");
  const auto cfg = write_config(repo, j);
  const auto first = run_experiment(options(repo, cfg));
  RunOptions o = options(repo, cfg);
  o.out_dir = (repo.dir.path / "again").string();
  const auto second = run_experiment(o);
  std::map<std::string, json> by_key, again;
  for (const json& r : read_records(first.results_path)) by_key[r.at("key").get<std::string>()] = r;
  for (const json& r : read_records(second.results_path)) again[r.at("key").get<std::string>()] = r;
  ASSERT_EQ(by_key.size(), 4u);
  std::map<std::string, std::map<double, double>> mre;
  for (const auto& [key, r] : by_key) {
    EXPECT_EQ(r.at("metrics"), again.at(key).at("metrics")) << key;
    const json& privacy = r.at("details").at("privacy");
    EXPECT_DOUBLE_EQ(privacy.at("epsilon").get<double>(), r.at("epsilon").get<double>()) << key;
    EXPECT_DOUBLE_EQ(privacy.at("delta").get<double>(), 1e-9) << key;
    EXPECT_TRUE(privacy.contains("budget_split")) << key;
    mre[r.at("label").get<std::string>()][r.at("epsilon").get<double>()] = r.at("metrics").at("mre").get<double>();
  }
  for (const auto* label : {"MST", "AIM"}) {
    EXPECT_LT(mre[label][1e4], 0.02) << label;  // measured: MST 0.006, AIM 0.003 (0.10, 0.17 at eps = 0.1)
    EXPECT_LT(mre[label][1e4], 0.5 * mre[label][0.1]) << label;
  }
}

TEST(ExperimentRun, KilledRunLeavesNoCorruptRecordAndResumes) {
  Repo repo;
  const auto cfg = write_config(repo, base_config());
  RunOptions o = options(repo, cfg);
  o.stop_after = 3;
  const auto partial = run_experiment(o);
  EXPECT_EQ(partial.cells_run, 3u);
  ASSERT_EQ(read_records(partial.results_path).size(), 3u);
  // Simulate a kill in the middle of writing the 4th record.
  {
    std::ofstream out(partial.results_path, std::ios::app | std::ios::binary);
    out << R"({"config":"t_kde","config_fingerprint":"abc","key":"RACE|{"rows)";
  }
  const auto resumed = run_experiment(options(repo, cfg));
  EXPECT_EQ(resumed.cells_skipped, 3u);
  EXPECT_EQ(resumed.cells_run, 5u);
  const auto records = read_records(resumed.results_path);  // every line parses
  ASSERT_EQ(records.size(), 8u);
  std::set<std::string> keys;
  for (const auto& r : records) keys.insert(r.at("key").get<std::string>());
  EXPECT_EQ(keys.size(), 8u);
  const std::string text = read(resumed.results_path);
  EXPECT_EQ(text.back(), '\n');
}

TEST(ExperimentRun, QuickWritesItsOwnFile) {
  Repo repo;
  RunOptions o = options(repo, write_config(repo, base_config()));
  o.quick = true;
  const auto report = run_experiment(o);
  EXPECT_EQ(fs::path(report.results_path).filename(), "t_kde-quick.jsonl");
  EXPECT_EQ(report.cells_total, 1u);
  EXPECT_TRUE(read_records(report.results_path).at(0).at("quick").get<bool>());
}

TEST(ExperimentRun, ChangedDataRefusesToMixRecords) {
  Repo repo;
  run_experiment(options(repo, write_config(repo, base_config())));
  json j = base_config();
  j["task"]["bandwidth"] = 0.5;  // a different ground truth: old records no longer apply
  EXPECT_THROW(run_experiment(options(repo, write_config(repo, j))), Error);
}

TEST(ExperimentRun, UnwritableResultsDirectoryFailsBeforeAnyWork) {
  Repo repo;
  write(repo.dir.path / "a_file", "x");
  RunOptions o = options(repo, write_config(repo, base_config()));
  o.out_dir = (repo.dir.path / "a_file" / "results").string();
  try {
    run_experiment(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("results directory"), std::string::npos) << e.what();
  }
}

TEST(ExperimentRun, FailedSetUpLeavesNoResultsFile) {
  Repo repo;
  write(repo.root() / "datasets" / "tiny" / "tiny.csv", "0.5,0.5\n0.25,not-a-number\n");
  EXPECT_THROW(run_experiment(options(repo, write_config(repo, base_config()))), Error);
  EXPECT_FALSE(fs::exists(repo.out() / "t_kde.jsonl"));
  // A file that held records before is kept as it was.
  fs::remove(repo.root() / "datasets" / "tiny" / "tiny.csv");
  const auto first = run_experiment(options(repo, write_config(repo, base_config())));
  const std::string before = read(first.results_path);
  write(repo.root() / "datasets" / "tiny" / "tiny.csv", "0.5,0.5\n0.25,not-a-number\n");
  json j = base_config();
  j["epsilons"] = {0.1, 10, 100};  // new cells to run, so the data are read again
  EXPECT_THROW(run_experiment(options(repo, write_config(repo, j))), Error);
  EXPECT_EQ(read(first.results_path), before);
}

TEST(ExperimentRun, DamagedGroundTruthCacheIsRecomputed) {
  Repo repo;
  const auto cfg = write_config(repo, base_config());
  const auto first = run_experiment(options(repo, cfg));
  fs::path cache;
  for (const auto& e : fs::directory_iterator(repo.out() / "cache")) cache = e.path();
  std::string bytes = read(cache);
  bytes[bytes.size() / 2] ^= 0x55;
  write(cache, bytes);
  std::vector<double> truth;
  EXPECT_FALSE(read_truth_cache(cache.string(), "any", truth));
  const auto before = read_records(first.results_path);
  fs::remove(first.results_path);
  const auto again = run_experiment(options(repo, cfg));
  EXPECT_EQ(again.cells_run, 8u);
  const auto after = read_records(again.results_path);
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].at("metrics"), before[i].at("metrics"));
}

// ---- Planning: cell counts and the time estimate from measured wall time per cell ----

TEST(CellCostModel, PricesGroupsFromFirstAndLaterCellsInThreadSeconds) {
  using P = CellCostModel::Position;
  CellCostModel m;
  m.add("RACE", {{"rows", 20}}, 10.0, 1, P::first);  // the group's shared build
  m.add("RACE", {{"rows", 20}}, 1.0, 1, P::later);
  m.add("RACE", {{"rows", 20}}, 3.0, 1, P::later);  // later mean 2
  m.add("RACE", {{"rows", 50}}, 3.0, 2, P::unknown);  // 6 thread-seconds, first and later alike
  EXPECT_DOUBLE_EQ(m.group_seconds("RACE", {{"rows", 20}}, 1, 1), 10.0);
  EXPECT_DOUBLE_EQ(m.group_seconds("RACE", {{"rows", 20}}, 5, 1), 10.0 + 4 * 2.0);
  EXPECT_DOUBLE_EQ(m.group_seconds("RACE", {{"rows", 20}}, 5, 2), 9.0);  // linear in threads
  EXPECT_DOUBLE_EQ(m.group_seconds("RACE", {{"rows", 50}}, 3, 3), 6.0);
  // Unmeasured parameters: the mean of the measured points' group costs.
  EXPECT_DOUBLE_EQ(m.group_seconds("RACE", {{"rows", 99}}, 2, 1), ((10.0 + 2.0) + (6.0 + 6.0)) / 2);
  EXPECT_TRUE(std::isnan(m.group_seconds("KME", {}, 1, 1)));
  EXPECT_DOUBLE_EQ(m.any_group_seconds(2, 1), 12.0);
}

TEST(CellCostModel, WorkSharedByTheRepetitionsIsPricedOncePerPoint) {
  using P = CellCostModel::Position;
  CellCostModel m;
  m.add("Bernstein", {{"degree", 9}}, 12.0, 1, P::first, 10.0);  // rep 0: made the lattice (10 s)
  m.add("Bernstein", {{"degree", 9}}, 1.0, 1, P::later);
  m.add("Bernstein", {{"degree", 9}}, 3.0, 1, P::first);  // rep 1: reused it
  // first cell (12 - 10 + 3) / 2 = 2.5, later 1: a group of 3 cells 4.5; the lattice once.
  EXPECT_DOUBLE_EQ(m.group_seconds("Bernstein", {{"degree", 9}}, 3, 1), 2.5 + 2 * 1.0);
  EXPECT_DOUBLE_EQ(m.shared_seconds("Bernstein", {{"degree", 9}}, 1), 10.0);
  EXPECT_DOUBLE_EQ(m.shared_seconds("Bernstein", {{"degree", 9}}, 2), 5.0);
  EXPECT_DOUBLE_EQ(m.shared_seconds("Bernstein", {{"degree", 4}}, 1), 10.0);  // unmeasured: the label's mean
  EXPECT_DOUBLE_EQ(m.shared_seconds("KME", json::object(), 1), 0.0);
  // A one-thread group of a two-job run that made a lattice in 6 s on both of the run's threads:
  // 12 thread-seconds once, 6 s of a two-thread run; the cell's own 2 s at its one thread.
  m.add("Bernstein", {{"degree", 6}}, 8.0, 1, P::first, 6.0, 2);
  EXPECT_DOUBLE_EQ(m.shared_seconds("Bernstein", {{"degree", 6}}, 2), 6.0);
  EXPECT_DOUBLE_EQ(m.group_seconds("Bernstein", {{"degree", 6}}, 1, 1), 2.0);
  m.add_table_entry({{"threads", 2},
                     {"cells", {{{"label", "PFDA"}, {"params", json::object()}, {"first_seconds", 1.0},
                                 {"seconds", 0.5}, {"shared_seconds", 30.0}}}}},
                    "costs.json");
  EXPECT_DOUBLE_EQ(m.group_seconds("PFDA", json::object(), 2, 2), 1.0 + 0.5);
  EXPECT_DOUBLE_EQ(m.shared_seconds("PFDA", json::object(), 2), 30.0);
}

// A cell that waited for another job's shared work: the wait (waited_seconds) is neither the
// cell's time nor priced again (the making's own record prices it at the run's threads).
TEST(CellCostModel, AWaitForAnotherJobsSharedWorkIsNotPriced) {
  CellCostModel m;
  const std::vector<json> records = {
      {{"label", "Bernstein"}, {"params", {{"degree", 8}}}, {"wall_seconds", 1000.0}, {"threads", 1}, {"jobs", 2},
       {"first_of_group", true}, {"shared_work_seconds", 990.0}, {"shared_work_threads", 2}, {"waited_seconds", 0.0}},
      {{"label", "Bernstein"}, {"params", {{"degree", 10}}}, {"wall_seconds", 851.0}, {"threads", 1}, {"jobs", 2},
       {"first_of_group", true}, {"shared_work_seconds", 0.0}, {"shared_work_threads", 0}, {"waited_seconds", 850.0}}};
  EXPECT_EQ(m.add_records(records), 2u);
  EXPECT_DOUBLE_EQ(m.shared_seconds("Bernstein", {{"degree", 8}}, 2), 990.0);
  EXPECT_DOUBLE_EQ(m.shared_seconds("Bernstein", {{"degree", 10}}, 2), 0.0);
  EXPECT_DOUBLE_EQ(m.group_seconds("Bernstein", {{"degree", 10}}, 1, 1), 1.0);
}

// A worker that finds the cache's lock held waits for the other's making: the wait goes to the
// waited ledger, not to the shared work's, and the object it then reuses costs it nothing.
TEST(SharedWork, AWaitIsEnteredApartFromTheMaking) {
  TaskContext ctx;
  ctx.threads = 1;
  ctx.run_threads = 2;
  const SharedWork<int> cache;
  double maker_made = 0, waiter_made = 0, waiter_waited = 0;
  std::atomic<bool> making{false};
  std::thread maker([&] {
    take_shared_work_seconds();
    cache.get(ctx, json{{"degree", 8}}, [&] {
      making = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return 1;
    });
    maker_made = take_shared_work_seconds();
  });
  while (!making) std::this_thread::yield();
  std::thread waiter([&] {
    take_shared_work_seconds();
    take_waited_seconds();
    EXPECT_EQ(*cache.get(ctx, json{{"degree", 8}}, [] { return 2; }).first, 1);  // reused
    waiter_made = take_shared_work_seconds();
    waiter_waited = take_waited_seconds();
  });
  maker.join();
  waiter.join();
  EXPECT_GE(maker_made, 0.29);
  EXPECT_EQ(waiter_made, 0.0);
  EXPECT_GT(waiter_waited, 0.1);
}

// Under --jobs a cell ran on its group's share of the threads (its record's "threads"), while the
// task was prepared on all of them (threads x jobs): cells are priced at their own threads, the
// preparation at the run's.
TEST(CellCostModel, CellsOfConcurrentJobsArePricedAtTheirGroupsThreads) {
  CellCostModel m;
  const std::vector<json> records = {
      {{"label", "DP-WGAN"}, {"params", json::object()}, {"wall_seconds", 36.0}, {"threads", 1}, {"jobs", 2},
       {"first_of_group", true}, {"run_prepare_seconds", 4.0}}};
  EXPECT_EQ(m.add_records(records), 1u);
  EXPECT_DOUBLE_EQ(m.group_seconds("DP-WGAN", json::object(), 1, 2), 18.0);  // two groups at once on 2 threads
  EXPECT_DOUBLE_EQ(m.prepare_seconds(2), 4.0);
  CellCostModel t;
  t.add_table_entry({{"threads", 1}, {"jobs", 2}, {"prepare_seconds", 4.0},
                     {"cells", {{{"label", "KME"}, {"params", json::object()}, {"seconds", 10.0}}}}},
                    "costs.json");
  EXPECT_DOUBLE_EQ(t.group_seconds("KME", json::object(), 2, 2), 10.0);
  EXPECT_DOUBLE_EQ(t.prepare_seconds(2), 4.0);
  try {
    t.add_table_entry({{"threads", 1}, {"jobs", 0}, {"cells", json::array()}}, "costs.json (configs.x)");
    FAIL() << "accepted 0 jobs";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("costs.json (configs.x): $.jobs: expected an integer >= 1"), std::string::npos)
        << e.what();
  }
}

TEST(CellCostModel, TableEntryErrorsNameTheField) {
  CellCostModel m;
  const json bad = {{"threads", 2}, {"cells", {{{"label", "RACE"}, {"params", json::object()}, {"seconds", "fast"}}}}};
  try {
    m.add_table_entry(bad, "costs.json (configs.x)");
    FAIL() << "accepted a string for seconds";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("costs.json (configs.x): $.cells[0].seconds: expected a number"),
              std::string::npos)
        << e.what();
  }
  m.add_table_entry({{"threads", 2}, {"prepare_seconds", 3.0},
                     {"cells", {{{"label", "RACE"}, {"params", {{"rows", 20}}}, {"first_seconds", 4.0}, {"seconds", 1.5}},
                                {{"label", "KME"}, {"params", json::object()}, {"seconds", 1.0}}}}},
                    "costs.json");
  EXPECT_DOUBLE_EQ(m.group_seconds("RACE", {{"rows", 20}}, 3, 1), 8.0 + 2 * 3.0);
  EXPECT_DOUBLE_EQ(m.group_seconds("KME", json::object(), 3, 2), 3.0);
  EXPECT_DOUBLE_EQ(m.prepare_seconds(2), 3.0);
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_EQ(format_duration(75), "1m15s");
  EXPECT_EQ(format_duration(NAN), "?");
}

// The machine's speed: a cell timed while the machine ran at half its nominal speed (its speed
// reference twice the table's) is priced at half its time; the entry's reference serves its
// cells that carry none; without a nominal reference nothing is scaled; a bad one is refused.
TEST(CellCostModel, CellsArePricedAtTheTablesNominalSpeed) {
  const json entry = {{"threads", 1},
                      {"prepare_seconds", 6.0},
                      {"reference_seconds", 0.1},
                      {"cells",
                       {{{"label", "AIM"}, {"params", json::object()}, {"first_seconds", 8.0}, {"seconds", 4.0},
                         {"shared_seconds", 20.0}, {"reference_seconds", 0.2}},
                        {{"label", "MST"}, {"params", json::object()}, {"seconds", 3.0}},
                        {{"label", "RACE"}, {"params", json::object()}, {"seconds", 1.0}, {"reference_seconds", 0.025}}}}};
  CellCostModel m;
  m.add_table_entry(entry, "costs.json", 0.05);
  EXPECT_DOUBLE_EQ(m.group_seconds("AIM", json::object(), 3, 1), (8.0 + 2 * 4.0) / 4);  // timed at a quarter of the speed
  EXPECT_DOUBLE_EQ(m.shared_seconds("AIM", json::object(), 1), 20.0 / 4);
  EXPECT_DOUBLE_EQ(m.group_seconds("MST", json::object(), 2, 1), 2 * 3.0 / 2);   // the entry's reference, 0.1
  EXPECT_DOUBLE_EQ(m.group_seconds("RACE", json::object(), 1, 1), 1.0 * 2);     // timed at twice the speed
  EXPECT_DOUBLE_EQ(m.prepare_seconds(1), 6.0 / 2);
  CellCostModel unscaled;
  unscaled.add_table_entry(entry, "costs.json");
  EXPECT_DOUBLE_EQ(unscaled.group_seconds("AIM", json::object(), 3, 1), 8.0 + 2 * 4.0);
  json bad = entry;
  bad["cells"][2]["reference_seconds"] = 0.0;
  try {
    CellCostModel b;
    b.add_table_entry(bad, "costs.json (configs.x)", 0.05);
    FAIL() << "accepted a reference of 0 s";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("costs.json (configs.x): $.cells[2].reference_seconds: expected a positive number"),
              std::string::npos)
        << e.what();
  }
  // The reference workload takes a positive time (a broken one would price every cell at inf or 0).
  const double r = speed_reference_seconds();
  EXPECT_GT(r, 0.0);
  EXPECT_LT(r, 10.0);
}

// Under --jobs the workers take the groups in order, each group on its share of the threads: a
// dear group late in the order leaves the other worker idle, and the estimate waits for it.
TEST(CellCostModel, EstimateWaitsForTheLastGroupOfTheJobs) {
  EXPECT_DOUBLE_EQ(makespan_seconds({1.0, 2.0, 3.0}, 1), 6.0);       // one job: the sum
  EXPECT_DOUBLE_EQ(makespan_seconds({1.0, 1.0, 1.0, 1.0}, 2), 4.0);  // packed evenly: the sum
  // Two jobs: the two 1 s groups (2 s each on one of the two threads), then the 5 s one alone.
  EXPECT_DOUBLE_EQ(makespan_seconds({1.0, 1.0, 5.0}, 2), 12.0);
  EXPECT_DOUBLE_EQ(makespan_seconds({5.0, 1.0, 1.0, 1.0}, 2), 10.0);  // the dear group first: the rest beside it
  EXPECT_DOUBLE_EQ(makespan_seconds({}, 2), 0.0);
}

TEST(ExperimentRun, PlanCountsCellsWritesNothingAndPricesFromMeasuredCells) {
  Repo repo;
  const auto cfg = write_config(repo, base_config());
  RunOptions plan = options(repo, cfg);
  plan.plan_only = true;
  const auto before = run_experiment(plan);
  EXPECT_EQ(before.cells_total, 8u);
  EXPECT_EQ(before.cells_skipped, 0u);
  EXPECT_TRUE(std::isnan(before.estimate_seconds));  // nothing measured yet
  EXPECT_EQ(before.cells_unpriced, 8u);
  EXPECT_FALSE(fs::exists(repo.out()));  // a plan writes nothing

  RunOptions part = options(repo, cfg);
  part.stop_after = 4;  // both repetitions of rows=20 (2 epsilons each)
  run_experiment(part);
  const auto records = read_records(repo.out() / "t_kde.jsonl");
  ASSERT_EQ(records.size(), 4u);
  double rows20 = 0;
  for (const auto& r : records) {
    ASSERT_TRUE(r.at("wall_seconds").is_number());
    EXPECT_GE(r.at("wall_seconds").get<double>(), 0.0);
    EXPECT_GE(r.at("run_prepare_seconds").get<double>(), 0.0);
    ASSERT_EQ(r.at("params").at("rows"), 20);
    rows20 += r.at("wall_seconds").get<double>();
  }
  const auto after = run_experiment(plan);
  EXPECT_EQ(after.cells_skipped, 4u);
  EXPECT_EQ(after.cells_unpriced, 0u);
  ASSERT_TRUE(std::isfinite(after.estimate_seconds));
  // The 4 pending cells are rows=50 (2 groups of 2), never measured: each group priced as a
  // measured rows=20 group (its first cell plus a later one), plus the set-up a resumed run
  // repeats, as the records measured it.
  double first = 0, later = 0;
  for (const auto& r : records) (r.at("first_of_group").get<bool>() ? first : later) += r.at("wall_seconds").get<double>();
  EXPECT_EQ(std::count_if(records.begin(), records.end(), [](const json& r) { return r.at("first_of_group").get<bool>(); }), 2);
  EXPECT_NEAR(rows20, first + later, 1e-12);
  EXPECT_NEAR(after.estimate_seconds, 2 * (first / 2 + later / 2) + records.back().at("run_prepare_seconds").get<double>(),
              1e-9);
  EXPECT_NE(after.estimate_basis.find("4 cells timed"), std::string::npos) << after.estimate_basis;
}

// The calibration table names the machine of its measurements: the table's "machine" unless an
// entry, measured on another machine, names its own. The plan says which.
TEST(ExperimentRun, PlanNamesTheMachineOfTheCalibrationEntryItPricesFrom) {
  Repo repo;
  const auto cfg = write_config(repo, base_config());
  const fs::path table = repo.root() / "configs" / "calibration" / "cell_costs.json";
  fs::create_directories(table.parent_path());
  json t = {{"machine", "2-core machine A"},
            {"configs",
             {{"t_kde",
               {{"threads", 1},
                {"prepare_seconds", 0.5},
                {"cells", json::parse(R"([{"label": "RACE", "params": {"rows": 20, "width": 100}, "seconds": 2.0}])")}}}}}};
  auto plan_basis = [&] {
    std::ofstream(table) << t.dump();
    RunOptions plan = options(repo, cfg);
    plan.plan_only = true;
    const auto report = run_experiment(plan);
    EXPECT_TRUE(std::isfinite(report.estimate_seconds));
    return report.estimate_basis;
  };
  const std::string shared = plan_basis();
  EXPECT_NE(shared.find("(2-core machine A, 1 threads)"), std::string::npos) << shared;
  t["configs"]["t_kde"]["machine"] = "2-core machine B";
  const std::string own = plan_basis();
  EXPECT_NE(own.find("(2-core machine B, 1 threads)"), std::string::npos) << own;
  EXPECT_EQ(own.find("machine A"), std::string::npos) << own;
}

// A quick profile's method that its calibration entry lacks is priced from the full profile's
// measurements of that method, not from the mean over the quick entry's other methods.
TEST(ExperimentRun, QuickPlanPricesAMethodItsEntryLacksFromTheFullProfile) {
  Repo repo;
  json j = base_config();
  j["methods"].push_back(json::parse(R"({"name": "histogram", "label": "Histogram", "fixed": {"bins": 8}})"));
  const auto cfg = write_config(repo, j);
  const fs::path table = repo.root() / "configs" / "calibration" / "cell_costs.json";
  fs::create_directories(table.parent_path());
  const json t = {
      {"machine", "2-core machine A"},
      {"configs",
       {{"t_kde-quick", {{"threads", 1}, {"cells", json::parse(R"([{"label": "RACE", "params": {"rows": 20}, "seconds": 2.0}])")}}},
        {"t_kde",
         {{"threads", 1},
          {"cells", json::parse(R"([{"label": "RACE", "params": {"rows": 20}, "seconds": 500.0},
                                    {"label": "Histogram", "params": {"bins": 8}, "seconds": 30.0}])")}}}}}};
  std::ofstream(table) << t.dump();
  RunOptions plan = options(repo, cfg);
  plan.plan_only = true;
  plan.quick = true;
  const auto report = run_experiment(plan);
  EXPECT_EQ(report.cells_total, 2u);  // RACE rows = 20 and Histogram, one repetition at eps = 10
  EXPECT_EQ(report.cells_unpriced, 0u);
  // RACE from the quick entry (not the full one's 500 s); Histogram from the full entry (the
  // config's mean, 2 s, before).
  EXPECT_NEAR(report.estimate_seconds, 2.0 + 30.0, 1e-9);
  EXPECT_NE(report.estimate_basis.find("1 cells of methods the quick entry lacks priced from the full profile"),
            std::string::npos)
      << report.estimate_basis;
}

TEST(ExperimentRun, PartOfAProfileIsTheFullRunsCellsAndTheFullRunSkipsThem) {
  Repo repo;
  json j = base_config();
  j["methods"].push_back(json::parse(R"({"name": "histogram", "label": "Histogram", "fixed": {"bins": 8}})"));
  j["epsilons"] = {0.1, 1, 10};
  const auto cfg = write_config(repo, j);
  RunOptions full = options(repo, cfg);
  full.out_dir = (repo.dir.path / "full").string();
  std::map<std::string, json> full_records;
  for (const json& r : read_records(run_experiment(full).results_path)) full_records[r.at("key").get<std::string>()] = r;
  ASSERT_EQ(full_records.size(), 2u * 2 * 3 + 2u * 3);

  RunOptions part = options(repo, cfg);
  part.only_labels = {"RACE"};
  part.only_epsilons = {1.0, 10.0};
  const auto report = run_experiment(part);
  EXPECT_EQ(report.cells_total, 2u * 2 * 2);  // rows 20, 50 x repetitions x epsilons 1, 10
  for (const json& r : read_records(report.results_path)) {
    EXPECT_EQ(r.at("label"), "RACE");
    EXPECT_NE(r.at("epsilon").get<double>(), 0.1);
    const json& f = full_records.at(r.at("key").get<std::string>());
    EXPECT_EQ(r.at("noise_seed"), f.at("noise_seed"));
    EXPECT_EQ(r.at("metrics"), f.at("metrics"));
  }
  // The full profile into the same directory runs only what the part left.
  const auto rest = run_experiment(options(repo, cfg));
  EXPECT_EQ(rest.cells_skipped, 8u);
  EXPECT_EQ(rest.cells_run, full_records.size() - 8u);

  RunOptions bad = options(repo, cfg);
  bad.only_labels = {"RCAE"};
  try {
    run_experiment(bad);
    ADD_FAILURE() << "an unknown label was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'RCAE' is no method label of t_kde (its labels: 'RACE', 'Histogram')"),
              std::string::npos)
        << e.what();
  }
  bad.only_labels.clear();
  bad.only_epsilons = {0.5};
  EXPECT_THROW(run_experiment(bad), UsageError);
}

TEST(ExperimentRun, SampleRunsRepetitionZeroAtEvenlySpreadGridPointsAndEpsilons) {
  Repo repo;
  json j = base_config();
  j["methods"][0]["grid"]["rows"] = {10, 20, 30, 40, 50};
  j["epsilons"] = {0.1, 1, 10};
  RunOptions o = options(repo, write_config(repo, j));
  o.sample_grid_points = 2;
  const auto report = run_experiment(o);
  EXPECT_EQ(report.cells_total, 4u);  // rows 10 and 50, epsilons 0.1 and 10, repetition 0
  std::set<int> rows;
  std::set<double> eps;
  for (const auto& r : read_records(report.results_path)) {
    rows.insert(r.at("params").at("rows").get<int>());
    eps.insert(r.at("epsilon").get<double>());
    EXPECT_EQ(r.at("rep"), 0);
  }
  EXPECT_EQ(rows, (std::set<int>{10, 50}));
  EXPECT_EQ(eps, (std::set<double>{0.1, 10}));
}

// A method whose optional module is missing (DP-WGAN without libtorch) does not stop the run:
// its cells are recorded as unavailable beside the results (NAME.unavailable.jsonl), not as
// finished, every other method runs, the command exits 3 with a summary on stderr, and a rerun
// tries the unavailable cells again.
TEST(ExperimentRun, MissingOptionalModuleRecordsUnavailableCellsRunsTheRestAndIsRetried) {
  if (PRIVRACE_DP_WGAN_MODULE_BUILT) GTEST_SKIP() << "this build has the DP-WGAN module";
  unsetenv("PRIVRACE_DP_WGAN_MODULE");
  TempDir dir;
  const json j = json::parse(R"({
    "name": "t_unavailable",
    "task": {"type": "m2m", "analysis": "statistics", "source": "uniform", "uniform_rows": 2000, "uniform_dim": 3,
             "uniform_seed": 1, "samples": 2000, "queries": 20, "query_seed": 1, "cdf_points": 10},
    "dataset": {"name": "lifesci"},
    "metric": "mean_mre",
    "selection": "all",
    "methods": [{"name": "dp_wgan", "label": "DP-WGAN", "fixed": {"datasets": 1, "generator_steps": 5, "critic_steps": 2, "batch": 64, "hidden": 8}},
                {"name": "m2m_hist", "label": "HIST", "fixed": {"bins": 10}}],
    "epsilons": [1, 10],
    "repetitions": 2,
    "seed": 5,
    "threads": 1
  })");
  const fs::path config = dir.path / "cfg.json";
  write(config, j.dump(2));
  RunOptions o;
  o.config_path = config.string();
  o.repo_root = PRIVRACE_SOURCE_DIR;
  o.out_dir = (dir.path / "results").string();
  o.threads = 1;
  o.print_summary = false;
  RunReport first;
  try {
    first = run_experiment(o);
  } catch (const std::exception& e) {
    FAIL() << "the run stopped at the missing module: " << e.what();
  }
  EXPECT_EQ(first.cells_total, 8u);
  EXPECT_EQ(first.cells_run, 4u);  // HIST's: 2 epsilons x 2 repetitions
  const auto finished = read_records(first.results_path);
  ASSERT_EQ(finished.size(), 4u);
  for (const auto& r : finished) EXPECT_EQ(r.at("label"), "HIST");
  const fs::path unavailable_path = dir.path / "results" / "t_unavailable.unavailable.jsonl";
  ASSERT_TRUE(fs::exists(unavailable_path));
  const auto unavailable = read_records(unavailable_path);
  ASSERT_EQ(unavailable.size(), 4u);  // one per DP-WGAN cell
  std::set<std::string> keys;
  for (const auto& r : unavailable) {
    EXPECT_EQ(r.at("status"), "unavailable");
    EXPECT_EQ(r.at("label"), "DP-WGAN");
    EXPECT_EQ(r.at("method"), "dp_wgan");
    EXPECT_EQ(r.at("config_fingerprint"), finished.front().at("config_fingerprint"));
    EXPECT_TRUE(r.at("epsilon").is_number());
    EXPECT_NE(r.at("reason").get<std::string>().find("the DP-WGAN module (libprivrace_dp_wgan.so, built with libtorch) is not available"),
              std::string::npos)
        << r.at("reason");
    keys.insert(r.at("key").get<std::string>());
  }
  EXPECT_EQ(keys.size(), 4u);
  ASSERT_EQ(first.unavailable.size(), 1u);
  EXPECT_EQ(first.unavailable[0].label, "DP-WGAN");
  EXPECT_EQ(first.unavailable[0].method, "dp_wgan");
  EXPECT_EQ(first.unavailable[0].cells, 4u);
  EXPECT_EQ(first.unavailable[0].reason, unavailable.front().at("reason").get<std::string>());
  EXPECT_EQ(first.unavailable_path, unavailable_path.string());
  EXPECT_EQ(exit_status(first), kExitMethodsUnavailable);
  EXPECT_EQ(kExitMethodsUnavailable, 3);
  EXPECT_NE(unavailable_summary(first).find("DP-WGAN (dp_wgan): 4 cells: dp_wgan: the DP-WGAN module"), std::string::npos)
      << unavailable_summary(first);
  // The summary names the method that could not run; the finished records are those of HIST only.
  const json summary = json::parse(read(first.summary_path));
  ASSERT_TRUE(summary.contains("unavailable"));
  ASSERT_EQ(summary.at("unavailable").size(), 1u);
  EXPECT_EQ(summary.at("unavailable")[0].at("label"), "DP-WGAN");
  EXPECT_EQ(summary.at("unavailable")[0].at("cells"), 4);

  // A rerun skips HIST's finished cells and tries DP-WGAN's again (still unavailable here).
  const auto second = run_experiment(o);
  EXPECT_EQ(second.cells_skipped, 4u);
  EXPECT_EQ(second.cells_total - second.cells_skipped, 4u);
  EXPECT_EQ(second.cells_run, 0u);
  EXPECT_EQ(read_records(second.results_path).size(), 4u);
  const auto again = read_records(unavailable_path);
  EXPECT_EQ(again.size(), 4u);  // replaced, not appended to
  for (const auto& r : again) EXPECT_EQ(keys.count(r.at("key").get<std::string>()), 1u);
  ASSERT_EQ(second.unavailable.size(), 1u);
  EXPECT_EQ(second.unavailable[0].cells, 4u);

  // Two jobs at once: the same finished records and the same unavailable cells.
  RunOptions two = o;
  two.out_dir = (dir.path / "two_jobs").string();
  two.threads = 2;
  two.jobs = 2;
  const auto parallel = run_experiment(two);
  EXPECT_EQ(parallel.cells_run, 4u);
  ASSERT_EQ(parallel.unavailable.size(), 1u);
  EXPECT_EQ(parallel.unavailable[0].cells, 4u);
  std::set<std::string> parallel_keys;
  for (const auto& r : read_records(parallel.unavailable_path)) parallel_keys.insert(r.at("key").get<std::string>());
  EXPECT_EQ(parallel_keys, keys);
  // --method HIST alone neither tries DP-WGAN nor forgets its unavailable cells.
  RunOptions hist_only = o;
  hist_only.only_labels = {"HIST"};
  const auto part = run_experiment(hist_only);
  EXPECT_TRUE(part.unavailable.empty());
  EXPECT_EQ(exit_status(part), 0);
  EXPECT_EQ(read_records(unavailable_path).size(), 4u);

  // The command: exit status 3 (some methods could not run), a summary on stderr naming the
  // method, its cell count and why.
  const fs::path exe = fs::path(PRIVRACE_CLI).parent_path() / "privrace-experiment";
  if (!fs::exists(exe)) GTEST_SKIP() << exe << " not built: the command's exit status is not checked";
  const auto cmd = privrace::testing::run_command("'" + exe.string() + "' '" + config.string() + "' --repo '" +
                                                      PRIVRACE_SOURCE_DIR + "' --out '" + o.out_dir + "' --threads 1",
                                                  dir.path);
  EXPECT_EQ(cmd.code, 3) << cmd.err;
  EXPECT_NE(cmd.err.find("could not run"), std::string::npos) << cmd.err;
  EXPECT_NE(cmd.err.find("DP-WGAN (dp_wgan): 4 cells"), std::string::npos) << cmd.err;
  EXPECT_NE(cmd.err.find("is not available"), std::string::npos) << cmd.err;
  EXPECT_EQ(read_records(unavailable_path).size(), 4u);
}
