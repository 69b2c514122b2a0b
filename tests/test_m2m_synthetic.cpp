// The synthetic-data methods of the m2m task (experiments/m2m_synthetic.cpp), driven through
// the registry on a small generated Random3 table: every metric answered, (epsilon, delta) and
// the budget split recorded, deterministic per noise seed.
#include <gtest/gtest.h>

#include <cmath>

#include "experiment.hpp"
#include "m2m_task.hpp"

namespace privrace::experiments {
namespace {

TEST(M2mSynthetic, EveryGeneratorAnswersEveryTaskAndRecordsItsBudget) {
  const json j = json::parse(R"({
    "name": "t_m2m_synthetic",
    "task": {"type": "m2m", "analysis": "statistics", "source": "uniform", "uniform_rows": 3000, "uniform_dim": 3,
             "uniform_seed": 1, "samples": 2000, "queries": 50, "query_seed": 1, "cdf_points": 10},
    "dataset": {"name": "lifesci"},
    "metric": "mean_mre",
    "selection": "all",
    "methods": [{"name": "dp_copula", "label": "DP-Copula", "fixed": {"datasets": 3}},
                {"name": "privbayes_m2m", "label": "PrivBayes", "fixed": {"datasets": 3, "bins": 8}},
                {"name": "dp_wgan", "label": "DP-WGAN", "fixed": {"datasets": 2, "generator_steps": 10, "critic_steps": 2, "batch": 64, "hidden": 16}}],
    "epsilons": [1, 10000],
    "repetitions": 1,
    "seed": 7,
    "threads": 1
  })");
  const DatasetRegistry datasets = DatasetRegistry::load_from_repo(PRIVRACE_SOURCE_DIR);
  const ExperimentConfig cfg = parse_config(j, "t.json", false, builtin_registry(), datasets);
  RunEnvironment env;
  env.datasets = &datasets;
  env.threads = 1;
  const auto ctx = builtin_registry().task("m2m")->prepare(cfg, env);
  for (const MethodSpec& spec : cfg.methods) {
    const Method* method = builtin_registry().method(spec.name);
    ASSERT_NE(method, nullptr) << spec.name;
    EXPECT_EQ(method->task(), "m2m");
    CellGroup group;
    group.method = &spec;
    group.params = spec.expand().at(0);
    group.seed = 11;
    group.cells = {{1.0, 101, "a"}, {10000.0, 102, "b"}};
    std::vector<CellResult> out(2);
    method->run_group(*ctx, group, [&](std::size_t i, CellResult r) { out.at(i) = std::move(r); });
    for (const CellResult& r : out) {
      for (const char* m : {"mean_mre", "moment2_mre", "cdf_emd", "cov_frobenius", "count_mae"})
        EXPECT_TRUE(std::isfinite(r.metrics.at(m).get<double>())) << spec.label << " " << m;
      EXPECT_EQ(r.details.at("per_table_metrics").size(), group.params.at("datasets").get<std::size_t>());
      const json& privacy = r.details.at("privacy");
      EXPECT_EQ(privacy.at("epsilon").get<double>(), r.details.at("epsilon").get<double>());
      EXPECT_TRUE(privacy.contains("budget_split"));
      EXPECT_EQ(r.details.at("delta").get<double>(), spec.name == "dp_wgan" ? 1e-5 : 0.0);
    }
    // The cell metric is the average over the synthetic tables.
    double sum = 0;
    for (const auto& t : out[1].details.at("per_table_metrics")) sum += t.at("mean_mre").get<double>();
    EXPECT_NEAR(out[1].metrics.at("mean_mre").get<double>(), sum / out[1].details.at("per_table_metrics").size(), 1e-12);
    if (spec.name == "dp_copula") {
      // Nearly noise-free marginals of uniform columns: the means to about 1%.
      EXPECT_LT(out[1].metrics.at("mean_mre").get<double>(), 0.02);
      // Deterministic per noise seed.
      std::vector<CellResult> again(2);
      method->run_group(*ctx, group, [&](std::size_t i, CellResult r) { again.at(i) = std::move(r); });
      for (const char* m : {"mean_mre", "moment2_mre", "cdf_emd", "cov_frobenius", "count_mae"})
        EXPECT_EQ(again[0].metrics.at(m), out[0].metrics.at(m)) << m;  // (auc is NaN here: NaN != NaN)
    }
  }
}

}  // namespace
}  // namespace privrace::experiments
