#include "regress_task.hpp"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>

#include "privrace/core/clock.hpp"
#include "privrace/baselines/linear_regression.hpp"
#include "privrace/privacy/budget.hpp"
#include "params.hpp"
#include "race_params.hpp"
#include "release_sweep.hpp"
#include "privrace/tasks/regress.hpp"

namespace privrace::experiments {
namespace {


// The config's "task" object, decoded once (params.hpp: TypedTask).
struct RegressOptions {
  double test_fraction = 0.2;
  std::uint64_t split_seed = 1;
  bool center_y = true;
  static const ParamTable<RegressOptions>& table() {
    using K = ParamSpec::Kind;
    using O = RegressOptions;
    static const auto t = ParamTable<O>()
        .add(&O::test_fraction, "test_fraction", K::PositiveNumber, 0.2, "share of the rows held out as the test set")
        .add(&O::split_seed, "split_seed", K::NonNegativeInt, 1, "seed of the train/test split")
        .add(&O::center_y, "center_y", K::Bool, true, "subtract the training mean of y before dividing by max |y|");
    return t;
  }
};

class RegressionTask final : public TypedTask<RegressOptions> {
 public:
  std::string name() const override { return "regression"; }
  std::vector<std::string> metrics() const override { return {"mse"}; }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const RegressOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<RegressContext>();
    ctx->config = &cfg;
    const json& entry = env.datasets->entry(cfg.dataset);
    Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
    prep = Preprocessing::from_json(cfg.preprocessing, prep);
    ctx->data = load_dataset(*env.datasets, cfg.dataset, prep, env.search);
    const auto& data = ctx->data;
    if (data.y.size() != static_cast<std::size_t>(data.x.rows()))
      throw ConfigError(cfg.file + ": $.dataset.name: data set '" + cfg.dataset + "' has no target");
    const std::size_t n = static_cast<std::size_t>(data.x.rows());
    const double tf = o.test_fraction;
    if (!(tf < 1)) throw ConfigError(cfg.file + ": $.task.test_fraction: expected a number in (0, 1)");
    const Split split = seeded_split(n, static_cast<std::size_t>(std::llround(tf * static_cast<double>(n))),
                                     o.split_seed);
    auto take = [&](const std::vector<std::size_t>& idx, DoubleMatrix& x, Eigen::VectorXd& y) {
      x.resize(static_cast<Eigen::Index>(idx.size()), data.x.cols());
      y.resize(static_cast<Eigen::Index>(idx.size()));
      for (std::size_t i = 0; i < idx.size(); ++i) {
        x.row(static_cast<Eigen::Index>(i)) = data.x.row(static_cast<Eigen::Index>(idx[i])).cast<double>();
        y(static_cast<Eigen::Index>(i)) = data.y[idx[i]];
      }
    };
    take(split.kept, ctx->train_x, ctx->train_y);
    take(split.held_out, ctx->test_x, ctx->test_y);

    // Wang's preprocessing, fitted on the training rows.
    const Eigen::RowVectorXd mean = ctx->train_x.colwise().mean();
    Eigen::RowVectorXd sd = ((ctx->train_x.rowwise() - mean).array().square().colwise().sum() /
                             std::max<double>(1, static_cast<double>(ctx->train_x.rows() - 1))).sqrt();
    int constant = 0;
    for (Eigen::Index j = 0; j < sd.size(); ++j)
      if (!(sd(j) > 1e-12)) sd(j) = std::numeric_limits<double>::infinity(), ++constant;  // constant column -> 0
    auto standardise = [&](DoubleMatrix& x) {
      x = ((x.rowwise() - mean).array().rowwise() / sd.array()).matrix();
      for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const double nrm = x.row(i).norm();
        if (nrm > 0) x.row(i) /= nrm;
      }
    };
    standardise(ctx->train_x);
    standardise(ctx->test_x);
    const double y_shift = o.center_y ? ctx->train_y.mean() : 0.0;
    ctx->train_y.array() -= y_shift;
    ctx->test_y.array() -= y_shift;
    const double y_scale = std::max(ctx->train_y.cwiseAbs().maxCoeff(), 1e-300);
    ctx->train_y /= y_scale;
    ctx->test_y /= y_scale;
    ctx->data_summary = {{"name", cfg.dataset},
                         {"stand_in", data.stand_in},
                         {"rows", data.x.rows()},
                         {"dim", data.x.cols()},
                         {"train_rows", ctx->train_x.rows()},
                         {"test_rows", ctx->test_x.rows()},
                         {"checksum", data.checksum_status},
                         {"constant_features", constant},
                         {"preprocessing", "Wang 2018: standardised features (training mean/sd), rows scaled to unit norm, "
                                           "y centred (training mean) and divided by the training max |y|; not private"},
                         {"y_shift", y_shift},
                         {"y_scale", y_scale},
                         {"test_var_y", (ctx->test_y.array() - ctx->test_y.mean()).square().mean()}};
    if (data.stand_in) ctx->data_summary["stand_in_reason"] = data.stand_in_reason;
    note_substitute(ctx->data_summary, data);  // real data of another version than the paper's
    return ctx;
  }
};

double test_mse(const RegressContext& ctx, const Eigen::VectorXd& theta) {
  return mean_squared_error(predict_linear(ctx.test_x, theta), ctx.test_y);
}

// RACE surrogate-loss regression (tasks/regress.hpp). The exact sketch depends only on
// (R, p, W, pair_mode, seed): built once per group; each epsilon privatizes a copy and
// minimises its sketched loss.
struct RaceRegressionParams {
  std::size_t rows = 0, power = 0, width = 0;
  PairMode pair_mode = PairMode::Query;
  std::string optimizer;
  int max_evaluations = 0;
  double initial_step = 0, target_scale = 0;
  RaceNoise noise;
  std::string check() const { return noise.check(); }
  static const ParamTable<RaceRegressionParams>& table() {
    using K = ParamSpec::Kind;
    using P = RaceRegressionParams;
    static const auto t =
        ParamTable<P>()
            .add(&P::rows, "rows", K::PositiveInt, 1000, "sketch rows R")
            .add(&P::power, "power", K::PositiveInt, 4, "SRP bits p (W = 2^p)")
            .add(&P::width, "width", K::PositiveInt, 16, "sketch columns W")
            .add(&P::pair_mode, "pair_mode", {{"query", PairMode::Query}, {"insert", PairMode::Insert}}, "query",
                 "insert z and -z (sensitivity 2R) or read q and -q (sensitivity R)")
            .add(&P::optimizer, "optimizer", K::String, "sbplx", "NLopt derivative-free algorithm",
                 {"sbplx", "neldermead", "cobyla", "bobyqa"})
            .add(&P::max_evaluations, "max_evaluations", K::PositiveInt, 3000, "loss evaluations per fit")
            .add(&P::initial_step, "initial_step", K::PositiveNumber, 0.25, "optimiser's initial step")
            .add(&P::target_scale, "target_scale", K::PositiveNumber, 1.0,
                 "sketch z = [x, 1, c y] and divide the fitted model by c (1 = the paper)")
            .add(&P::noise, RaceNoise::table());
    return t;
  }
};

class RaceRegressionMethod final : public TypedMethod<RegressContext, RaceRegressionParams> {
 public:
  std::string name() const override { return "race_regression"; }
  std::string task() const override { return "regression"; }
  void run(const RegressContext& ctx, const RaceRegressionParams& p, const CellGroup& group, const Emit& emit) const override {
    SurrogateSpec spec;
    spec.rows = p.rows;
    spec.power = p.power;
    spec.width = p.width;
    spec.pair_mode = p.pair_mode;
    spec.seed = group_hash_seed(group);
    spec.threads = ctx.threads;
    const auto t0 = std::chrono::steady_clock::now();
    // The surrogate is ~ sum_i <z_i, q>^2 / (|z_i|^2 |q|^2) near its minimum, and |q|^2 =
    // 1 + |theta|^2 + b^2 pulls the minimiser towards total least squares when the coefficients
    // are large; a public factor c < 1 on y shrinks them (theta' = c theta) at the price of a
    // flatter loss (differences scale with c^2). c = 1 is the paper's construction.
    const double c = p.target_scale;
    const DenseMatrix z = surrogate_inputs(ctx.train_x, c * ctx.train_y);
    const ExactSketch exact = build_surrogate_exact(z, spec);
    const double sketch_seconds = seconds_since(t0);
    SurrogateFitOptions fo;
    fo.algorithm = p.optimizer;
    fo.max_evaluations = p.max_evaluations;
    fo.initial_step = p.initial_step;
    const auto spec_of = [&](double epsilon) { return p.noise.privacy(epsilon); };
    sweep_epsilons(exact, group, emit, spec_of, [&](const CellRelease<Release>& cell) {
      const RaceSketch& sketch = cell.release.sketch();
      const auto t2 = std::chrono::steady_clock::now();
      const SurrogateFit fit = fit_surrogate(sketch, fo);
      const double fit_seconds = seconds_since(t2);
      const NeighborRelation neighbors = p.noise.neighbors;
      CellResult r;
      r.metrics = {{"mse", test_mse(ctx, fit.theta / c)}};
      r.build_seconds = sketch_seconds + cell.noise_seconds + fit_seconds;
      r.details = {{"pair_mode", to_string(spec.pair_mode)},
                   {"sensitivity_l1", race_sensitivity(spec.rows, sketch.family().cells_per_record(), neighbors).l1},
                   {"noise_scale", sketch.privacy().noise_scale.value_or(0.0)},
                   {"sketch_seconds", sketch_seconds},
                   {"noise_seconds", cell.noise_seconds},
                   {"fit_seconds", fit_seconds},
                   {"evaluations", fit.evaluations},
                   {"sketched_loss", fit.loss},
                   {"nlopt_result", fit.result}};
      return r;
    });
  }
};

using BaselineFn = std::function<LinearModel(const DoubleMatrix&, const Eigen::VectorXd&, double, double, RandomSource&)>;

// Wang 2018's private baselines (baselines/linear_regression.hpp), delta = 1e-6 by default.
struct WangBaselineParams {
  double delta = 0;
  static const ParamTable<WangBaselineParams>& table() {
    static const auto t = ParamTable<WangBaselineParams>().add(&WangBaselineParams::delta, "delta", ParamSpec::Kind::PositiveNumber,
                                                               1e-6, "delta of (eps, delta)-DP");
    return t;
  }
};

class WangBaselineMethod final : public TypedMethod<RegressContext, WangBaselineParams> {
 public:
  WangBaselineMethod(std::string name, BaselineFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  std::string task() const override { return "regression"; }
  void run(const RegressContext& ctx, const WangBaselineParams& p, const CellGroup& group, const Emit& emit) const override {
    const double delta = p.delta;
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      SeededRandom rng(cell.noise_seed);
      const auto t0 = std::chrono::steady_clock::now();
      const LinearModel m = fn_(ctx.train_x, ctx.train_y, cell.epsilon, delta, rng);
      CellResult r;
      r.build_seconds = seconds_since(t0);
      r.metrics = {{"mse", test_mse(ctx, m.theta)}};
      r.details = m.details;
      emit(i, std::move(r));
    }
  }

 private:
  std::string name_;
  BaselineFn fn_;
};

// Non-private references: least squares and the trivial predictor (0 = the training mean).
class ReferenceMethod final : public TypedMethod<RegressContext, NoParams> {
 public:
  explicit ReferenceMethod(bool trivial) : trivial_(trivial) {}
  std::string name() const override { return trivial_ ? "trivial" : "least_squares"; }
  std::string task() const override { return "regression"; }
  bool uses_epsilon() const override { return false; }
  void run(const RegressContext& ctx, const NoParams&, const CellGroup& group, const Emit& emit) const override {
    const auto t0 = std::chrono::steady_clock::now();
    const LinearModel m = trivial_ ? trivial_predictor(ctx.train_x) : least_squares(ctx.train_x, ctx.train_y);
    const double build = seconds_since(t0);
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      CellResult r;
      r.build_seconds = build;
      r.metrics = {{"mse", test_mse(ctx, m.theta)}};
      r.details = {{"private", false}};
      emit(i, std::move(r));
    }
  }

 private:
  bool trivial_;
};

}  // namespace

void register_regress_task(Registry& registry) {
  registry.add_task(std::make_unique<RegressionTask>());
  registry.add_method(std::make_unique<RaceRegressionMethod>());
  registry.add_method(std::make_unique<WangBaselineMethod>("ssp", [](auto& x, auto& y, double e, double d, RandomSource& r) { return ssp(x, y, e, d, r); }));
  registry.add_method(std::make_unique<WangBaselineMethod>("adassp", [](auto& x, auto& y, double e, double d, RandomSource& r) { return adassp(x, y, e, d, r); }));
  registry.add_method(std::make_unique<WangBaselineMethod>("objpert_linear", [](auto& x, auto& y, double e, double d, RandomSource& r) { return objpert_linear(x, y, e, d, r); }));
  registry.add_method(std::make_unique<WangBaselineMethod>("ops", [](auto& x, auto& y, double e, double d, RandomSource& r) { return ops(x, y, e, d, r); }));
  registry.add_method(std::make_unique<WangBaselineMethod>("adaops", [](auto& x, auto& y, double e, double d, RandomSource& r) { return adaops(x, y, e, d, r); }));
  registry.add_method(std::make_unique<ReferenceMethod>(false));
  registry.add_method(std::make_unique<ReferenceMethod>(true));
}

}  // namespace privrace::experiments
