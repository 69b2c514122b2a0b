// RACE with R fixed by Corollary 1 of the private RACE paper, R = ceil(level N eps / sqrt 2):
// the formula against hand-computed values, its monotonicity in epsilon and N, that it is the
// minimiser of Theorem 4's bound, and the experiment method `race_corollary1` end to end on a
// small stand-in (rows per cell, the cap, and the timing table of the summary).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiment.hpp"
#include "privrace/core/error.hpp"
#include "privrace/tasks/kde.hpp"

namespace fs = std::filesystem;
using namespace privrace;
using namespace privrace::experiments;
using nlohmann::json;

TEST(Corollary1Rows, MatchesHandComputedValues) {
  // 1000 * 0.5 / sqrt(2) = 353.553... -> 354.
  EXPECT_EQ(corollary1_rows(1000, 0.5), 354.0);
  // skin's training rows at eps = 1: 243057 / sqrt(2) = 171867.25... -> 171868.
  EXPECT_EQ(corollary1_rows(243057, 1.0), 171868.0);
  // level 0.5: f~ = 50, 50 * 1 / sqrt(2) = 35.355... -> 36.
  EXPECT_EQ(corollary1_rows(100, 1.0, 0.5), 36.0);
  // Tiny budgets still get one row: 2 * 1e-6 / sqrt(2) = 1.4e-6 -> 1.
  EXPECT_EQ(corollary1_rows(2, 1e-6), 1.0);
}

TEST(Corollary1Rows, MonotoneInEpsilonAndN) {
  double prev = 0;
  for (double eps = 1e-6; eps <= 100; eps *= 1.7) {
    const double r = corollary1_rows(50000, eps);
    EXPECT_GE(r, prev) << eps;
    prev = r;
  }
  // Strictly increasing once above the floor of one row: a tenfold epsilon gives ~tenfold R.
  EXPECT_LT(corollary1_rows(50000, 0.01), corollary1_rows(50000, 0.1));
  EXPECT_NEAR(corollary1_rows(50000, 1.0) / corollary1_rows(50000, 0.1), 10.0, 0.01);
  prev = 0;
  for (double n = 1; n <= 1e7; n *= 3) {
    const double r = corollary1_rows(n, 0.3);
    EXPECT_GE(r, prev) << n;
    prev = r;
  }
  EXPECT_LT(corollary1_rows(1e4, 0.3), corollary1_rows(1e5, 0.3));
  // A smaller assumed kernel level means fewer rows.
  EXPECT_LT(corollary1_rows(1e5, 0.3, 0.1), corollary1_rows(1e5, 0.3, 1.0));
}

TEST(Corollary1Rows, MinimisesTheoremFourBound) {
  // Theorem 4's bound (up to the sqrt(32 log 1/delta) factor): sqrt(f~^2 / R + 2 R / eps^2).
  const auto bound = [](double ft, double eps, double r) { return std::sqrt(ft * ft / r + 2 * r / (eps * eps)); };
  for (const double n : {300.0, 5e4, 2.4e5})
    for (const double eps : {0.05, 0.3, 2.0}) {
      const double r = corollary1_rows(n, eps);
      const double exact = n * eps / std::sqrt(2.0);  // the real minimiser
      EXPECT_GE(r, exact);
      EXPECT_LT(r, exact + 1);
      // At the minimiser the two variance terms are equal.
      EXPECT_NEAR(n * n / exact, 2 * exact / (eps * eps), 1e-9 * n * n / exact);
      for (const double f : {0.5, 0.9, 1.1, 2.0}) EXPECT_LT(bound(n, eps, exact), bound(n, eps, exact * f)) << n << " " << eps;
    }
}

TEST(Corollary1Rows, RejectsInvalidInput) {
  EXPECT_THROW(corollary1_rows(0, 1), UsageError);
  EXPECT_THROW(corollary1_rows(100, 0), UsageError);
  EXPECT_THROW(corollary1_rows(100, -1), UsageError);
  EXPECT_THROW(corollary1_rows(100, 1, 0), UsageError);
  EXPECT_THROW(corollary1_rows(100, 1, 1.5), UsageError);
  EXPECT_THROW(corollary1_rows(100, std::nan("")), UsageError);
}

namespace {

struct TempRepo {
  fs::path dir;
  TempRepo() {
    std::string t = (fs::temp_directory_path() / "privrace-cor1-XXXXXX").string();
    dir = mkdtemp(t.data());
    unsetenv("PRIVRACE_DATA");  // the data set below is absent: every run uses its stand-in
    const json reg = {{"schema", 1},
                      {"datasets",
                       {{"tiny",
                         {{"kind", "table"}, {"source_url", "test"}, {"format", "csv"}, {"rows", 3000}, {"columns", 2},
                          {"files", {{{"path", "tiny/tiny.csv"}, {"sha256", nullptr}, {"sha256_note", "test"}}}},
                          {"features", {1, 2}}, {"label", nullptr}, {"bounds", {{0, 1}, {0, 1}}},
                          {"preprocessing", {{"scale", "none"}}}}}}}};
    fs::create_directories(dir / "repo" / "datasets");
    std::ofstream(dir / "repo" / "datasets" / "registry.json") << reg.dump();
  }
  ~TempRepo() { fs::remove_all(dir); }
};

std::vector<json> read_records(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

}  // namespace

TEST(RaceCorollary1Method, RowsFollowTheRuleAndTheCap) {
  TempRepo repo;
  const json cfg = json::parse(R"J({
    "name": "t_cor1",
    "task": {"type": "kde", "kernel": "l2", "bandwidth": 0.3, "queries": 200},
    "dataset": {"name": "tiny"},
    "metric": "mre",
    "methods": [{"name": "race", "label": "RACE", "grid": {"rows": [20, 50]}, "fixed": {"width": 100}},
                {"name": "race_corollary1", "label": "RACE (R by Corollary 1)", "fixed": {"width": 100, "max_rows": 500}}],
    "epsilons": [0.01, 0.1, 1],
    "repetitions": 2,
    "seed": 5,
    "threads": 1
  })J");
  std::ofstream(repo.dir / "cfg.json") << cfg.dump();
  RunOptions o;
  o.config_path = (repo.dir / "cfg.json").string();
  o.repo_root = (repo.dir / "repo").string();
  o.out_dir = (repo.dir / "results").string();
  o.threads = 1;
  o.print_summary = false;
  const RunReport report = run_experiment(o);
  EXPECT_EQ(report.cells_total, 2u * 3u * 2u + 3u * 2u);
  // N = 3000 stand-in rows - 200 held-out queries = 2800 sketched rows.
  const std::map<double, double> expected_rows = {{0.01, 20}, {0.1, 198}, {1, 500}};  // 2800 eps / sqrt 2, capped
  int seen = 0;
  for (const json& r : read_records(report.results_path)) {
    if (r.at("method") != "race_corollary1") continue;
    ++seen;
    const json& d = r.at("details");
    const double eps = r.at("epsilon").get<double>();
    EXPECT_EQ(d.at("n_assumed").get<double>(), 2800.0);
    EXPECT_EQ(d.at("rows").get<double>(), expected_rows.at(eps)) << eps;
    EXPECT_EQ(d.at("rows_by_rule").get<double>(), corollary1_rows(2800, eps));
    EXPECT_EQ(d.at("rows_capped").get<bool>(), eps == 1.0);
    // Noise of scale R / eps: the sensitivity of the R-row sketch.
    EXPECT_NEAR(d.at("noise_scale").get<double>(), expected_rows.at(eps) / eps, 1e-6 * expected_rows.at(eps) / eps);
    EXPECT_TRUE(r.at("metrics").at("mre").is_number());
  }
  EXPECT_EQ(seen, 6);
  // The summary (and NAME.timing.csv) carry one timing row per method at its best setting.
  std::ifstream in(report.summary_path);
  const json summary = json::parse(in);
  ASSERT_EQ(summary.at("timing").size(), 2u);
  const json& race = summary.at("timing")[0];
  EXPECT_EQ(race.at("label"), "RACE");
  EXPECT_EQ(race.at("selected_by"), "best mean mre at eps = 1");
  EXPECT_EQ(race.at("cells").get<int>(), 2);  // the eps = 1 cells (2 reps) of one grid point
  EXPECT_GT(race.at("build_seconds").get<double>(), 0.0);
  EXPECT_GT(race.at("query_ms").get<double>(), 0.0);
  EXPECT_EQ(summary.at("timing")[1].at("label"), "RACE (R by Corollary 1)");
  std::ifstream tin(report.timing_path);
  std::stringstream ss;
  ss << tin.rdbuf();
  const std::string csv = ss.str();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);  // header + 2 methods
  EXPECT_NE(csv.find("RACE (R by Corollary 1)"), std::string::npos);
}

TEST(RaceCorollary1Method, RejectsLevelAboveOne) {
  const Method* m = builtin_registry().method("race_corollary1");
  ASSERT_NE(m, nullptr);
  json p = {{"level", 1.5}, {"max_rows", 100}, {"width", 100}, {"estimator", "mean"}, {"mom_groups", 5},
            {"mechanism", "discrete_laplace"}, {"delta", 0.0}, {"neighbors", "add-remove"}};
  EXPECT_NE(m->check(p), "");
  p["level"] = 0.5;
  EXPECT_EQ(m->check(p), "");
}
