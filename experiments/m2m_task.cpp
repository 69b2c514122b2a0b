#include "m2m_task.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>

#include "classify_task.hpp"
#include "metrics.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/baselines/objective_perturbation.hpp"
#include "privrace/core/progress.hpp"
#include "privrace/privacy/budget.hpp"
#include "params.hpp"
#include "race_params.hpp"
#include "release_sweep.hpp"

namespace privrace::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();


json nan_metrics() {
  return {{"mean_mre", kNaN}, {"moment2_mre", kNaN}, {"cdf_emd", kNaN},
          {"cov_frobenius", kNaN}, {"count_mae", kNaN}, {"auc", kNaN}};
}

enum class M2mAnalysis { Statistics, Logistic };
enum class M2mSource { Dataset, Uniform };

// The config's "task" object, decoded once (params.hpp: TypedTask).
struct M2mTaskOptions {
  M2mAnalysis analysis = M2mAnalysis::Statistics;
  M2mSource source = M2mSource::Dataset;
  std::size_t uniform_rows = 27000, uniform_dim = 10;
  std::uint64_t uniform_seed = 1;
  std::size_t samples = 100000, queries = 1000;
  std::uint64_t query_seed = 1;
  std::size_t cdf_points = 10;
  double test_fraction = 0.1;
  std::uint64_t split_seed = 1;
  double logistic_l2 = 1e-4;
  std::string data_note;
  static const ParamTable<M2mTaskOptions>& table();
};

const ParamTable<M2mTaskOptions>& M2mTaskOptions::table() {
  using K = ParamSpec::Kind;
  using O = M2mTaskOptions;
  static const auto t = ParamTable<O>()
      .add(&O::analysis, "analysis", {{"statistics", M2mAnalysis::Statistics}, {"logistic", M2mAnalysis::Logistic}}, "statistics",
           "statistics: mean, 2nd moment, CDF, covariance, counting queries (Figure 3); logistic: implicit-M2M AUC (Figure 4)")
      .add(&O::source, "source", {{"dataset", M2mSource::Dataset}, {"uniform", M2mSource::Uniform}}, "dataset",
           "dataset: the registry's table, scaled to the unit box; uniform: generated uniform rows (Random10)")
      .add(&O::uniform_rows, "uniform_rows", K::PositiveInt, 27000, "source = uniform: rows")
      .add(&O::uniform_dim, "uniform_dim", K::PositiveInt, 10, "source = uniform: attributes")
      .add(&O::uniform_seed, "uniform_seed", K::NonNegativeInt, 1, "source = uniform: generator seed")
      .add(&O::samples, "samples", K::PositiveInt, 100000, "n_s, M2M's synthetic training points")
      .add(&O::queries, "queries", K::PositiveInt, 1000, "counting queries (3 predicates on 3 distinct attributes)")
      .add(&O::query_seed, "query_seed", K::NonNegativeInt, 1, "seed of the counting queries")
      .add(&O::cdf_points, "cdf_points", K::PositiveInt, 10, "equispaced CDF points per attribute")
      .add(&O::test_fraction, "test_fraction", K::PositiveNumber, 0.1, "logistic: share of the rows held out for the AUC")
      .add(&O::split_seed, "split_seed", K::NonNegativeInt, 1, "logistic: seed of the train/test split")
      .add(&O::logistic_l2, "logistic_l2", K::PositiveNumber, 1e-4, "ridge term of the logistic fits (implicit M2M and synthetic tables)")
      .add(&O::data_note, "data_note", K::String, "", "recorded in every record and plot title (e.g. what stands in for a data set)");
  return t;
}

// The statistics analysis: the exact means, second moments, CDFs, covariance and counting
// queries of the data (every row sketched) on the unit box.
void prepare_statistics(M2mContext& c, const ExperimentConfig& cfg, const M2mTaskOptions& o) {
  const auto& data = c.data;
  const std::size_t n = static_cast<std::size_t>(data.x.rows());
  const std::size_t d = static_cast<std::size_t>(data.x.cols());
  if (d < 3) throw ConfigError(cfg.file + ": $.dataset: counting queries need at least 3 attributes; the data has " + std::to_string(d));
  c.sketch_rows = data.x;
  c.domain = BoxDomain::uniform(d, 0.0, 1.0);
  const DoubleMatrix x = data.x.cast<double>();
  const Eigen::VectorXd omega = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(n), 1.0 / static_cast<double>(n));
  c.true_mean = weighted_means(x, omega);
  c.true_moment2 = weighted_second_moments(x, omega);
  c.cdf_at = cdf_points(c.domain, o.cdf_points);
  c.true_cdf = weighted_cdfs(x, omega, c.cdf_at);
  c.true_cov = weighted_covariance(x, omega, c.true_mean);
  c.queries = random_counting_queries(c.domain, o.queries, o.query_seed);
  c.true_counts = weighted_counts(x, omega, c.queries);
  for (Eigen::Index j = 0; j < c.true_mean.size(); ++j)
    if (!(std::abs(c.true_mean(j)) > 0) || !(std::abs(c.true_moment2(j)) > 0))
      throw ConfigError(cfg.file + ": attribute " + std::to_string(j) + " has mean 0: the relative error is undefined");
}

// The logistic analysis: a seeded train/test split of a binary-labelled data set; the sketched
// rows are the training features with the label as 0/1 in the last column.
void prepare_logistic(M2mContext& c, const ExperimentConfig& cfg, const M2mTaskOptions& o) {
  const auto& data = c.data;
  const std::size_t n = static_cast<std::size_t>(data.x.rows());
  const std::size_t d = static_cast<std::size_t>(data.x.cols());
  if (data.y.size() != n) throw ConfigError(cfg.file + ": $.dataset.name: data set '" + cfg.dataset + "' has no label");
  std::vector<double> values = data.y;
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.size() != 2) throw ConfigError(cfg.file + ": $.dataset.name: the logistic analysis needs a binary label");
  const double tf = o.test_fraction;
  if (!(tf < 1)) throw ConfigError(cfg.file + ": $.task.test_fraction: expected a number in (0, 1)");
  const auto n_test = static_cast<std::size_t>(std::llround(tf * static_cast<double>(n)));
  const Split split = seeded_split(n, n_test, o.split_seed);
  const DenseMatrix train_x = select_rows(data.x, split.kept);
  c.test_x = select_rows(data.x, split.held_out);
  // The sketched rows: the features, then the label as 0/1 in the last column.
  c.sketch_rows.resize(train_x.rows(), train_x.cols() + 1);
  c.sketch_rows.leftCols(train_x.cols()) = train_x;
  c.train_pm.resize(train_x.rows());
  for (std::size_t i = 0; i < split.kept.size(); ++i) {
    const int y = data.y[split.kept[i]] == values[1] ? 1 : 0;
    c.sketch_rows(static_cast<Eigen::Index>(i), train_x.cols()) = static_cast<Real>(y);
    c.train_pm(static_cast<Eigen::Index>(i)) = y ? 1.0 : -1.0;
  }
  for (const auto i : split.held_out) c.test_y.push_back(data.y[i] == values[1] ? 1 : 0);
  // The ROC AUC is undefined on one class (metrics.hpp): refuse such a split before any cell runs.
  const std::size_t test_pos = static_cast<std::size_t>(std::count(c.test_y.begin(), c.test_y.end(), 1));
  if (test_pos == 0 || test_pos == c.test_y.size())
    throw ConfigError(cfg.file + ": $.task.test_fraction: the test rows hold " + std::to_string(test_pos) +
                      " positives of " + std::to_string(c.test_y.size()) + "; the ROC AUC needs both classes");
  c.domain = BoxDomain::uniform(d + 1, 0.0, 1.0);
  c.domain.binary.assign(d + 1, false);
  c.domain.binary[d] = true;  // Omega = [0, 1]^d x {0, 1}
  c.train_lr = logistic_inputs(train_x);
  c.test_lr = logistic_inputs(c.test_x);
}

class M2mTask final : public TypedTask<M2mTaskOptions> {
 public:
  std::string name() const override { return "m2m"; }
  std::vector<std::string> metrics() const override {
    return {"mean_mre", "moment2_mre", "cdf_emd", "cov_frobenius", "count_mae", "auc"};
  }
  bool lower_is_better(const std::string& metric) const override { return metric != "auc"; }

  // Table 1 of the paper: MRE of the mean at eps = inf (m2m_nonprivate) and eps = 1, per map,
  // averaged over the repetitions of the paper's estimator (no intercept, the paper's lambda).
  json summary_tables(const ExperimentConfig& cfg, const std::vector<json>& records, std::string& text) const override {
    if (options_of(cfg)->analysis != M2mAnalysis::Statistics) return nullptr;
    json table = json::object();
    for (const std::string map : {"rff", "race", "hist"}) {
      double sum_inf = 0, sum_one = 0;
      std::size_t n_inf = 0, n_one = 0;
      for (const auto& r : records) {
        const json& m = r.value("metrics", json::object());
        if (!m.contains("mean_mre") || !m.at("mean_mre").is_number()) continue;
        const std::string method = r.value("method", "");
        const json& e = r.at("epsilon");
        // The paper's estimator only: the intercept / auto-noise variants share the method name.
        const json& p = r.at("params");
        if (p.value("intercept", false) || p.value("lambda_rule", std::string("eq5")) != "eq5") continue;
        if (method == "m2m_nonprivate" && r.at("params").value("map", "") == map) {
          sum_inf += m.at("mean_mre").get<double>();
          ++n_inf;
        } else if (method == "m2m_" + map && e.is_number() && std::abs(e.get<double>() - 1.0) < 1e-12) {
          sum_one += m.at("mean_mre").get<double>();
          ++n_one;
        }
      }
      if (n_inf + n_one == 0) continue;
      table[map] = {{"eps_inf", n_inf ? json(sum_inf / static_cast<double>(n_inf)) : json()},
                    {"eps_1", n_one ? json(sum_one / static_cast<double>(n_one)) : json()},
                    {"repetitions_inf", n_inf},
                    {"repetitions_1", n_one}};
    }
    if (table.empty()) return nullptr;
    const json paper = {{"random10", {{"rff", {6.25e-8, 9.55e-3}}, {"hist", {1.87e-5, 9.10e-4}}}},
                        {"lifesci", {{"rff", {1.67e-6, 4.20e-2}}, {"hist", {5.91e-5, 3.8e-3}}}}};
    char buf[256];
    text += "Table 1 (M2M paper): MRE of the mean, mean over repetitions\n";
    std::snprintf(buf, sizeof buf, "%-6s %-12s %-12s %-24s %-24s\n", "map", "eps = inf", "eps = 1", "paper Random10 (inf, 1)",
                  "paper LifeSci (inf, 1)");
    text += buf;
    for (const auto& item : table.items()) {
      // Named references, not a structured binding: clang 14 cannot capture bindings in lambdas.
      const std::string& map = item.key();
      const json& row = item.value();
      auto fmt = [](const json& v) {
        char b[32];
        if (v.is_null()) return std::string("-");
        std::snprintf(b, sizeof b, "%.3e", v.get<double>());
        return std::string(b);
      };
      auto paper_pair = [&](const std::string& data) {
        if (!paper.at(data).contains(map)) return std::string("-");
        return fmt(paper.at(data).at(map)[0]) + ", " + fmt(paper.at(data).at(map)[1]);
      };
      std::snprintf(buf, sizeof buf, "%-6s %-12s %-12s %-24s %-24s\n", map.c_str(), fmt(row.at("eps_inf")).c_str(),
                    fmt(row.at("eps_1")).c_str(), paper_pair("random10").c_str(), paper_pair("lifesci").c_str());
      text += buf;
    }
    return {{"table1_mean_mre", table}, {"paper_table1", paper}};
  }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const M2mTaskOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<M2mContext>();
    ctx->config = &cfg;
    ctx->analysis = o.analysis == M2mAnalysis::Statistics ? "statistics" : "logistic";
    ctx->samples = o.samples;
    ctx->logistic_l2 = o.logistic_l2;
    const bool uniform = o.source == M2mSource::Uniform;
    if (uniform && ctx->analysis == "logistic")
      throw ConfigError(cfg.file + ": $.task.source: the logistic analysis needs a labelled data set, not 'uniform'");
    std::string data_name = cfg.dataset;
    if (uniform) {
      // Random10 (section 4): uniform rows in [0, 1]^d, generated, so psi = p_X (no shift).
      const auto n = o.uniform_rows;
      const auto d = o.uniform_dim;
      ctx->data.name = "random" + std::to_string(d);
      ctx->data.x.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
      SeededRandom rng(o.uniform_seed);
      for (Eigen::Index i = 0; i < ctx->data.x.rows(); ++i)
        for (Eigen::Index j = 0; j < ctx->data.x.cols(); ++j) ctx->data.x(i, j) = static_cast<Real>(rng.unit());
      data_name = ctx->data.name;
    } else {
      const json& entry = env.datasets->entry(cfg.dataset);
      Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
      prep = Preprocessing::from_json(cfg.preprocessing, prep);
      if (prep.scale != "unit_cube")
        throw ConfigError(cfg.file + ": $.dataset.preprocessing.scale: M2M's domain is the unit box; expected 'unit_cube'");
      ctx->data = load_dataset(*env.datasets, cfg.dataset, prep, env.search);
    }
    const auto& data = ctx->data;
    const std::size_t n = static_cast<std::size_t>(data.x.rows());
    const std::size_t d = static_cast<std::size_t>(data.x.cols());

    if (ctx->analysis == "statistics") prepare_statistics(*ctx, cfg, o);
    else prepare_logistic(*ctx, cfg, o);
    ctx->data_summary = {{"name", data_name},
                         {"analysis", ctx->analysis},
                         {"stand_in", data.stand_in},
                         {"rows", n},
                         {"dim", d},
                         {"sketched_rows", ctx->sketch_rows.rows()},
                         {"samples", ctx->samples},
                         {"domain", ctx->domain.to_json()}};
    if (uniform) {
      ctx->data_summary["generated"] = "uniform on [0, 1]^" + std::to_string(d) + " (Random10 of the M2M paper), seed " +
                                       std::to_string(o.uniform_seed);
    } else {
      ctx->data_summary["checksum"] = data.checksum_status;
      ctx->data_summary["scale"] = data.preprocessing.value("scale", "none");
      note_substitute(ctx->data_summary, data);  // real data of another version than the paper's
    }
    if (ctx->analysis == "statistics") {
      ctx->data_summary["queries"] = ctx->queries.size();
      ctx->data_summary["query_generation"] =
          "3 distinct attributes uniformly at random; each predicate <= or >= with probability 1/2; threshold uniform on [0, 1]";
      ctx->data_summary["cdf_points"] = ctx->cdf_at.cols();
    } else {
      ctx->data_summary["test_rows"] = ctx->test_x.rows();
    }
    if (data.stand_in) ctx->data_summary["stand_in_reason"] = data.stand_in_reason;
    if (!o.data_note.empty()) ctx->data_summary["note"] = o.data_note;
    return ctx;
  }
};

// --------------------------------------------------------------------------------------
// Sketch methods

// The parameters of the M2M sketch methods: the feature map's (each map's own), the noise's
// (private ones) and M2M's fit.
struct M2mSketchParams {
  std::string map;  // m2m_nonprivate: the map to release; the private methods' is their own
  std::size_t features = 0;  // rff
  double sigma = 0;
  std::size_t rows = 0, width = 0;  // race
  double bandwidth = 0;
  std::size_t bins = 0;  // hist
  double num_share = 0;
  RaceNoise noise;
  double regularization = 0;
  bool intercept = false;
  M2mLambdaRule lambda_rule = M2mLambdaRule::Eq5;
  // (The non-private method's table has no num_share or noise: their defaults pass.)
  std::string check() const {
    if (!(num_share < 1)) return "num_share must be in (0, 1)";
    return noise.check();
  }
  static ParamTable<M2mSketchParams> table(const std::string& kind, bool is_private);
};

// The fields of one feature map.
void add_map_fields(ParamTable<M2mSketchParams>& t, const std::string& kind) {
  using K = ParamSpec::Kind;
  using P = M2mSketchParams;
  if (kind == "rff")
    t.add(&P::features, "features", K::PositiveInt, 200, "m = 2 m' random Fourier features (even)")
        .add(&P::sigma, "sigma", K::PositiveNumber, 1.0, "Gaussian kernel bandwidth");
  else if (kind == "race")
    t.add(&P::rows, "rows", K::PositiveInt, 80, "R hash functions")
        .add(&P::width, "width", K::PositiveInt, 80, "W buckets per hash")
        .add(&P::bandwidth, "bandwidth", K::PositiveNumber, 0.1, "p-stable bucket width (the paper's sigma)");
  else
    t.add(&P::bins, "bins", K::PositiveInt, 100, "equal bins per attribute");
}

ParamTable<M2mSketchParams> M2mSketchParams::table(const std::string& kind, bool is_private) {
  using K = ParamSpec::Kind;
  using P = M2mSketchParams;
  ParamTable<P> t;
  if (!is_private) {
    t.add(&P::map, "map", K::String, nullptr, "the feature map, released without noise", {"rff", "race", "hist"});
    for (const auto* k : {"rff", "race", "hist"}) add_map_fields(t, k);
  } else {
    add_map_fields(t, kind);
    t.add(&P::num_share, "num_share", K::PositiveNumber, 0.98, "epsilon_num / epsilon (the rest goes to the count)")
        .add(&P::noise, RaceNoise::table());
  }
  t.add(&P::regularization, "regularization", K::PositiveNumber, 1.0, "R of Algorithm 1: lambda = sigma_xi^2 / (n + zeta) * R")
      .add(&P::intercept, "intercept", K::Bool, false, "an unpenalised constant feature with sketch value 1 (post-processing)")
      .add(&P::lambda_rule, "lambda_rule", {{"eq5", M2mLambdaRule::Eq5}, {"auto-noise", M2mLambdaRule::AutoNoise}}, "eq5",
           "eq5: the paper's lambda; auto-noise: matched to the release's noise and signal (times R)");
  return t;
}

FeatureSketchSpec sketch_spec(const std::string& kind, const M2mSketchParams& p, const M2mContext& ctx, std::uint64_t seed) {
  FeatureSketchSpec spec;
  spec.kind = kind;
  spec.seed = seed;
  spec.lo = ctx.domain.lo;
  spec.hi = ctx.domain.hi;
  if (kind == "rff") {
    spec.features = p.features;
    spec.sigma = p.sigma;
  } else if (kind == "race") {
    spec.lsh_kernel = Kernel::L2;
    spec.rows = p.rows;
    spec.width = p.width;
    spec.bandwidth = p.bandwidth;
  } else {
    spec.bins = p.bins;
  }
  return spec;
}

// Every metric of one released sketch: fit M2M once, score every task with the weights.
// The design (synthetic points, P^T P) is shared by the group's releases.
// `masks`: the design's synthetic points in the counting queries, made with the design.
CellResult evaluate_release(const M2mContext& ctx, const std::shared_ptr<const M2mDesign>& design,
                            const FeatureSketchRelease& release, const CountingMasks* masks) {
  const auto t0 = std::chrono::steady_clock::now();
  const M2mModel model(design, release);
  const double fit_seconds = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  CellResult r = evaluate_weighted(ctx, model.synthetic().cast<double>(), model.average_weights(), masks);
  r.query_seconds_per_query = fit_seconds + seconds_since(t1);  // the analyst's side: fit + every task
  r.details["m2m"] = model.describe();
  r.details["m2m_seconds"] = fit_seconds;
  r.details["release"] = {{"epsilon", std::isfinite(release.epsilon) ? json(release.epsilon) : json("inf")},
                          {"epsilon_num", std::isfinite(release.epsilon_num) ? json(release.epsilon_num) : json("inf")},
                          {"epsilon_den", std::isfinite(release.epsilon_den) ? json(release.epsilon_den) : json("inf")},
                          {"noise_variance", release.noise_variance},
                          {"count", release.count},
                          {"private", release.is_private},
                          {"l1_sensitivity", release.map->l1_sensitivity()}};
  return r;
}

class M2mSketchMethod final : public TypedMethod<M2mContext, M2mSketchParams> {
 public:
  M2mSketchMethod(std::string kind, bool is_private)
      : kind_(std::move(kind)), private_(is_private), table_(M2mSketchParams::table(kind_, is_private)) {}
  std::string name() const override { return private_ ? "m2m_" + kind_ : "m2m_nonprivate"; }
  std::string task() const override { return "m2m"; }
  bool uses_epsilon() const override { return private_; }
  void run(const M2mContext& ctx, const M2mSketchParams& p, const CellGroup& group, const Emit& emit) const override {
    const std::string kind = private_ ? kind_ : p.map;
    const FeatureSketchSpec spec = sketch_spec(kind, p, ctx, group.seed);
    const auto t0 = std::chrono::steady_clock::now();
    const auto sums = build_feature_sums(ctx.sketch_rows, spec, ctx.threads);  // exact: never released
    const double sum_seconds = seconds_since(t0);
    M2mOptions opt;
    opt.domain = ctx.domain;
    opt.samples = ctx.samples;
    opt.seed = derive_seed(group.seed, 0x4D324D);  // public synthetic points, shared by the group
    opt.extra_regularization = p.regularization;
    opt.intercept = p.intercept;
    opt.lambda_rule = p.lambda_rule;
    std::shared_ptr<const M2mDesign> design;
    std::unique_ptr<const CountingMasks> masks;  // the design's points in the counting queries
    const auto privacy_of = [&](double epsilon) {
      FeatureSketchPrivacy privacy;
      privacy.epsilon = private_ ? epsilon : std::numeric_limits<double>::infinity();
      if (private_) {
        privacy.num_share = p.num_share;
        privacy.mechanism = p.noise.mechanism;
        privacy.delta = p.noise.delta;
        privacy.neighbors = p.noise.neighbors;
      }
      return privacy;
    };
    // The feature sums' own release call (eps = inf: the exact sums and count, not private).
    const auto released = [&](double epsilon, const NoiseSource& noise) {
      return release_feature_sketch(*sums, privacy_of(epsilon), noise);
    };
    sweep_epsilons(group, emit, released, [&](const CellRelease<FeatureSketchRelease>& c) {
      const auto t2 = std::chrono::steady_clock::now();
      if (!design) {
        design = std::make_shared<const M2mDesign>(c.release.map, opt);
        if (ctx.analysis == "statistics")
          masks = std::make_unique<const CountingMasks>(design->synthetic().cast<double>(), ctx.queries);
      }
      const double design_seconds = seconds_since(t2);
      CellResult r = evaluate_release(ctx, design, c.release, masks.get());
      r.query_seconds_per_query += design_seconds;
      r.build_seconds = sum_seconds + c.noise_seconds;
      r.details["map"] = kind;
      r.details["sum_seconds"] = sum_seconds;
      r.details["budget"] = private_ ? "epsilon_num = num_share * epsilon on the feature sums, the rest on the count"
                                     : "not private (eps = inf): the exact sums, for the approximation-error floor";
      return r;
    });
  }

 private:
  const ParamTable<M2mSketchParams>& param_table() const override { return table_; }
  std::string kind_;
  bool private_;
  ParamTable<M2mSketchParams> table_;
};

// Chaudhuri, Monteleoni & Sarwate 2011 (baselines/objective_perturbation.hpp) on the training
// rows, the whole epsilon; AUC of the margins on the test rows.
struct DpErmParams {
  double lambda = 0;
  static const ParamTable<DpErmParams>& table() {
    static const auto t = ParamTable<DpErmParams>().add(&DpErmParams::lambda, "lambda", ParamSpec::Kind::PositiveNumber,
                                                        nullptr, "L2 regulariser Lambda > 0");
    return t;
  }
};

class DpErmMethod final : public TypedMethod<M2mContext, DpErmParams> {
 public:
  std::string name() const override { return "dp_erm"; }
  std::string task() const override { return "m2m"; }
  void run(const M2mContext& ctx, const DpErmParams& p, const CellGroup& group, const Emit& emit) const override {
    if (ctx.analysis != "logistic") throw UsageError("dp_erm: only the logistic analysis");
    const double lambda = p.lambda;
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      SeededRandom rng(group.cells[i].noise_seed);
      const auto t0 = std::chrono::steady_clock::now();
      const ObjPertResult fit = objective_perturbation_logistic(ctx.train_lr, ctx.train_pm, group.cells[i].epsilon, lambda, rng);
      CellResult r;
      r.build_seconds = seconds_since(t0);
      r.metrics = nan_metrics();
      r.metrics["auc"] = roc_auc(ctx.test_lr * fit.w, ctx.test_y);
      r.details = {{"epsilon_prime", fit.epsilon_prime}, {"extra_regulariser", fit.extra_reg},
                   {"noise_norm", fit.noise_norm},       {"neighbors", "replace"},
                   {"row_scaling", "[2x - 1, 1] / sqrt(d + 1)"}};
      emit(i, std::move(r));
    }
  }
};

// Logistic regression on the exact training rows: Figure 4's non-private reference.
class LogisticNonprivateMethod final : public TypedMethod<M2mContext, NoParams> {
 public:
  std::string name() const override { return "logistic_nonprivate"; }
  std::string task() const override { return "m2m"; }
  bool uses_epsilon() const override { return false; }
  void run(const M2mContext& ctx, const NoParams&, const CellGroup& group, const Emit& emit) const override {
    if (ctx.analysis != "logistic") throw UsageError("logistic_nonprivate: only the logistic analysis");
    const auto t0 = std::chrono::steady_clock::now();
    CellResult r = evaluate_synthetic(ctx, ctx.sketch_rows.cast<double>());  // the real rows, weight 1/n
    r.build_seconds = seconds_since(t0);
    r.details["private"] = false;
    for (std::size_t i = 0; i < group.cells.size(); ++i) emit(i, r);
  }
};

}  // namespace

CellResult evaluate_weighted(const M2mContext& ctx, const DoubleMatrix& rows, const Eigen::VectorXd& omega,
                             const CountingMasks* masks) {
  CellResult r;
  r.metrics = nan_metrics();
  if (rows.cols() != static_cast<Eigen::Index>(ctx.domain.dim()))
    throw UsageError("m2m: the rows have " + std::to_string(rows.cols()) + " columns; the task has " +
                     std::to_string(ctx.domain.dim()));
  if (ctx.analysis == "statistics") {
    const Eigen::VectorXd mean = weighted_means(rows, omega);
    r.metrics["mean_mre"] = mean_relative_error(mean, ctx.true_mean);
    r.metrics["moment2_mre"] = mean_relative_error(weighted_second_moments(rows, omega), ctx.true_moment2);
    r.metrics["cdf_emd"] = mean_cdf_emd(weighted_cdfs(rows, omega, ctx.cdf_at), ctx.true_cdf);
    r.metrics["cov_frobenius"] = frobenius_distance(weighted_covariance(rows, omega, mean), ctx.true_cov);
    const Eigen::VectorXd counts = masks && masks->rows() == rows.rows() ? masks->weighted_counts(omega)
                                                                           : weighted_counts(rows, omega, ctx.queries);
    r.metrics["count_mae"] = mean_absolute_error(counts, ctx.true_counts);
    return r;
  }
  const Eigen::Index d = rows.cols() - 1;
  bool has0 = false, has1 = false;
  for (Eigen::Index i = 0; i < rows.rows(); ++i) (rows(i, d) > 0.5 ? has1 : has0) = true;
  if (!(has0 && has1)) {
    // One class in the synthetic rows: no classifier can be fit, so every test row gets the same
    // score, whose AUC is exactly 0.5 by the ties rule of metrics.hpp (the paper reports 0.5).
    r.metrics["auc"] = 0.5;
    r.details["single_class"] = true;
    return r;
  }
  const WeightedLogisticResult fit = weighted_logistic_regression(rows, omega, ctx.logistic_l2);
  r.metrics["auc"] = roc_auc(logistic_scores(ctx.test_x.cast<double>(), fit.theta), ctx.test_y);
  r.details["logistic"] = {{"objective", fit.objective}, {"evaluations", fit.evaluations}, {"status", fit.status},
                           {"l2", ctx.logistic_l2}};
  return r;
}

CellResult evaluate_synthetic(const M2mContext& ctx, const DoubleMatrix& synthetic_rows) {
  if (synthetic_rows.rows() == 0) throw UsageError("m2m: the synthetic table is empty");
  const Eigen::VectorXd omega =
      Eigen::VectorXd::Constant(synthetic_rows.rows(), 1.0 / static_cast<double>(synthetic_rows.rows()));
  return evaluate_weighted(ctx, synthetic_rows, omega);
}

void register_m2m_task(Registry& registry) {
  registry.add_task(std::make_unique<M2mTask>());
  registry.add_method(std::make_unique<M2mSketchMethod>("rff", true));
  registry.add_method(std::make_unique<M2mSketchMethod>("race", true));
  registry.add_method(std::make_unique<M2mSketchMethod>("hist", true));
  registry.add_method(std::make_unique<M2mSketchMethod>("any", false));
  registry.add_method(std::make_unique<DpErmMethod>());
  registry.add_method(std::make_unique<LogisticNonprivateMethod>());
}

}  // namespace privrace::experiments
