#include "race_apps_task.hpp"

#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>

#include "metrics.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/baselines/histogram.hpp"
#include "privrace/core/progress.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/builder.hpp"
#include "params.hpp"
#include "race_params.hpp"
#include "release_sweep.hpp"
#include "privrace/tasks/race_apps.hpp"

namespace privrace::experiments {
namespace {

using K = ParamSpec::Kind;


double nan() { return std::numeric_limits<double>::quiet_NaN(); }

// What every application task shares: the rows a density is built from, its kernel, the public
// box, and a scorer that turns a density (and, for RACE, the sketch) into the task's metrics.
struct AppContext : TaskContext {
  DenseMatrix train;
  KernelSpec kernel;
  SearchBox box;  // public domain (declared in the config, or the generator's)
  // `sketch` is the released sketch behind `f` (nullptr for other densities); `seed` drives any
  // randomness of the evaluation itself (sampling draws).
  virtual json evaluate(const DensityFunction& f, const RaceSketch* sketch, std::uint64_t seed) const = 0;
};

// ---------------------------------------------------------------------------------------
// Data: a generated Gaussian mixture or a registry data set.

enum class AppSource { Mixture, Dataset };

// The options every application task shares (the config's "task" object): the data, a
// generated Gaussian mixture or the config's data set, and the density's kernel.
struct AppDataOptions {
  AppSource source = AppSource::Mixture;
  std::size_t dim = 2, components = 3;
  WrittenNumber imbalance = 1.0, sd = 1.0;  // recorded as written (describe_data)
  double spread = 20.0, separation = 6.0;
  std::size_t points = 20000;
  std::uint64_t data_seed = 1;
  double bandwidth = 1.0;
  std::size_t power = 1;
  double box_lower = 0.0, box_upper = 1.0;
  static const ParamTable<AppDataOptions>& table();
};

const ParamTable<AppDataOptions>& AppDataOptions::table() {
  using O = AppDataOptions;
  static const auto t = ParamTable<O>()
      .add(&O::source, "source", {{"mixture", AppSource::Mixture}, {"dataset", AppSource::Dataset}}, "mixture",
           "generated Gaussian mixture, or the config's data set")
      .add(&O::dim, "dim", K::PositiveInt, 2, "mixture: dimension")
      .add(&O::components, "components", K::PositiveInt, 3, "mixture: components")
      .add(&O::imbalance, "imbalance", K::PositiveNumber, 1.0, "mixture: weight of component c proportional to imbalance^c")
      .add(&O::sd, "sd", K::PositiveNumber, 1.0, "mixture: standard deviation of each component")
      .add(&O::spread, "spread", K::PositiveNumber, 20.0, "mixture: means uniform in [0, spread]^dim")
      .add(&O::separation, "separation", K::PositiveNumber, 6.0, "mixture: minimum distance between means")
      .add(&O::points, "points", K::PositiveInt, 20000, "mixture: points generated")
      .add(&O::data_seed, "data_seed", K::NonNegativeInt, 1, "mixture: generator seed")
      .add(&O::bandwidth, "bandwidth", K::PositiveNumber, 1.0, "p-stable bucket width w of the density")
      .add(&O::power, "power", K::PositiveInt, 1, "concatenated hashes p")
      .add(&O::box_lower, "box_lower", K::Number, 0.0, "dataset: public lower bound of every coordinate")
      .add(&O::box_upper, "box_upper", K::Number, 1.0, "dataset: public upper bound of every coordinate");
  return t;
}

MixtureSpec mixture_spec(const AppDataOptions& o) {
  MixtureSpec s;
  s.dim = o.dim;
  s.components = o.components;
  const double r = o.imbalance;
  for (std::size_t c = 0; c < s.components; ++c) s.weights.push_back(std::pow(r, static_cast<double>(c)));
  s.sd = o.sd;
  s.box = o.spread;
  s.min_separation = o.separation;
  s.seed = o.data_seed;
  return s;
}

// The mixture's public box: the means' range widened by 4 sd on each side.
SearchBox mixture_box(const MixtureSpec& s) {
  SearchBox b;
  b.lower.assign(s.dim, -4 * s.sd);
  b.upper.assign(s.dim, s.box + 4 * s.sd);
  return b;
}

SearchBox declared_box(const ExperimentConfig& cfg, const AppDataOptions& o, std::size_t dim) {
  const double lo = o.box_lower, hi = o.box_upper;
  SearchBox b;
  b.lower.assign(dim, lo);
  b.upper.assign(dim, hi);
  try {
    b.validate(dim);
  } catch (const UsageError& e) {
    throw ConfigError(cfg.file + ": $.task.box_lower/box_upper: " + e.what());
  }
  return b;
}

LoadedDataset load_config_dataset(const ExperimentConfig& cfg, const RunEnvironment& env) {
  const json& entry = env.datasets->entry(cfg.dataset);
  Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
  prep = Preprocessing::from_json(cfg.preprocessing, prep);
  return load_dataset(*env.datasets, cfg.dataset, prep, env.search);
}

void fill_common(AppContext& ctx, const ExperimentConfig& cfg, const AppDataOptions& o, const RunEnvironment& env) {
  ctx.config = &cfg;
  ctx.threads = env.threads;
  ctx.kernel.kernel = Kernel::L2;
  ctx.kernel.bandwidth = o.bandwidth;
  ctx.kernel.power = o.power;
}

json describe_data(const AppContext& ctx, const ExperimentConfig& cfg, const AppDataOptions& o, bool generated) {
  json s = {{"name", generated ? std::string("generated_mixture") : cfg.dataset},
            {"generated", generated},
            {"stand_in", generated ? false : ctx.data.stand_in},
            {"train_rows", ctx.train.rows()},
            {"dim", ctx.train.cols()},
            {"kernel", ctx.kernel.to_json()},
            {"box", {{"lower", ctx.box.lower}, {"upper", ctx.box.upper}}}};
  if (!generated) {
    s["rows"] = ctx.data.x.rows();
    s["checksum"] = ctx.data.checksum_status;
    s["scale"] = ctx.data.preprocessing.value("scale", "none");
    if (ctx.data.stand_in) s["stand_in_reason"] = ctx.data.stand_in_reason;
    note_substitute(s, ctx.data);  // real data of another version than the paper's
  } else {
    s["mixture"] = {{"components", o.components}, {"sd", o.sd}, {"imbalance", o.imbalance}, {"data_seed", o.data_seed}};
  }
  return s;
}

// ---------------------------------------------------------------------------------------
// modes

struct ModesContext : AppContext {
  ModeSearchOptions search;
  DoubleMatrix truth;  // true modes (mixture means, or the exact KDE's modes)
  double radius = 0;   // a true mode is recovered when a found mode lies within this distance
  std::string truth_kind;

  json evaluate(const DensityFunction& f, const RaceSketch*, std::uint64_t) const override {
    const ModeSearchResult res = find_modes(f, box, search);
    const ModeMatch m = match_modes(res.modes, truth, radius);
    const double w = kernel.bandwidth;
    return {{"mean_distance_bw", m.mean_distance / w},
            {"recovered_fraction", static_cast<double>(m.recovered) / static_cast<double>(truth.rows())},
            {"mean_distance", m.mean_distance},
            {"max_distance_bw", m.max_distance / w},
            {"recovered", static_cast<double>(m.recovered)},
            {"modes_found", static_cast<double>(res.modes.size())},
            {"evaluations", static_cast<double>(res.evaluations)}};
  }
};

// The modes task's options (the config's "task" object), decoded once (params.hpp: TypedTask).
struct ModesOptions {
  AppDataOptions data;
  std::size_t modes = 0, starts = 32, grid = 0, max_evaluations = 300;
  double min_separation_bw = 2.0, recovery_radius_bw = 1.0, x_tolerance_bw = 1e-3;
  std::string algorithm = "sbplx";  // NLopt's name (ModeSearchOptions::algorithm)
  static const ParamTable<ModesOptions>& table();
};

const ParamTable<ModesOptions>& ModesOptions::table() {
  using O = ModesOptions;
  static const auto t = ParamTable<O>()
      .add(&O::data, AppDataOptions::table())
      .add(&O::modes, "modes", K::NonNegativeInt, 0, "k modes to find (0 = the number of components; dataset: required)")
      .add(&O::starts, "starts", K::PositiveInt, 32, "NLopt starts")
      .add(&O::grid, "grid", K::NonNegativeInt, 0, "starts from the best points of a public grid of this many points per coordinate (0 = uniform starts)")
      .add(&O::max_evaluations, "max_evaluations", K::PositiveInt, 300, "density evaluations per start")
      .add(&O::min_separation_bw, "min_separation_bw", K::PositiveNumber, 2.0, "maxima closer than this many bandwidths are one mode")
      .add(&O::recovery_radius_bw, "recovery_radius_bw", K::PositiveNumber, 1.0, "a true mode is recovered within this many bandwidths")
      .add(&O::x_tolerance_bw, "x_tolerance_bw", K::PositiveNumber, 1e-3, "NLopt absolute x tolerance in bandwidths")
      .add(&O::algorithm, "algorithm", K::String, "sbplx", "NLopt derivative-free algorithm", {"sbplx", "neldermead"});
  return t;
}

class ModesTask final : public TypedTask<ModesOptions> {
 public:
  std::string name() const override { return "modes"; }
  std::vector<std::string> metrics() const override {
    return {"mean_distance_bw", "recovered_fraction", "mean_distance", "max_distance_bw", "recovered", "modes_found", "evaluations"};
  }
  bool lower_is_better(const std::string& m) const override { return m != "recovered_fraction" && m != "recovered"; }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const ModesOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<ModesContext>();
    fill_common(*ctx, cfg, o.data, env);
    const double w = ctx->kernel.bandwidth;
    ctx->search.starts = o.starts;
    ctx->search.grid = o.grid;
    ctx->search.max_evaluations = o.max_evaluations;
    ctx->search.initial_step = w;
    ctx->search.x_tolerance = o.x_tolerance_bw * w;
    ctx->search.min_separation = o.min_separation_bw * w;
    ctx->search.algorithm = o.algorithm;
    ctx->search.seed = derive_seed(cfg.seed, 0x40DE);  // starting points: data-independent
    ctx->radius = o.recovery_radius_bw * w;
    const bool generated = o.data.source == AppSource::Mixture;
    std::size_t k = o.modes;
    if (generated) {
      const MixtureSpec spec = mixture_spec(o.data);
      Mixture mix = sample_mixture(spec, o.data.points);
      ctx->train = std::move(mix.points);
      ctx->truth = mix.means;
      ctx->box = mixture_box(spec);
      ctx->truth_kind = "mixture means";
      if (k == 0) k = spec.components;
    } else {
      if (k == 0) throw ConfigError(cfg.file + ": $.task.modes: k = 0 modes (a data set needs k >= 1)");
      ctx->data = load_config_dataset(cfg, env);
      ctx->train = ctx->data.x;
      ctx->box = declared_box(cfg, o.data, static_cast<std::size_t>(ctx->train.cols()));
      ctx->truth_kind = "modes of the exact KDE (same search)";
    }
    ctx->search.modes = k;
    if (!generated) {
      // Ground truth = the exact (non-private) KDE's top-k modes, found by the same search.
      const auto t0 = std::chrono::steady_clock::now();
      const ExactKde exact(ctx->train, ctx->kernel);
      const auto res = find_modes([&](const DenseRef& p) { return exact(p); }, ctx->box, ctx->search);
      ctx->truth.resize(static_cast<Eigen::Index>(res.modes.size()), ctx->train.cols());
      for (std::size_t i = 0; i < res.modes.size(); ++i)
        for (Eigen::Index j = 0; j < ctx->train.cols(); ++j)
          ctx->truth(static_cast<Eigen::Index>(i), j) = res.modes[i].point[static_cast<std::size_t>(j)];
      if (Progress::enabled())
        std::cerr << "exact KDE modes: " << res.modes.size() << " in " << seconds_since(t0) << " s (" << exact.distinct_rows()
                  << " distinct rows)\n";
    }
    ctx->data_summary = describe_data(*ctx, cfg, o.data, generated);
    json modes = json::array();
    for (Eigen::Index i = 0; i < ctx->truth.rows(); ++i) {
      json row = json::array();
      for (Eigen::Index j = 0; j < ctx->truth.cols(); ++j) row.push_back(ctx->truth(i, j));
      modes.push_back(row);
    }
    ctx->data_summary["true_modes"] = modes;
    ctx->data_summary["true_modes_kind"] = ctx->truth_kind;
    ctx->data_summary["modes_k"] = k;
    return ctx;
  }
};

// ---------------------------------------------------------------------------------------
// anomaly

struct AnomalyContext : AppContext {
  DenseMatrix test;
  std::vector<int> test_anomalous;
  json evaluate(const DensityFunction& f, const RaceSketch*, std::uint64_t) const override {
    std::vector<double> score = f(test);
    for (auto& s : score) s = -s;  // low density = anomalous
    return {{"auc", roc_auc(score, test_anomalous)}};
  }
};

// The anomaly task's options, decoded once (params.hpp: TypedTask).
struct AnomalyOptions {
  AppDataOptions data;
  WrittenNumber anomaly_label = 1.0;  // recorded as written
  std::size_t outliers = 200;
  double test_fraction = 0.3;
  std::uint64_t split_seed = 1;
  std::string train_on = "all";
  static const ParamTable<AnomalyOptions>& table();
};

const ParamTable<AnomalyOptions>& AnomalyOptions::table() {
  using O = AnomalyOptions;
  static const auto t = ParamTable<O>()
      .add(&O::data, AppDataOptions::table())
      .add(&O::anomaly_label, "anomaly_label", K::Number, 1.0, "dataset: label value of the anomalies")
      .add(&O::outliers, "outliers", K::NonNegativeInt, 200, "mixture: outliers planted uniformly in the box")
      .add(&O::test_fraction, "test_fraction", K::PositiveNumber, 0.3, "share of the rows scored (held out from the density)")
      .add(&O::split_seed, "split_seed", K::NonNegativeInt, 1, "seed of the split")
      .add(&O::train_on, "train_on", K::String, "all", "the density is of all training rows (unsupervised) or of the normal ones", {"all", "normal"});
  return t;
}

class AnomalyTask final : public TypedTask<AnomalyOptions> {
 public:
  std::string name() const override { return "anomaly"; }
  std::vector<std::string> metrics() const override { return {"auc"}; }
  bool lower_is_better(const std::string&) const override { return false; }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const AnomalyOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<AnomalyContext>();
    fill_common(*ctx, cfg, o.data, env);
    const bool generated = o.data.source == AppSource::Mixture;
    DenseMatrix all;
    std::vector<int> anomalous;
    if (generated) {
      const MixtureSpec spec = mixture_spec(o.data);
      Mixture mix = sample_mixture(spec, o.data.points);
      ctx->box = mixture_box(spec);
      const std::size_t n_out = o.outliers;
      all.resize(mix.points.rows() + static_cast<Eigen::Index>(n_out), mix.points.cols());
      all.topRows(mix.points.rows()) = mix.points;
      anomalous.assign(static_cast<std::size_t>(mix.points.rows()), 0);
      SeededRandom rng(derive_seed(spec.seed, 0x0071));
      for (std::size_t i = 0; i < n_out; ++i) {
        for (std::size_t j = 0; j < spec.dim; ++j)
          all(mix.points.rows() + static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) =
              static_cast<Real>(ctx->box.lower[j] + rng.unit() * (ctx->box.upper[j] - ctx->box.lower[j]));
        anomalous.push_back(1);
      }
    } else {
      ctx->data = load_config_dataset(cfg, env);
      if (ctx->data.y.size() != static_cast<std::size_t>(ctx->data.x.rows()))
        throw ConfigError(cfg.file + ": $.dataset.name: data set '" + cfg.dataset + "' has no label to mark anomalies");
      all = ctx->data.x;
      const double label = o.anomaly_label;
      for (const double y : ctx->data.y) anomalous.push_back(y == label ? 1 : 0);
      ctx->box = declared_box(cfg, o.data, static_cast<std::size_t>(all.cols()));
    }
    const auto n = static_cast<std::size_t>(all.rows());
    const auto n_test = static_cast<std::size_t>(std::llround(o.test_fraction * static_cast<double>(n)));
    if (n_test == 0 || n_test >= n) throw ConfigError(cfg.file + ": $.task.test_fraction: leaves no test or no training rows");
    const Split split = seeded_split(n, n_test, o.split_seed);
    ctx->test = select_rows(all, split.held_out);
    for (const auto i : split.held_out) ctx->test_anomalous.push_back(anomalous[i]);
    std::vector<std::size_t> train_rows;
    for (const auto i : split.kept)
      if (o.train_on == "all" || !anomalous[i]) train_rows.push_back(i);
    ctx->train = select_rows(all, train_rows);
    std::size_t test_pos = 0, train_pos = 0;
    for (const int a : ctx->test_anomalous) test_pos += a;
    for (const auto i : train_rows) train_pos += anomalous[i];
    if (test_pos == 0 || test_pos == ctx->test_anomalous.size())
      throw InputError(cfg.file + ": anomaly evaluation with one class only: the test rows hold " + std::to_string(test_pos) +
                       " anomalies of " + std::to_string(ctx->test_anomalous.size()));
    ctx->data_summary = describe_data(*ctx, cfg, o.data, generated);
    ctx->data_summary["test_rows"] = ctx->test.rows();
    ctx->data_summary["test_anomalies"] = test_pos;
    ctx->data_summary["train_anomalies"] = train_pos;
    ctx->data_summary["train_on"] = o.train_on;
    if (!generated) ctx->data_summary["anomaly_label"] = o.anomaly_label;
    return ctx;
  }
};

// ---------------------------------------------------------------------------------------
// diversity

struct DiversityContext : AppContext {
  std::vector<int> labels;
  std::size_t components = 0, draws = 0, trials = 0;
  double floor = 0;
  json evaluate(const DensityFunction& f, const RaceSketch*, std::uint64_t seed) const override {
    const std::vector<double> density = f(train);
    double sum = 0, sum2 = 0, small = 0;
    for (std::size_t t = 0; t < trials; ++t) {
      SeededRandom rng(derive_seed(seed, t));
      const auto picked = inverse_density_sample(density, draws, floor, rng);
      const double c = component_coverage(picked, labels, components);
      sum += c;
      sum2 += c * c;
      std::size_t in_small = 0;  // picks outside the largest component (component 0)
      for (const auto i : picked) in_small += labels[i] != 0;
      small += static_cast<double>(in_small) / static_cast<double>(draws);
    }
    const double m = sum / static_cast<double>(trials);
    return {{"coverage", m},
            {"coverage_sd", std::sqrt(std::max(0.0, sum2 / static_cast<double>(trials) - m * m))},
            {"minor_share", small / static_cast<double>(trials)}};
  }
};

// The diversity task's options, decoded once (params.hpp: TypedTask).
struct DiversityOptions {
  AppDataOptions data;
  std::size_t draws = 20, trials = 200;
  double density_floor = 1e-4;
  static const ParamTable<DiversityOptions>& table();
};

const ParamTable<DiversityOptions>& DiversityOptions::table() {
  using O = DiversityOptions;
  static const auto t = ParamTable<O>()
      .add(&O::data, AppDataOptions::table())
      .add(&O::draws, "draws", K::PositiveInt, 20, "k points drawn without replacement")
      .add(&O::trials, "trials", K::PositiveInt, 200, "independent draws of k per cell (coverage is their mean)")
      .add(&O::density_floor, "density_floor", K::PositiveNumber, 1e-4, "weights are 1 / max(f, floor) (a private f can be <= 0)");
  return t;
}

class DiversityTask final : public TypedTask<DiversityOptions> {
 public:
  std::string name() const override { return "diversity"; }
  std::vector<std::string> metrics() const override { return {"coverage", "coverage_sd", "minor_share"}; }
  bool lower_is_better(const std::string& m) const override { return m == "coverage_sd"; }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const DiversityOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<DiversityContext>();
    fill_common(*ctx, cfg, o.data, env);
    if (o.data.source != AppSource::Mixture) throw ConfigError(cfg.file + ": $.task.source: diversity needs a generated mixture (known components)");
    const MixtureSpec spec = mixture_spec(o.data);
    Mixture mix = sample_mixture(spec, o.data.points);
    ctx->train = std::move(mix.points);
    ctx->labels = std::move(mix.labels);
    ctx->box = mixture_box(spec);
    ctx->components = spec.components;
    ctx->draws = o.draws;
    ctx->trials = o.trials;
    ctx->floor = o.density_floor;
    if (ctx->draws > static_cast<std::size_t>(ctx->train.rows())) throw ConfigError(cfg.file + ": $.task.draws: more draws than points");
    std::vector<std::size_t> sizes(spec.components, 0);
    for (const int c : ctx->labels) ++sizes[static_cast<std::size_t>(c)];
    ctx->data_summary = describe_data(*ctx, cfg, o.data, true);
    ctx->data_summary["component_sizes"] = sizes;
    ctx->data_summary["draws"] = ctx->draws;
    ctx->data_summary["trials"] = ctx->trials;
    ctx->data_summary["sample_is_private"] = false;
    ctx->data_summary["sample_note"] = "the picked records are data; only their probabilities come from the density. Only coverage is recorded.";
    return ctx;
  }
};

// ---------------------------------------------------------------------------------------
// neighbors

struct NeighborsContext : AppContext {
  DenseMatrix queries;
  std::vector<std::vector<std::size_t>> truth;
  std::size_t k = 10;
  json evaluate(const DensityFunction& f, const RaceSketch* sketch, std::uint64_t) const override {
    json m;
    // Query-independent: rank candidates by the (private) density at the candidate.
    const std::vector<double> dens = f(train);
    const auto by_density = top_k(dens, k);
    m["recall_density"] = recall_at_k(std::vector<std::vector<std::size_t>>(truth.size(), by_density), truth);
    m["recall_random"] = static_cast<double>(k) / static_cast<double>(train.rows());  // expectation of a random top-k
    if (sketch) {
      const SketchNeighbors s = sketch_neighbors(*sketch, train, queries, k);
      m["recall_weighted"] = recall_at_k(s.by_weighted, truth);
      m["recall_collisions"] = recall_at_k(s.by_collisions, truth);
    } else {
      m["recall_weighted"] = m["recall_collisions"] = nan();
    }
    return m;
  }
};

// The neighbors task's options, decoded once (params.hpp: TypedTask).
struct NeighborsOptions {
  AppDataOptions data;
  std::size_t queries = 200;
  std::uint64_t query_seed = 1;
  std::size_t k = 10, max_candidates = 0;
  static const ParamTable<NeighborsOptions>& table();
};

const ParamTable<NeighborsOptions>& NeighborsOptions::table() {
  using O = NeighborsOptions;
  static const auto t = ParamTable<O>()
      .add(&O::data, AppDataOptions::table())
      .add(&O::queries, "queries", K::PositiveInt, 200, "held-out queries")
      .add(&O::query_seed, "query_seed", K::NonNegativeInt, 1, "seed of the held-out queries")
      .add(&O::k, "k", K::PositiveInt, 10, "neighbours returned (recall@k)")
      .add(&O::max_candidates, "max_candidates", K::NonNegativeInt, 0, "seeded subsample of the candidate rows (0 = all)");
  return t;
}

class NeighborsTask final : public TypedTask<NeighborsOptions> {
 public:
  std::string name() const override { return "neighbors"; }
  std::vector<std::string> metrics() const override {
    return {"recall_weighted", "recall_collisions", "recall_density", "recall_random"};
  }
  bool lower_is_better(const std::string&) const override { return false; }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const NeighborsOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<NeighborsContext>();
    fill_common(*ctx, cfg, o.data, env);
    const bool generated = o.data.source == AppSource::Mixture;
    DenseMatrix all;
    if (generated) {
      const MixtureSpec spec = mixture_spec(o.data);
      all = sample_mixture(spec, o.data.points).points;
      ctx->box = mixture_box(spec);
    } else {
      ctx->data = load_config_dataset(cfg, env);
      all = ctx->data.x;
      ctx->box = declared_box(cfg, o.data, static_cast<std::size_t>(all.cols()));
    }
    const auto q = o.queries;
    if (q >= static_cast<std::size_t>(all.rows())) throw ConfigError(cfg.file + ": $.task.queries: leaves no candidates");
    const Split split = seeded_split(static_cast<std::size_t>(all.rows()), q, o.query_seed);
    ctx->queries = select_rows(all, split.held_out);
    ctx->train = select_rows(all, split.kept);
    const auto cap = o.max_candidates;
    if (cap > 0 && cap < static_cast<std::size_t>(ctx->train.rows())) {
      const Split sub = seeded_split(static_cast<std::size_t>(ctx->train.rows()), cap, o.query_seed + 1);
      ctx->train = select_rows(ctx->train, sub.held_out);
    }
    ctx->k = o.k;
    if (ctx->k > static_cast<std::size_t>(ctx->train.rows())) throw ConfigError(cfg.file + ": $.task.k: more neighbours than candidates");
    ctx->truth = exact_neighbors(ctx->train, ctx->queries, ctx->k);
    ctx->data_summary = describe_data(*ctx, cfg, o.data, generated);
    ctx->data_summary["queries"] = ctx->queries.rows();
    ctx->data_summary["k"] = ctx->k;
    ctx->data_summary["candidates_are_records"] = true;
    return ctx;
  }
};

// ---------------------------------------------------------------------------------------
// Methods: one density each, scored by the task.

enum class DensityKind { Race, RaceNonPrivate, ExactKde, Histogram, Constant };

// The parameters of every density kind; each kind's table binds those it takes (a RACE
// sketch: rows, width and, private, the noise; a histogram: bins and neighbors; the references none).
struct AppParams {
  std::size_t rows = 0, width = 0;
  RaceNoise noise;
  int bins = 0;
  NeighborRelation neighbors = NeighborRelation::AddRemove;
  std::string check() const { return noise.check(); }  // the default noise of the other kinds holds
  static ParamTable<AppParams> table(DensityKind kind) {
    using P = AppParams;
    ParamTable<P> t;
    if (kind == DensityKind::Race || kind == DensityKind::RaceNonPrivate) {
      t.add(&P::rows, "rows", K::PositiveInt, nullptr, "sketch rows R").add(&P::width, "width", K::PositiveInt, 1000, "sketch columns W");
      if (kind == DensityKind::Race) t.add(&P::noise, RaceNoise::table());
    } else if (kind == DensityKind::Histogram) {
      t.add(&P::bins, "bins", K::PositiveInt, nullptr, "equal-width bins per coordinate on the public box")
          .add(&P::neighbors, "neighbors", neighbor_choices(), "add-remove", "neighbouring relation");
    }
    return t;
  }
};

class AppMethod final : public TypedMethod<AppContext, AppParams> {
 public:
  AppMethod(std::string task, DensityKind kind, std::string name)
      : task_(std::move(task)), kind_(kind), name_(std::move(name)), table_(AppParams::table(kind)) {}
  std::string name() const override { return name_; }
  std::string task() const override { return task_; }
  bool uses_epsilon() const override { return kind_ == DensityKind::Race || kind_ == DensityKind::Histogram; }

  void run(const AppContext& ctx, const AppParams& p, const CellGroup& group, const Emit& emit) const override {
    switch (kind_) {
      case DensityKind::Race:
      case DensityKind::RaceNonPrivate:
        return run_race(ctx, p, group, emit);
      case DensityKind::ExactKde:
      case DensityKind::Constant:
        return run_reference(ctx, group, emit);
      case DensityKind::Histogram:
        return run_histogram(ctx, p, group, emit);
    }
  }

 private:
  const ParamTable<AppParams>& param_table() const override { return table_; }

  // RACE: one exact sketch a group; each epsilon releases a noisy copy (eps = inf: the counts).
  void run_race(const AppContext& ctx, const AppParams& p, const CellGroup& group, const Emit& emit) const {
    const auto t0 = std::chrono::steady_clock::now();
    ReleaseParams params;
    params.family.kernel = ctx.kernel.kernel;
    params.family.bandwidth = ctx.kernel.bandwidth;
    params.family.power = ctx.kernel.power;
    params.family.rows = p.rows;
    params.width = p.width;
    params.threads = ctx.threads;
    const ExactSketch exact = build_group_exact(params, group, ctx.train);
    const double hash_seconds = seconds_since(t0);
    const bool is_private = kind_ == DensityKind::Race;
    // Scores a released sketch (the exact counts for the eps = inf reference).
    const auto score = [&](const RaceSketch& sketch, const PendingCell& cell, double noise_seconds) {
      const RaceDensity density(sketch);
      const auto t2 = std::chrono::steady_clock::now();
      CellResult r;
      r.metrics = ctx.evaluate([&](const DenseRef& q) { return density(q); }, &sketch, derive_seed(cell.noise_seed, 0xD1));
      r.query_seconds_per_query = seconds_since(t2);
      r.build_seconds = hash_seconds + noise_seconds;
      r.details = {{"n_hat", density.n_hat()},
                   {"n_train", ctx.train.rows()},
                   {"private", is_private},
                   {"budget", "one sketch with the whole epsilon; the application only post-processes its counts and N-hat"},
                   {"query_seconds_note", "seconds for the whole application (all queries / the whole search)"}};
      if (is_private) {
        r.details["noise_scale"] = sketch.privacy().noise_scale.value_or(0.0);
        r.details["realised_epsilon"] = sketch.privacy().realised_epsilon.value_or(cell.epsilon);
      }
      return r;
    };
    if (!is_private) {
      for (std::size_t i = 0; i < group.cells.size(); ++i) emit(i, score(exact.counts(), group.cells[i], 0.0));
      return;
    }
    sweep_epsilons(
        exact, group, emit, [&](double epsilon) { return p.noise.privacy(epsilon); },
        [&](const CellRelease<Release>& c) { return score(c.release.sketch(), c.cell, c.noise_seconds); });
  }

  // The non-private references: the exact KDE, or a constant density (uniform sampling).
  void run_reference(const AppContext& ctx, const CellGroup& group, const Emit& emit) const {
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<ExactKde> exact;
    if (kind_ == DensityKind::ExactKde) exact.emplace(ctx.train, ctx.kernel);
    const double build = seconds_since(t0);
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const auto t1 = std::chrono::steady_clock::now();
      CellResult r;
      const DensityFunction f = exact ? DensityFunction([&](const DenseRef& q) { return (*exact)(q); })
                                      : DensityFunction([](const DenseRef& q) { return std::vector<double>(static_cast<std::size_t>(q.rows()), 1.0); });
      r.metrics = ctx.evaluate(f, nullptr, derive_seed(group.cells[i].noise_seed, 0xD1));
      r.query_seconds_per_query = seconds_since(t1);
      r.build_seconds = build;
      r.details = {{"private", false},
                   {"density", exact ? "exact KDE (non-private reference)" : "constant (uniform sampling reference)"}};
      emit(i, std::move(r));
    }
  }

  // Private histogram density: bins^d equal cells on the public box (one [lower, upper]
  // for every coordinate), counts + discrete Laplace of scale sensitivity / eps
  // (sensitivity 1 add/remove, 2 replace: a record is in one cell; baselines/histogram.hpp).
  void run_histogram(const AppContext& ctx, const AppParams& p, const CellGroup& group, const Emit& emit) const {
    const double lo = *std::min_element(ctx.box.lower.begin(), ctx.box.lower.end());
    const double hi = *std::max_element(ctx.box.upper.begin(), ctx.box.upper.end());
    const auto t0 = std::chrono::steady_clock::now();
    const baselines::HistogramRelease hist(ctx.train, baselines::Domain{lo, hi}, p.bins);
    const double build = seconds_since(t0);
    const double sens = p.neighbors == NeighborRelation::Replace ? 2.0 : 1.0;
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      SeededRandom rng(cell.noise_seed);
      const auto t1 = std::chrono::steady_clock::now();
      const auto counts = hist.noisy_counts(cell.epsilon, sens, &rng);
      const double noise_seconds = seconds_since(t1);
      const double n = static_cast<double>(ctx.train.rows());  // a scale only: scores are ranks
      const auto f = [&](const DenseRef& q) {
        std::vector<double> out(static_cast<std::size_t>(q.rows()));
        for (Eigen::Index j = 0; j < q.rows(); ++j) out[static_cast<std::size_t>(j)] = static_cast<double>(counts[hist.cell_of(q, j)]) / n;
        return out;
      };
      const auto t2 = std::chrono::steady_clock::now();
      CellResult r;
      r.metrics = ctx.evaluate(f, nullptr, derive_seed(cell.noise_seed, 0xD1));
      r.query_seconds_per_query = seconds_since(t2);
      r.build_seconds = build + noise_seconds;
      r.details = {{"private", true},
                   {"cells", hist.cells()},
                   {"sensitivity", sens},
                   {"noise_scale", sens / cell.epsilon},
                   {"domain", {lo, hi}},
                   {"budget", "every cell count with the whole epsilon (a record is in one cell: parallel composition)"}};
      emit(i, std::move(r));
    }
  }

  std::string task_;
  DensityKind kind_;
  std::string name_;
  ParamTable<AppParams> table_;
};

}  // namespace

void register_race_apps_task(Registry& registry) {
  registry.add_task(std::make_unique<ModesTask>());
  registry.add_task(std::make_unique<AnomalyTask>());
  registry.add_task(std::make_unique<DiversityTask>());
  registry.add_task(std::make_unique<NeighborsTask>());
  for (const std::string task : {"modes", "anomaly", "diversity", "neighbors"}) {
    registry.add_method(std::make_unique<AppMethod>(task, DensityKind::Race, "race_" + task));
    registry.add_method(std::make_unique<AppMethod>(task, DensityKind::RaceNonPrivate, "race_nonprivate_" + task));
    if (task != "neighbors")
      registry.add_method(std::make_unique<AppMethod>(task, DensityKind::ExactKde, "exact_kde_" + task));
  }
  registry.add_method(std::make_unique<AppMethod>("anomaly", DensityKind::Histogram, "histogram_anomaly"));
  registry.add_method(std::make_unique<AppMethod>("diversity", DensityKind::Constant, "uniform_diversity"));
}

}  // namespace privrace::experiments
