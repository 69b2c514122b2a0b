#include "ldp_task.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>

#include "privrace/ldp/erm.hpp"

namespace privrace::experiments {

namespace {

using namespace privrace::ldp;

// One simulated population: n players of dimension p from one source, their non-private optimum.
struct Instance {
  ErmProblem problem;
  Players players;
  ErmResult optimum;
  double optimum_seconds = 0;
};

struct LdpErmContext : TaskContext {
  ErmProblem base;           // loss and box; p set per instance
  double theta_scale = 1.0;  // generated data: the model's parameter scale
  std::uint64_t data_seed = 1;
  bool clip = true;
  // The real table after our preprocessing (row-major, rows x real_cols), y in [-1, 1].
  std::vector<double> real_x, real_y;
  std::size_t real_cols = 0;
  std::string dataset;

  // Instances are rebuilt on demand (10^7 players x p = 3 is 320 MB); the last few are kept.
  mutable std::mutex mutex;
  mutable std::map<std::tuple<std::string, std::size_t, int>, std::shared_ptr<const Instance>> cache;
  mutable std::vector<std::tuple<std::string, std::size_t, int>> order;

  std::shared_ptr<const Instance> instance(const std::string& source, std::size_t n, int p, int threads) const {
    std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_tuple(source, n, p);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    auto inst = std::make_shared<Instance>();
    inst->problem = base;
    inst->problem.p = p;
    inst->problem.validate();
    if (source == "generated") {
      inst->players = generate_players(base.kind, n, static_cast<std::size_t>(p), data_seed, theta_scale);
    } else {
      if (static_cast<std::size_t>(p) > real_cols)
        throw ConfigError(config->file + ": $.methods: p = " + std::to_string(p) + " but the data set '" + dataset +
                          "' has only " + std::to_string(real_cols) + " features after preprocessing");
      std::vector<double> x(real_y.size() * static_cast<std::size_t>(p));
      for (std::size_t i = 0; i < real_y.size(); ++i)
        for (int j = 0; j < p; ++j) x[i * static_cast<std::size_t>(p) + static_cast<std::size_t>(j)] = real_x[i * real_cols + static_cast<std::size_t>(j)];
      inst->players = resample_players(x, real_y, static_cast<std::size_t>(p), n, derive_seed(data_seed, 0x7ea1ULL));
    }
    clip_to_unit_ball(inst->players, clip, source == "generated" ? "generated players" : dataset);
    const auto t0 = std::chrono::steady_clock::now();
    inst->optimum = nonprivate_erm(inst->problem, inst->players, threads);
    inst->optimum_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cache[key] = inst;
    order.push_back(key);
    if (order.size() > 2) {
      cache.erase(order.front());
      order.erase(order.begin());
    }
    return inst;
  }
};

class LdpErmTask final : public Task {
 public:
  std::string name() const override { return "ldp_erm"; }
  std::vector<ParamSpec> options() const override {
    using K = ParamSpec::Kind;
    return {
        {"loss", K::String, "logistic", {"logistic", "squared"}, "the ERM loss"},
        {"lo", K::Number, -3.0, {}, "the constraint box [lo, hi]^p"},
        {"hi", K::Number, 3.0, {}, "the constraint box [lo, hi]^p"},
        {"theta_scale", K::PositiveNumber, 1.5, {}, "generated data: scale of the model parameter"},
        {"data_seed", K::NonNegativeInt, 1, {}, "seed of the generated players and of the resampling of real rows"},
        {"clip", K::Bool, true, {}, "clip records outside the unit ball (counted in the records) instead of refusing"},
    };
  }
  std::vector<std::string> metrics() const override {
    return {"excess_risk", "risk", "optimum_risk", "theta_distance", "k", "h", "grid_points", "player_seconds",
            "server_seconds", "clipped_rows"};
  }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const RunEnvironment& env) const override {
    auto ctx = std::make_unique<LdpErmContext>();
    ctx->config = &cfg;
    ctx->threads = env.threads;
    const json& o = cfg.task_options;
    ctx->base.kind = parse_loss(o.at("loss").get<std::string>());
    ctx->base.lo = o.at("lo").get<double>();
    ctx->base.hi = o.at("hi").get<double>();
    if (!(ctx->base.lo <= ctx->base.hi))
      throw ConfigError(cfg.file + ": $.task.lo: the constraint set [lo, hi]^p is empty (lo = " +
                        std::to_string(ctx->base.lo) + " > hi = " + std::to_string(ctx->base.hi) + ")");
    ctx->theta_scale = o.at("theta_scale").get<double>();
    ctx->data_seed = o.at("data_seed").get<std::uint64_t>();
    ctx->clip = o.at("clip").get<bool>();
    ctx->dataset = cfg.dataset;
    const json& entry = env.datasets->entry(cfg.dataset);
    Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
    prep = Preprocessing::from_json(cfg.preprocessing, prep);
    ctx->data = load_dataset(*env.datasets, cfg.dataset, prep, env.search);
    const auto& data = ctx->data;
    const std::size_t rows = static_cast<std::size_t>(data.x.rows()), cols = static_cast<std::size_t>(data.x.cols());
    if (data.y.size() != rows) throw ConfigError(cfg.file + ": $.dataset.name: data set '" + cfg.dataset + "' has no label");
    // Preprocessing (public, not private, as in the paper's setting of a known domain):
    // features standardised, then every row divided by the largest row norm, so the table lies
    // in the unit ball with nothing clipped; logistic: labels {0,1} -> {-1,+1}; squared: y
    // centred and divided by max |y|.
    Eigen::MatrixXd x = data.x.cast<double>();
    const Eigen::RowVectorXd mean = x.colwise().mean();
    Eigen::RowVectorXd sd = ((x.rowwise() - mean).array().square().colwise().sum() / std::max<double>(1, rows - 1.0)).sqrt();
    for (Eigen::Index j = 0; j < sd.size(); ++j)
      if (!(sd(j) > 1e-12)) sd(j) = 1;
    x = ((x.rowwise() - mean).array().rowwise() / sd.array()).matrix();
    const double max_norm = std::max(x.rowwise().norm().maxCoeff(), 1e-300);
    x /= max_norm;
    ctx->real_cols = cols;
    ctx->real_x.resize(rows * cols);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) ctx->real_x[i * cols + j] = x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
    ctx->real_y.assign(data.y.begin(), data.y.end());
    double y_shift = 0, y_scale = 1;
    if (ctx->base.kind == Loss::Logistic) {
      for (auto& y : ctx->real_y) y = y > 0.5 ? 1.0 : -1.0;
    } else {
      for (double y : ctx->real_y) y_shift += y / static_cast<double>(rows);
      y_scale = 0;
      for (double y : ctx->real_y) y_scale = std::max(y_scale, std::abs(y - y_shift));
      y_scale = std::max(y_scale, 1e-300);
      for (auto& y : ctx->real_y) y = (y - y_shift) / y_scale;
    }
    ctx->data_summary = {{"name", cfg.dataset},
                         {"stand_in", data.stand_in},
                         {"rows", rows},
                         {"dim", cols},
                         {"checksum", data.checksum_status},
                         {"features", data.feature_names},
                         {"preprocessing", "real source: features standardised and rows divided by the largest row norm "
                                           "(unit ball, nothing clipped), first p features used, players drawn with "
                                           "replacement; logistic y in {-1,+1}, squared y centred and / max|y|; "
                                           "generated source: x uniform in the unit ball, y from the model; not private"},
                         {"max_row_norm_before_scaling", max_norm},
                         {"y_shift", y_shift},
                         {"y_scale", y_scale},
                         {"loss", loss_name(ctx->base.kind)},
                         {"box", {ctx->base.lo, ctx->base.hi}}};
    return ctx;
  }
};

std::vector<ParamSpec> population_parameters() {
  using K = ParamSpec::Kind;
  return {
      {"players", K::PositiveInt, nullptr, {}, "n, the number of simulated players"},
      {"p", K::PositiveInt, 1, {}, "dimension of theta (and of x)"},
      {"source", K::String, "generated", {"generated", "real"}, "generated players or rows of the config's data set"},
  };
}

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t j = 0; j < a.size(); ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return std::sqrt(s);
}

CellResult make_result(const Instance& inst, const ErmResult& r, double epsilon) {
  CellResult out;
  out.build_seconds = r.player_seconds + r.server_seconds;
  out.metrics = {{"excess_risk", r.risk - inst.optimum.risk},
                 {"risk", r.risk},
                 {"optimum_risk", inst.optimum.risk},
                 {"theta_distance", distance(r.theta, inst.optimum.theta)},
                 {"k", r.k},
                 {"h", r.h},
                 {"grid_points", static_cast<double>(r.grid_points)},
                 {"player_seconds", r.player_seconds},
                 {"server_seconds", r.server_seconds},
                 {"clipped_rows", static_cast<double>(inst.players.clipped)}};
  out.details = {{"theta", r.theta},
                 {"optimum_theta", inst.optimum.theta},
                 {"optimum_seconds", inst.optimum_seconds},
                 {"loss_bound", inst.problem.loss_bound()},
                 {"private", std::isfinite(epsilon)},
                 {"clipped_rows", inst.players.clipped}};
  if (r.grid_points) {
    out.details["grid_error_bound"] = r.minimum.grid_error_bound;
    out.details["grid_per_axis"] = r.minimum.grid_per_axis;
    out.details["max_grid_noise_simulation_only"] = r.max_grid_noise;
    out.details["budget"] = "each player: eps over her reports (Algorithm 2: eps / (k+1)^p per grid point; Algorithm 3: one bit with eps)";
  }
  return out;
}

class LdpErmMethod final : public Method {
 public:
  enum class Kind { Bernstein, Bernstein1Bit, InputPerturbation, Sgd, NonPrivate };
  explicit LdpErmMethod(Kind kind) : kind_(kind) {}
  std::string name() const override {
    switch (kind_) {
      case Kind::Bernstein: return "ldp_bernstein";
      case Kind::Bernstein1Bit: return "ldp_bernstein_1bit";
      case Kind::InputPerturbation: return "ldp_input_perturbation";
      case Kind::Sgd: return "ldp_sgd";
      default: return "erm_nonprivate";
    }
  }
  std::string task() const override { return "ldp_erm"; }
  bool uses_epsilon() const override { return kind_ != Kind::NonPrivate; }
  std::vector<ParamSpec> parameters() const override {
    auto v = population_parameters();
    if (kind_ == Kind::Bernstein || kind_ == Kind::Bernstein1Bit) {
      using K = ParamSpec::Kind;
      v.push_back({"k", K::NonNegativeInt, 0, {}, "grid degree; 0 = Theorem 3's rule k = floor(k_scale (eps sqrt n)^(1/(h+p)))"});
      v.push_back({"h", K::NonNegativeInt, 0, {}, "Micchelli iterate order; 0 = p (Corollary 1)"});
      v.push_back({"k_scale", K::PositiveNumber, 1.0, {}, "constant of Theorem 3's rule"});
      v.push_back({"max_gib", K::PositiveNumber, 4.0, {}, "refuse grids needing more memory"});
    }
    return v;
  }
  void run_group(const TaskContext& base, const CellGroup& group, const Emit& emit) const override {
    const auto& ctx = dynamic_cast<const LdpErmContext&>(base);
    const json& P = group.params;
    const auto inst = ctx.instance(P.at("source").get<std::string>(), P.at("players").get<std::size_t>(),
                                   P.at("p").get<int>(), ctx.threads);
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      ErmResult r;
      switch (kind_) {
        case Kind::Bernstein:
        case Kind::Bernstein1Bit: {
          BernsteinOptions o;
          o.k = P.at("k").get<int>();
          o.h = P.at("h").get<int>();
          o.k_scale = P.at("k_scale").get<double>();
          o.max_bytes = P.at("max_gib").get<double>() * 1073741824.0;
          r = kind_ == Kind::Bernstein ? ldp_bernstein(inst->problem, inst->players, cell.epsilon, o, cell.noise_seed, ctx.threads)
                                       : ldp_bernstein_1bit(inst->problem, inst->players, cell.epsilon, o, cell.noise_seed, ctx.threads);
          break;
        }
        case Kind::InputPerturbation:
          r = ldp_input_perturbation(inst->problem, inst->players, cell.epsilon, cell.noise_seed, ctx.threads);
          break;
        case Kind::Sgd:
          r = ldp_sgd(inst->problem, inst->players, cell.epsilon, cell.noise_seed);
          break;
        case Kind::NonPrivate:
          r = inst->optimum;
          r.server_seconds = inst->optimum_seconds;
          break;
      }
      emit(i, make_result(*inst, r, cell.epsilon));
    }
  }

 private:
  Kind kind_;
};

}  // namespace

std::unique_ptr<Task> make_ldp_erm_task() { return std::make_unique<LdpErmTask>(); }

std::vector<std::unique_ptr<Method>> make_ldp_erm_methods() {
  std::vector<std::unique_ptr<Method>> v;
  for (auto k : {LdpErmMethod::Kind::Bernstein, LdpErmMethod::Kind::Bernstein1Bit, LdpErmMethod::Kind::InputPerturbation,
                 LdpErmMethod::Kind::Sgd, LdpErmMethod::Kind::NonPrivate})
    v.push_back(std::make_unique<LdpErmMethod>(k));
  return v;
}

}  // namespace privrace::experiments
