#include "classify_task.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>

#include "privrace/core/clock.hpp"
#include "privrace/baselines/objective_perturbation.hpp"
#include "privrace/core/progress.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/tasks/classify.hpp"
#include "params.hpp"
#include "race_params.hpp"
#include "release_sweep.hpp"

namespace privrace::experiments {

DoubleMatrix logistic_inputs(const DenseMatrix& x) {
  // Unit cube -> [-1, 1], bias column, divided by sqrt(d + 1): ||row|| <= 1 for every record.
  const Eigen::Index d = x.cols();
  DoubleMatrix out(x.rows(), d + 1);
  out.leftCols(d) = (2.0 * x.cast<double>().array() - 1.0).matrix();
  out.col(d).setOnes();
  out /= std::sqrt(static_cast<double>(d + 1));
  return out;
}

namespace {


template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<std::size_t>& idx) {
  std::vector<T> out;
  out.reserve(idx.size());
  for (const auto i : idx) out.push_back(v[i]);
  return out;
}

// Class indices in increasing label order; fills the context's class values and count.
std::vector<int> class_labels(const ExperimentConfig& cfg, ClassifyContext& ctx) {
  std::map<double, int> index;
  for (const double v : ctx.data.y) index.emplace(v, 0);
  int k = 0;
  for (auto& [v, i] : index) {
    i = k++;
    ctx.class_values.push_back(v);
  }
  ctx.classes = index.size();
  if (ctx.classes < 2) throw ConfigError(cfg.file + ": $.dataset.name: the label has fewer than 2 classes");
  std::vector<int> labels;
  for (const double v : ctx.data.y) labels.push_back(index.at(v));
  return labels;
}

// The config's "task" object, decoded once (params.hpp: TypedTask).
struct ClassifyOptions {
  double test_fraction = 0.2;
  std::uint64_t split_seed = 1;
  double bandwidth = 0.0;
  double validation_fraction = 0.2;
  int search_iterations = 6;
  std::size_t search_rows = 100, search_width = 100;
  static const ParamTable<ClassifyOptions>& table() {
    using K = ParamSpec::Kind;
    using O = ClassifyOptions;
    static const auto t = ParamTable<O>()
        .add(&O::test_fraction, "test_fraction", K::PositiveNumber, 0.2, "share of the rows held out as the test set")
        .add(&O::split_seed, "split_seed", K::NonNegativeInt, 1, "seed of the train/test split")
        .add(&O::bandwidth, "bandwidth", K::Number, 0.0, "p-stable bucket width of RACE; 0 = binary search on [0, 1]")
        .add(&O::validation_fraction, "validation_fraction", K::PositiveNumber, 0.2, "share of the TRAINING rows used to choose the bandwidth")
        .add(&O::search_iterations, "search_iterations", K::PositiveInt, 6, "binary-search halvings of [0, 1]")
        .add(&O::search_rows, "search_rows", K::PositiveInt, 100, "R of the (non-private) classifiers scored during the search")
        .add(&O::search_width, "search_width", K::PositiveInt, 100, "W of the classifiers scored during the search");
    return t;
  }
};

// Bandwidth: given, or a binary search scored on a validation part of the TRAINING rows
// (the test rows never influence it). It uses exact counts, i.e. it is NOT private; the
// paper tunes its hyperparameters the same way and says so (CCS'21 section 5).
void choose_bandwidth(const ExperimentConfig& cfg, const ClassifyOptions& o, const RunEnvironment& env,
                      ClassifyContext& ctx) {
  const double given = o.bandwidth;
  if (given > 0) {
    ctx.bandwidth = given;
    ctx.bandwidth_selection = {{"method", "given"}, {"bandwidth", given}};
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t nt = ctx.train_x.rows();
  const auto n_val = static_cast<std::size_t>(std::llround(o.validation_fraction * static_cast<double>(nt)));
  const Split vs = seeded_split(nt, n_val, o.split_seed + 1);
  const DenseMatrix fx = select_rows(ctx.train_x, vs.kept), vx = select_rows(ctx.train_x, vs.held_out);
  const auto fy = pick(ctx.train_y, vs.kept), vy = pick(ctx.train_y, vs.held_out);
  RaceClassifierSpec spec;
  spec.rows = o.search_rows;
  spec.width = o.search_width;
  spec.seed = derive_seed(cfg.seed, 0xB4D);
  spec.threads = env.threads;
  const auto res = search_bandwidth(fx, fy, vx, vy, ctx.classes, spec, o.search_iterations);
  ctx.bandwidth = res.bandwidth;
  json trace = json::array();
  for (const auto& [w, acc] : res.trace) trace.push_back({w, acc});
  ctx.bandwidth_selection = {{"method", "binary search on [0, 1], max-likelihood accuracy on a validation split of the training data"},
                             {"private", false},
                             {"note", "exact (non-private) counts: the choice spends no budget only because it is not private"},
                             {"bandwidth", res.bandwidth},
                             {"validation_accuracy", res.validation_accuracy},
                             {"validation_rows", vy.size()},
                             {"search_rows", spec.rows},
                             {"search_width", spec.width},
                             {"trace", trace},
                             {"seconds", seconds_since(t0)}};
  if (Progress::enabled())
    std::cerr << "bandwidth search: w = " << res.bandwidth << " (validation accuracy " << res.validation_accuracy << ")\n";
}

class ClassificationTask final : public TypedTask<ClassifyOptions> {
 public:
  std::string name() const override { return "classification"; }
  std::vector<std::string> metrics() const override { return {"accuracy", "error"}; }
  bool lower_is_better(const std::string& metric) const override { return metric != "accuracy"; }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const ClassifyOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<ClassifyContext>();
    ctx->config = &cfg;
    const json& entry = env.datasets->entry(cfg.dataset);
    Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
    prep = Preprocessing::from_json(cfg.preprocessing, prep);
    ctx->data = load_dataset(*env.datasets, cfg.dataset, prep, env.search);
    const auto& data = ctx->data;
    if (data.y.size() != static_cast<std::size_t>(data.x.rows()))
      throw ConfigError(cfg.file + ": $.dataset.name: data set '" + cfg.dataset + "' has no class label");

    const std::vector<int> labels = class_labels(cfg, *ctx);
    const std::size_t n = static_cast<std::size_t>(data.x.rows());
    const double tf = o.test_fraction;
    if (!(tf < 1)) throw ConfigError(cfg.file + ": $.task.test_fraction: expected a number in (0, 1)");
    const auto n_test = static_cast<std::size_t>(std::llround(tf * static_cast<double>(n)));
    const Split split = seeded_split(n, n_test, o.split_seed);
    ctx->test_x = select_rows(data.x, split.held_out);
    ctx->train_x = select_rows(data.x, split.kept);
    ctx->test_y = pick(labels, split.held_out);
    ctx->train_y = pick(labels, split.kept);
    choose_bandwidth(cfg, o, env, *ctx);
    ctx->train_lr = logistic_inputs(ctx->train_x);  // also the inputs of one-vs-rest (classify_ovr.cpp)
    ctx->test_lr = logistic_inputs(ctx->test_x);
    if (ctx->classes == 2) {
      ctx->train_pm.resize(static_cast<Eigen::Index>(ctx->train_y.size()));
      for (std::size_t i = 0; i < ctx->train_y.size(); ++i) ctx->train_pm(static_cast<Eigen::Index>(i)) = ctx->train_y[i] == 1 ? 1.0 : -1.0;
    }
    std::vector<std::size_t> counts(ctx->classes, 0);
    for (const int c : ctx->train_y) ++counts[static_cast<std::size_t>(c)];
    ctx->data_summary = {{"name", cfg.dataset},
                         {"stand_in", data.stand_in},
                         {"rows", data.x.rows()},
                         {"dim", data.x.cols()},
                         {"train_rows", ctx->train_x.rows()},
                         {"test_rows", ctx->test_x.rows()},
                         {"classes", ctx->class_values},
                         {"train_class_counts", counts},
                         {"checksum", data.checksum_status},
                         {"scale", data.preprocessing.value("scale", "none")},
                         {"bandwidth", ctx->bandwidth}};
    if (data.stand_in) ctx->data_summary["stand_in_reason"] = data.stand_in_reason;
    note_substitute(ctx->data_summary, data);  // real data of another version than the paper's
    return ctx;
  }
};

json accuracy_metrics(const std::vector<int>& predicted, const std::vector<int>& truth) {
  const double acc = accuracy(predicted, truth);
  return {{"accuracy", acc}, {"error", 1 - acc}};
}

// RACE max-likelihood / MAP classifier (tasks/classify.hpp): one private sketch per class, each
// with the whole epsilon (parallel composition over the disjoint classes). The exact counts
// depend only on (R, W, seed), so a group builds them once and each epsilon privatizes a copy.
struct RaceClassifierParams {
  std::size_t rows = 0, width = 0, power = 0;
  DecisionRule rule = DecisionRule::MaxLikelihood;
  RaceNoise noise;
  std::string check() const { return noise.check(); }
  static const ParamTable<RaceClassifierParams>& table() {
    using K = ParamSpec::Kind;
    using P = RaceClassifierParams;
    static const auto t =
        ParamTable<P>()
            .add(&P::rows, "rows", K::PositiveInt, nullptr, "sketch rows R")
            .add(&P::width, "width", K::PositiveInt, 100, "sketch columns W")
            .add(&P::power, "power", K::PositiveInt, 1, "concatenated p-stable hashes p")
            .add(&P::rule, "rule", {{"ml", DecisionRule::MaxLikelihood}, {"map", DecisionRule::Map}}, "ml",
                 "max likelihood S_c/N-hat_c or MAP S_c (prior from the noisy N-hat)")
            .add(&P::noise, RaceNoise::table());
    return t;
  }
};

class RaceClassifierMethod final : public TypedMethod<ClassifyContext, RaceClassifierParams> {
 public:
  std::string name() const override { return "race_classifier"; }
  std::string task() const override { return "classification"; }
  void run(const ClassifyContext& ctx, const RaceClassifierParams& p, const CellGroup& group, const Emit& emit) const override {
    RaceClassifierSpec spec;
    spec.rows = p.rows;
    spec.width = p.width;
    spec.power = p.power;
    spec.bandwidth = ctx.bandwidth;
    spec.seed = group_hash_seed(group);
    spec.threads = ctx.threads;
    RaceClassifier exact(spec, static_cast<std::size_t>(ctx.train_x.cols()), ctx.classes);
    exact.fit(ctx.train_x, ctx.train_y);
    const DecisionRule rule = p.rule;
    // Each epsilon: a copy of the exact class sketches, noised once (the exact counts are never released).
    const auto privatized = [&](double epsilon, const NoiseSource& noise) {
      RaceClassifier clf = exact;
      clf.privatize(p.noise.privacy(epsilon), noise);
      return clf;
    };
    sweep_epsilons(group, emit, privatized, [&](const CellRelease<RaceClassifier>& c) {
      const RaceClassifier& clf = c.release;
      const auto t2 = std::chrono::steady_clock::now();
      const auto pred = clf.predict(ctx.test_x, rule);
      const double query_seconds = seconds_since(t2);
      CellResult r;
      r.metrics = accuracy_metrics(pred, ctx.test_y);
      r.build_seconds = exact.build_seconds() + c.noise_seconds;
      r.query_seconds_per_query = query_seconds / static_cast<double>(ctx.test_x.rows());
      r.details = {{"bandwidth", ctx.bandwidth},
                   {"bandwidth_selection", ctx.bandwidth_selection},
                   {"budget", "each class sketch spends the whole epsilon (parallel composition over disjoint classes); "
                              "class priors from the noisy N-hat (post-processing)"},
                   {"n_hat", clf.n_hat()},
                   {"hash_seconds", exact.build_seconds()},
                   {"noise_seconds", c.noise_seconds},
                   {"noise_scale", clf.sketch(0).privacy().noise_scale.value_or(0.0)}};
      return r;
    });
  }
};

// Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2 (baselines/objective_perturbation.hpp).
struct ObjectivePerturbationParams {
  double lambda = 0;
  static const ParamTable<ObjectivePerturbationParams>& table() {
    static const auto t = ParamTable<ObjectivePerturbationParams>().add(
        &ObjectivePerturbationParams::lambda, "lambda", ParamSpec::Kind::PositiveNumber, nullptr, "L2 regulariser Lambda > 0");
    return t;
  }
};

class ObjectivePerturbationMethod final : public TypedMethod<ClassifyContext, ObjectivePerturbationParams> {
 public:
  std::string name() const override { return "objective_perturbation"; }
  std::string task() const override { return "classification"; }
  void run(const ClassifyContext& ctx, const ObjectivePerturbationParams& p, const CellGroup& group,
           const Emit& emit) const override {
    if (ctx.classes != 2) throw UsageError("objective_perturbation: binary classification only");
    const double lambda = p.lambda;
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      SeededRandom rng(cell.noise_seed);
      const auto t0 = std::chrono::steady_clock::now();
      const ObjPertResult fit = objective_perturbation_logistic(ctx.train_lr, ctx.train_pm, cell.epsilon, lambda, rng);
      const double build = seconds_since(t0);
      const auto t1 = std::chrono::steady_clock::now();
      const Eigen::VectorXd margin = ctx.test_lr * fit.w;
      std::vector<int> pred(static_cast<std::size_t>(margin.size()));
      for (Eigen::Index j = 0; j < margin.size(); ++j) pred[static_cast<std::size_t>(j)] = margin(j) > 0 ? 1 : 0;
      CellResult r;
      r.metrics = accuracy_metrics(pred, ctx.test_y);
      r.build_seconds = build;
      r.query_seconds_per_query = seconds_since(t1) / static_cast<double>(ctx.test_x.rows());
      r.details = {{"epsilon_prime", fit.epsilon_prime},
                   {"extra_regulariser", fit.extra_reg},
                   {"noise_norm", fit.noise_norm},
                   {"newton_steps", fit.newton_steps},
                   {"neighbors", "replace"},
                   {"row_scaling", "[2x - 1, 1] / sqrt(d + 1)"}};
      emit(i, std::move(r));
    }
  }
};

// The majority class of the training labels (non-private reference line).
class MajorityMethod final : public TypedMethod<ClassifyContext, NoParams> {
 public:
  std::string name() const override { return "majority"; }
  std::string task() const override { return "classification"; }
  bool uses_epsilon() const override { return false; }
  void run(const ClassifyContext& ctx, const NoParams&, const CellGroup& group, const Emit& emit) const override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::size_t> counts(ctx.classes, 0);
    for (const int c : ctx.train_y) ++counts[static_cast<std::size_t>(c)];
    const int major = static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
    const double build = seconds_since(t0);
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      CellResult r;
      r.metrics = accuracy_metrics(std::vector<int>(ctx.test_y.size(), major), ctx.test_y);
      r.build_seconds = build;
      r.details = {{"private", false}, {"majority_class", ctx.class_values[static_cast<std::size_t>(major)]}};
      emit(i, std::move(r));
    }
  }
};

}  // namespace

void register_classify_task(Registry& registry) {
  registry.add_task(std::make_unique<ClassificationTask>());
  registry.add_method(std::make_unique<RaceClassifierMethod>());
  registry.add_method(std::make_unique<ObjectivePerturbationMethod>());
  registry.add_method(std::make_unique<MajorityMethod>());
}

}  // namespace privrace::experiments
