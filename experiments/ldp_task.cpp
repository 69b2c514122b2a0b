#include "ldp_task.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "privrace/ldp/erm.hpp"
#include "privrace/ldp/highdim.hpp"
#include "privrace/ldp/marginals.hpp"
#include "privrace/ldp/mean_mechanisms.hpp"
#include "privrace/ldp/protocols.hpp"
#include "params.hpp"
#include "shared_work.hpp"

namespace privrace::experiments {

namespace {

using namespace privrace::ldp;

// One simulated population: n players of dimension p from one source, their non-private optimum.
struct Instance {
  ErmProblem problem;
  Players players;
  ErmResult optimum;
  double optimum_seconds = 0;
  double boundary_distance = 0;  // of theta* to the boundary of the box
  double loss_range = 0;         // max over the box of L - L*
  std::vector<double> feature_scale;  // real source: the divisor of each feature (after standardising)
};

struct LdpErmContext : TaskContext {
  ErmProblem base;           // loss and box; p set per instance
  double theta_scale = 1.0;  // generated data: the model's parameter scale
  std::uint64_t data_seed = 1;
  bool clip = true;
  bool per_feature = true;  // feature_scaling: per_feature | row_norm
  double max_row_norm = 1;  // row_norm: the largest standardised row norm (over all columns)
  // The real table after standardisation (row-major, rows x real_cols), y in [-1, 1].
  std::vector<double> real_x, real_y;
  std::size_t real_cols = 0;
  std::string dataset;

  // Instances are rebuilt on demand (10^7 players x p = 3 is 320 MB); the last few are kept.
  mutable std::mutex mutex;
  mutable RecentObjects<std::tuple<std::string, std::size_t, int>, Instance> cache{2};

  std::shared_ptr<const Instance> instance(const std::string& source, std::size_t n, int p, int threads) const {
    const auto lock = lock_noting_wait(mutex);
    const auto key = std::make_tuple(source, n, p);
    if (auto found = cache.find(key)) return found;
    const SharedWorkTimer made(threads);  // the players, their optimum and loss range: every repetition's
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
      // Scaling (public: a function of the table's public bounds, as the paper's known domain):
      // per_feature divides feature j by sqrt(p) max_i |x_ij|, so every feature spans its share
      // of the unit ball and theta* stays inside the box; row_norm divides every row by the
      // largest row norm over all columns (the earlier choice, which put theta* on the edge).
      inst->feature_scale.assign(static_cast<std::size_t>(p), max_row_norm);
      if (per_feature)
        for (int j = 0; j < p; ++j) {
          double m = 0;
          for (std::size_t i = 0; i < real_y.size(); ++i) m = std::max(m, std::abs(real_x[i * real_cols + static_cast<std::size_t>(j)]));
          inst->feature_scale[static_cast<std::size_t>(j)] = std::max(m, 1e-300) * std::sqrt(static_cast<double>(p));
        }
      std::vector<double> x(real_y.size() * static_cast<std::size_t>(p));
      for (std::size_t i = 0; i < real_y.size(); ++i)
        for (int j = 0; j < p; ++j)
          x[i * static_cast<std::size_t>(p) + static_cast<std::size_t>(j)] =
              real_x[i * real_cols + static_cast<std::size_t>(j)] / inst->feature_scale[static_cast<std::size_t>(j)];
      inst->players = resample_players(x, real_y, static_cast<std::size_t>(p), n, derive_seed(data_seed, 0x7ea1ULL));
    }
    clip_to_unit_ball(inst->players, clip, source == "generated" ? "generated players" : dataset);
    const auto t0 = std::chrono::steady_clock::now();
    inst->optimum = nonprivate_erm(inst->problem, inst->players, threads);
    inst->optimum_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    inst->boundary_distance = boundary_distance(inst->problem, inst->optimum.theta);
    inst->loss_range = loss_range_over_box(inst->problem, inst->players, inst->optimum.risk, threads);
    cache.put(key, inst);
    return inst;
  }
};

enum class FeatureScaling { PerFeature, RowNorm };

// The config's "task" object, decoded once (params.hpp: TypedTask).
struct LdpErmOptions {
  Loss loss = Loss::Logistic;
  double lo = -3.0, hi = 3.0;
  double theta_scale = 1.5;
  std::uint64_t data_seed = 1;
  bool clip = true;
  FeatureScaling feature_scaling = FeatureScaling::PerFeature;
  static const ParamTable<LdpErmOptions>& table() {
    using K = ParamSpec::Kind;
    using O = LdpErmOptions;
    static const auto t = ParamTable<O>()
        .add(&O::loss, "loss", {{"logistic", Loss::Logistic}, {"squared", Loss::Squared}}, "logistic", "the ERM loss")
        .add(&O::lo, "lo", K::Number, -3.0, "the constraint box [lo, hi]^p")
        .add(&O::hi, "hi", K::Number, 3.0, "the constraint box [lo, hi]^p")
        .add(&O::theta_scale, "theta_scale", K::PositiveNumber, 1.5, "generated data: scale of the model parameter")
        .add(&O::data_seed, "data_seed", K::NonNegativeInt, 1, "seed of the generated players and of the resampling of real rows")
        .add(&O::clip, "clip", K::Bool, true, "clip records outside the unit ball (counted in the records) instead of refusing")
        .add(&O::feature_scaling, "feature_scaling",
             {{"per_feature", FeatureScaling::PerFeature}, {"row_norm", FeatureScaling::RowNorm}}, "per_feature",
             "real source: divide feature j by sqrt(p) max|x_j| (per_feature) or every row by the largest row norm (row_norm)");
    return t;
  }
};

class LdpErmTask final : public TypedTask<LdpErmOptions> {
 public:
  std::string name() const override { return "ldp_erm"; }
  std::vector<std::string> metrics() const override {
    return {"excess_risk", "risk", "optimum_risk", "theta_distance", "k", "h", "grid_points", "player_seconds",
            "server_seconds", "clipped_rows", "loss_range", "relative_excess", "optimum_boundary_distance",
            "grid_noise_sd", "noise_dominated", "exact_hit"};
  }

  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const LdpErmOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<LdpErmContext>();
    ctx->config = &cfg;
    ctx->threads = env.threads;
    ctx->base.kind = o.loss;
    ctx->base.lo = o.lo;
    ctx->base.hi = o.hi;
    if (!(ctx->base.lo <= ctx->base.hi))
      throw ConfigError(cfg.file + ": $.task.lo: the constraint set [lo, hi]^p is empty (lo = " +
                        std::to_string(ctx->base.lo) + " > hi = " + std::to_string(ctx->base.hi) + ")");
    ctx->theta_scale = o.theta_scale;
    ctx->data_seed = o.data_seed;
    ctx->clip = o.clip;
    ctx->per_feature = o.feature_scaling == FeatureScaling::PerFeature;
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
    ctx->max_row_norm = max_norm;  // the scaling into the unit ball is applied per instance (p)
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
                         {"preprocessing", std::string("real source: features standardised, first p features used, ") +
                                           (ctx->per_feature ? "feature j divided by sqrt(p) max|x_j| (per-feature scaling; unit ball, nothing clipped)"
                                                             : "rows divided by the largest row norm over all features (unit ball, nothing clipped)") +
                                           ", players drawn with replacement; logistic y in {-1,+1}, squared y centred and / max|y|; "
                                           "generated source: x uniform in the unit ball, y from the model; not private"},
                         {"feature_scaling", ctx->per_feature ? "per_feature" : "row_norm"},
                         {"max_row_norm_before_scaling", max_norm},
                         {"y_shift", y_shift},
                         {"y_scale", y_scale},
                         {"loss", loss_name(ctx->base.kind)},
                         {"box", {ctx->base.lo, ctx->base.hi}}};
    note_substitute(ctx->data_summary, data);  // real data of another version than the paper's
    return ctx;
  }
};

// The LDP ERM methods' parameters: the population (every method), the grid (Bernstein ones).
struct LdpErmParams {
  std::size_t players = 0;
  int p = 0;
  std::string source;
  bool exact_grid_error = false;
  int k = 0, h = 0;
  double k_scale = 0, max_gib = 0;
  static ParamTable<LdpErmParams> table(bool bernstein) {
    using K = ParamSpec::Kind;
    using P = LdpErmParams;
    ParamTable<P> t;
    t.add(&P::players, "players", K::PositiveInt, nullptr, "n, the number of simulated players")
        .add(&P::p, "p", K::PositiveInt, 1, "dimension of theta (and of x)")
        .add(&P::source, "source", K::String, "generated", "generated players or rows of the config's data set",
             {"generated", "real"});
    if (bernstein)
      t.add(&P::exact_grid_error, "exact_grid_error", K::Bool, false,
            "also compute the exact grid values to record max |noisy - exact| (a diagnostic; about 40% of a repetition)")
          .add(&P::k, "k", K::NonNegativeInt, 0, "grid degree; 0 = Theorem 3's rule k = floor(k_scale (eps sqrt n)^(1/(h+p)))")
          .add(&P::h, "h", K::NonNegativeInt, 0, "Micchelli iterate order; 0 = p (Corollary 1)")
          .add(&P::k_scale, "k_scale", K::PositiveNumber, 1.0, "constant of Theorem 3's rule")
          .add(&P::max_gib, "max_gib", K::PositiveNumber, 4.0, "refuse grids needing more memory");
    return t;
  }
};

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t j = 0; j < a.size(); ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return std::sqrt(s);
}

CellResult make_result(const Instance& inst, const ErmResult& r, double epsilon, bool one_bit) {
  CellResult out;
  out.build_seconds = r.player_seconds + r.server_seconds;
  // The excess is clamped at 0: tiny negatives (-1e-16) come from the two risks being summed in
  // different orders (the raw difference is kept in the details).
  const double raw_excess = r.risk - inst.optimum.risk, excess = std::max(0.0, raw_excess);
  const double noise_sd = r.grid_points ? grid_value_noise_sd(inst.problem, inst.players.size(), epsilon, r.grid_points, one_bit) : 0.0;
  const double theta_gap = distance(r.theta, inst.optimum.theta);
  out.metrics = {{"excess_risk", excess},
                 {"risk", r.risk},
                 {"optimum_risk", inst.optimum.risk},
                 {"theta_distance", distance(r.theta, inst.optimum.theta)},
                 {"k", r.k},
                 {"h", r.h},
                 {"grid_points", static_cast<double>(r.grid_points)},
                 {"player_seconds", r.player_seconds},
                 {"server_seconds", r.server_seconds},
                 {"clipped_rows", static_cast<double>(inst.players.clipped)},
                 {"loss_range", inst.loss_range},
                 {"relative_excess", inst.loss_range > 0 ? excess / inst.loss_range : 0.0},
                 {"optimum_boundary_distance", inst.boundary_distance},
                 {"grid_noise_sd", noise_sd},
                 // Bernstein methods: the noise SD of one grid value exceeds the loss's whole range over the box
                 {"noise_dominated", r.grid_points && noise_sd > inst.loss_range ? 1.0 : 0.0},
                 {"exact_hit", theta_gap <= 1e-12 ? 1.0 : 0.0}};
  out.details = {{"theta", r.theta},
                 {"excess_risk_raw", raw_excess},
                 {"feature_scale", inst.feature_scale},
                 {"optimum_theta", inst.optimum.theta},
                 {"optimum_seconds", inst.optimum_seconds},
                 {"loss_bound", inst.problem.loss_bound()},
                 {"private", std::isfinite(epsilon)},
                 {"clipped_rows", inst.players.clipped}};
  if (r.grid_points) {
    out.details["grid_error_bound"] = r.minimum.grid_error_bound;
    out.details["grid_per_axis"] = r.minimum.grid_per_axis;
    if (r.max_grid_noise > 0) out.details["max_grid_noise_simulation_only"] = r.max_grid_noise;
    out.details["budget"] = "each player: eps over her reports (Algorithm 2: eps / (k+1)^p per grid point; Algorithm 3: one bit with eps)";
  }
  return out;
}

class LdpErmMethod final : public TypedMethod<LdpErmContext, LdpErmParams> {
 public:
  enum class Kind { Bernstein, Bernstein1Bit, InputPerturbation, Sgd, NonPrivate, SgdPiecewise, SgdHybrid, SgdPrivUnit };
  explicit LdpErmMethod(Kind kind)
      : kind_(kind), table_(LdpErmParams::table(kind == Kind::Bernstein || kind == Kind::Bernstein1Bit)) {}
  std::string name() const override {
    switch (kind_) {
      case Kind::Bernstein: return "ldp_bernstein";
      case Kind::Bernstein1Bit: return "ldp_bernstein_1bit";
      case Kind::InputPerturbation: return "ldp_input_perturbation";
      case Kind::Sgd: return "ldp_sgd";
      case Kind::SgdPiecewise: return "ldp_sgd_pm";
      case Kind::SgdHybrid: return "ldp_sgd_hm";
      case Kind::SgdPrivUnit: return "ldp_sgd_privunit";
      default: return "erm_nonprivate";
    }
  }
  std::string task() const override { return "ldp_erm"; }
  bool uses_epsilon() const override { return kind_ != Kind::NonPrivate; }
  void run(const LdpErmContext& ctx, const LdpErmParams& P, const CellGroup& group, const Emit& emit) const override {
    const auto inst = ctx.instance(P.source, P.players, P.p, ctx.run_threads);
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      ErmResult r;
      switch (kind_) {
        case Kind::Bernstein:
        case Kind::Bernstein1Bit: {
          BernsteinOptions o;
          o.k = P.k;
          o.h = P.h;
          o.k_scale = P.k_scale;
          o.max_bytes = P.max_gib * 1073741824.0;
          o.exact_grid_error = P.exact_grid_error;
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
        case Kind::SgdPiecewise:
        case Kind::SgdHybrid:
        case Kind::SgdPrivUnit:
          r = ldp_sgd_mean_mechanism(inst->problem, inst->players, cell.epsilon,
                                     kind_ == Kind::SgdPiecewise ? GradientMechanism::Piecewise
                                     : kind_ == Kind::SgdHybrid  ? GradientMechanism::Hybrid
                                                                 : GradientMechanism::PrivUnit,
                                     cell.noise_seed);
          break;
        case Kind::NonPrivate:
          r = inst->optimum;
          r.server_seconds = inst->optimum_seconds;
          break;
      }
      CellResult res = make_result(*inst, r, cell.epsilon, kind_ == Kind::Bernstein1Bit);
      if (kind_ == Kind::SgdPiecewise || kind_ == Kind::SgdHybrid)
        res.details["budget"] = "interactive: each player answers once, eps on her gradient / L in [-1, 1]^p (Wang et al. "
                                "Algorithm 4: k = max(1, min(p, floor(eps / 2.5))) coordinates, eps / k each)";
      else if (kind_ == Kind::SgdPrivUnit)
        res.details["budget"] = "interactive: each player answers once, eps on her gradient / L (unit ball, rounded to "
                                "the sphere) through PrivUnit with the Asi-Feldman-Talwar split";
      emit(i, std::move(res));
    }
  }

 private:
  const ParamTable<LdpErmParams>& param_table() const override { return table_; }
  Kind kind_;
  ParamTable<LdpErmParams> table_;
};

// ------------------------------------------------------------------------------------------
// k-way marginals (Section 6, Algorithm 4): max |error| over all C(d, k) conjunctions.

struct LdpMarginalsContext : TaskContext {
  std::size_t generated_players = 100000;
  std::uint64_t data_seed = 1;
  BinaryData real;  // the data set's 0/1 columns (one-hot coded)
  mutable std::mutex mutex;
  mutable std::map<std::pair<std::string, int>, std::shared_ptr<const BinaryData>> cache;

  std::shared_ptr<const BinaryData> data_for(const std::string& source, int d) const {
    std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_pair(source, d);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    auto b = std::make_shared<BinaryData>();
    b->d = static_cast<std::size_t>(d);
    if (source == "generated") {
      // Three latent classes, attribute probabilities drawn once from the seed: correlated
      // attributes, so the marginals are far from products of 1-way margins.
      b->n = generated_players;
      b->x.resize(b->n * b->d);
      SeededRandom model(derive_seed(data_seed, 0x6d6fULL));
      std::vector<double> prob(3 * b->d);
      for (auto& v : prob) v = 0.1 + 0.8 * model.unit();
      for (std::size_t i = 0; i < b->n; ++i) {
        PlayerWords w(data_seed, i);
        const std::size_t cls = public_coordinate(w.next(), 0, 3);
        for (std::size_t a = 0; a < b->d; ++a)
          b->x[i * b->d + a] = static_cast<double>(w.next() >> 11) * 0x1.0p-53 < prob[cls * b->d + a];
      }
    } else {
      if (b->d > real.d)
        throw ConfigError(config->file + ": $.methods: d = " + std::to_string(d) + " but the data set has only " +
                          std::to_string(real.d) + " binary columns");
      b->n = real.n;
      b->x.resize(b->n * b->d);
      for (std::size_t i = 0; i < b->n; ++i)
        for (std::size_t a = 0; a < b->d; ++a) b->x[i * b->d + a] = real.x[i * real.d + a];
    }
    cache[key] = b;
    return b;
  }
};

// The config's "task" object, decoded once (params.hpp: TypedTask).
struct LdpMarginalsOptions {
  std::size_t generated_players = 100000;
  std::uint64_t data_seed = 1;
  static const ParamTable<LdpMarginalsOptions>& table() {
    using K = ParamSpec::Kind;
    using O = LdpMarginalsOptions;
    static const auto t = ParamTable<O>()
        .add(&O::generated_players, "generated_players", K::PositiveInt, 100000, "players of the generated source")
        .add(&O::data_seed, "data_seed", K::NonNegativeInt, 1, "seed of the generated players");
    return t;
  }
};

class LdpMarginalsTask final : public TypedTask<LdpMarginalsOptions> {
 public:
  std::string name() const override { return "ldp_marginals"; }
  std::vector<std::string> metrics() const override { return {"max_abs_error", "mean_abs_error", "queries", "players"}; }
  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const LdpMarginalsOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<LdpMarginalsContext>();
    ctx->config = &cfg;
    ctx->threads = env.threads;
    ctx->generated_players = o.generated_players;
    ctx->data_seed = o.data_seed;
    const json& entry = env.datasets->entry(cfg.dataset);
    Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
    prep = Preprocessing::from_json(cfg.preprocessing, prep);
    ctx->data = load_dataset(*env.datasets, cfg.dataset, prep, env.search);
    const auto& x = ctx->data.x;
    ctx->real.n = static_cast<std::size_t>(x.rows());
    ctx->real.d = static_cast<std::size_t>(x.cols());
    ctx->real.x.resize(ctx->real.n * ctx->real.d);
    for (std::size_t i = 0; i < ctx->real.n; ++i)
      for (std::size_t a = 0; a < ctx->real.d; ++a) {
        const float v = x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(a));
        if (v != 0.0f && v != 1.0f)
          throw InputError(cfg.dataset + ": row " + std::to_string(i) + ", column " + std::to_string(a) + ": value " +
                           std::to_string(v) + ", expected 0 or 1 (use \"categorical\": \"binary\" and \"scale\": \"none\")");
        ctx->real.x[i * ctx->real.d + a] = v != 0.0f;
      }
    ctx->data_summary = {{"name", cfg.dataset}, {"stand_in", ctx->data.stand_in}, {"rows", ctx->real.n},
                         {"binary_columns", ctx->real.d}, {"features", ctx->data.feature_names},
                         {"marginal", "monotone conjunction prod_{i in S} x_i over the first d binary columns, all |S| = k"}};
    note_substitute(ctx->data_summary, ctx->data);  // real data of another version than the paper's
    return ctx;
  }
};

struct LdpMarginalsParams {
  int d = 0, k = 0;
  std::string source;
  int t = 0;  // Chebyshev only (0 for the others: the check passes)
  std::string check() const {
    if (k > d) return "k must not exceed d";
    if (t > k) return "t must not exceed k";
    return {};
  }
  static ParamTable<LdpMarginalsParams> table(bool chebyshev) {
    using K = ParamSpec::Kind;
    using P = LdpMarginalsParams;
    ParamTable<P> table;
    table.add(&P::d, "d", K::PositiveInt, nullptr, "number of binary attributes")
        .add(&P::k, "k", K::PositiveInt, nullptr, "marginal order")
        .add(&P::source, "source", K::String, "generated", "generated or the data set", {"generated", "real"});
    if (chebyshev) table.add(&P::t, "t", K::NonNegativeInt, 0, "polynomial degree; 0 = k (exact)");
    return table;
  }
};

class LdpMarginalsMethod final : public TypedMethod<LdpMarginalsContext, LdpMarginalsParams> {
 public:
  enum class Kind { Chebyshev, RandomizedResponse, CentralHistogram };
  explicit LdpMarginalsMethod(Kind kind) : kind_(kind), table_(LdpMarginalsParams::table(kind == Kind::Chebyshev)) {}
  std::string name() const override {
    return kind_ == Kind::Chebyshev ? "ldp_chebyshev_marginals"
                                    : kind_ == Kind::RandomizedResponse ? "ldp_rr_marginals" : "central_histogram_marginals";
  }
  std::string task() const override { return "ldp_marginals"; }
  void run(const LdpMarginalsContext& ctx, const LdpMarginalsParams& P, const CellGroup& group, const Emit& emit) const override {
    const int d = P.d, k = P.k;
    const auto data = ctx.data_for(P.source, d);
    const auto queries = subsets_of_size(d, k);
    const auto exact = exact_conjunctions(*data, queries);
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<double> est;
      json details = json::object();
      if (kind_ == Kind::Chebyshev) {
        const ChebyshevMarginals cm(d, k, P.t);
        details = {{"monomials", cm.monomials()}, {"degree", cm.degree()}, {"approximation_error", cm.approximation_error()}};
        est = ldp_chebyshev_marginals(*data, queries, k, P.t, cell.epsilon, cell.noise_seed, ctx.threads);
      } else if (kind_ == Kind::RandomizedResponse) {
        est = ldp_rr_marginals(*data, queries, cell.epsilon, cell.noise_seed, ctx.threads);
      } else {
        est = central_histogram_marginals(*data, queries, cell.epsilon, cell.noise_seed);
        details = {{"model", "central DP (trusted curator), not local"}};
      }
      double mx = 0, mean = 0;
      for (std::size_t q = 0; q < queries.size(); ++q) {
        const double e = std::abs(est[q] - exact[q]);
        mx = std::max(mx, e);
        mean += e / static_cast<double>(queries.size());
      }
      CellResult r;
      r.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      r.metrics = {{"max_abs_error", mx}, {"mean_abs_error", mean}, {"queries", static_cast<double>(queries.size())},
                   {"players", static_cast<double>(data->n)}};
      r.details = details;
      emit(i, std::move(r));
    }
  }

 private:
  const ParamTable<LdpMarginalsParams>& param_table() const override { return table_; }
  Kind kind_;
  ParamTable<LdpMarginalsParams> table_;
};

// ------------------------------------------------------------------------------------------
// High dimension (Section 7): sparse linear regression, d = 1000, compressed to m <= 200.
//
// Data with a real signal in the paper's setting (||x||_2 <= 1, |y| <= 1, w* in C):
// every record has `nonzeros` entries +-1/sqrt(nonzeros) (on the unit sphere); each entry
// lands with probability popular_mass on a block of `popular` coordinates that holds the
// support of w*, otherwise uniformly on all d. w* has `sparsity` entries of size 1/sparsity on
// that block (signed for the L1 ball, non-negative for the simplex; ||w*||_1 = 1), and
// y = <w*, x> + N(0, 0.1^2) clipped. Isotropic records in d = 1000 would make
// E <w*, x>^2 = ||w*||^2 / d so small that predicting 0 beats every private method; here the
// predictor 0 has excess risk of about 0.01 (recorded as zero_excess_risk).

struct LdpHighDimContext : TaskContext {
  int d = 1000, sparsity = 5, nonzeros = 2, popular = 10;
  double popular_mass = 0.5, noise_sd = 0.1;
  std::uint64_t data_seed = 1;
  mutable std::mutex mutex;
  struct Population {
    SparseRows X;
    Eigen::VectorXd y, w_star;
  };
  struct Optimum {
    Eigen::VectorXd w;
    double risk = 0, zero_risk = 0;
  };
  mutable RecentObjects<std::tuple<std::string, std::size_t>, Population> cache{4};
  mutable std::map<std::tuple<std::string, std::size_t, double>, std::shared_ptr<const Optimum>> optima;
  mutable std::map<std::string, double> widths;
  // Algorithm 7's collections, one per (set, players, m, repetition, epsilon): the server fits
  // every radius from the same reports (post-processing), so the radii share them. A scope is
  // (players, m): the runner walks the grid in the order m, players, radius, set, so a scope
  // holds 2 sets x repetitions x epsilons of m x m moments; the two latest scopes are kept.
  // Each collection is a cell's own work, made by the first cell that asks for it while other
  // workers make theirs (MadeOnce).
  MadeOnce<CompressedCollection> collections{2};

  std::shared_ptr<const Population> population(const std::string& set_name, std::size_t n) const {
    const auto lock = lock_noting_wait(mutex);
    const auto key = std::make_tuple(set_name, n);
    if (auto found = cache.find(key)) return found;
    const SharedWorkTimer made(run_threads);
    const SparseSet set = parse_sparse_set(set_name);
    auto pop = std::make_shared<Population>();
    // The model (public to the experiment, not to the players): the popular block and w*.
    SeededRandom model(derive_seed(data_seed, 0x4d0dULL));
    std::vector<int> block;
    while (static_cast<int>(block.size()) < popular) {
      const int j = static_cast<int>(model.below(static_cast<std::uint64_t>(d)));
      if (std::find(block.begin(), block.end(), j) == block.end()) block.push_back(j);
    }
    pop->w_star = Eigen::VectorXd::Zero(d);
    for (int j = 0; j < sparsity; ++j)
      pop->w_star(block[static_cast<std::size_t>(j)]) = (set == SparseSet::L1Ball && j % 2 ? -1.0 : 1.0) / sparsity;
    std::vector<Eigen::Triplet<double>> entries;
    entries.reserve(n * static_cast<std::size_t>(nonzeros));
    pop->y.resize(static_cast<Eigen::Index>(n));
    const double value = 1.0 / std::sqrt(static_cast<double>(nonzeros));
    std::vector<int> cols;
    for (std::size_t i = 0; i < n; ++i) {
      SeededRandom rng(derive_seed(derive_seed(data_seed, 0x4d0eULL), i));  // nested in n
      cols.clear();
      while (static_cast<int>(cols.size()) < nonzeros) {
        const int j = rng.unit() < popular_mass ? block[rng.below(static_cast<std::uint64_t>(popular))]
                                                : static_cast<int>(rng.below(static_cast<std::uint64_t>(d)));
        if (std::find(cols.begin(), cols.end(), j) == cols.end()) cols.push_back(j);
      }
      double dot = 0;
      for (int j : cols) {
        const double v = rng.bit() ? value : -value;
        entries.emplace_back(static_cast<int>(i), j, v);
        dot += v * pop->w_star(j);
      }
      pop->y(static_cast<Eigen::Index>(i)) = std::clamp(dot + noise_sd * sample_normal(rng), -1.0, 1.0);
    }
    pop->X.resize(static_cast<Eigen::Index>(n), d);
    pop->X.setFromTriplets(entries.begin(), entries.end());
    cache.put(key, pop);
    return pop;
  }

  std::shared_ptr<const Optimum> optimum(const std::string& set_name, const Population& pop, double r) const {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (auto it = optima.find({set_name, static_cast<std::size_t>(pop.y.size()), r}); it != optima.end())
        return it->second;
    }
    const SharedWorkTimer made(run_threads);
    auto opt = std::make_shared<Optimum>();
    opt->w = constrained_regression(pop.X, pop.y, parse_sparse_set(set_name), r);  // the non-private ERM over C
    const double n = static_cast<double>(pop.y.size());
    opt->risk = (pop.X * opt->w - pop.y).squaredNorm() / n;
    opt->zero_risk = pop.y.squaredNorm() / n;
    std::lock_guard<std::mutex> lock(mutex);
    optima[{set_name, static_cast<std::size_t>(pop.y.size()), r}] = opt;
    return opt;
  }

  double width(const std::string& set_name) const {  // of the set of radius 1 (Monte Carlo, 2000 draws)
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = widths.find(set_name); it != widths.end()) return it->second;
    return widths[set_name] = gaussian_width(parse_sparse_set(set_name), d, 2000, 7);
  }
};

// The config's "task" object, decoded once (params.hpp: TypedTask).
struct LdpHighDimOptions {
  int d = 1000, sparsity = 5, nonzeros = 2, popular = 10;
  double popular_mass = 0.5, noise_sd = 0.1;
  std::uint64_t data_seed = 1;
  static const ParamTable<LdpHighDimOptions>& table() {
    using K = ParamSpec::Kind;
    using O = LdpHighDimOptions;
    static const auto t = ParamTable<O>()
        .add(&O::d, "d", K::PositiveInt, 1000, "dimension")
        .add(&O::sparsity, "sparsity", K::PositiveInt, 5, "non-zeros of the planted w* (at most popular)")
        .add(&O::nonzeros, "nonzeros", K::PositiveInt, 2, "non-zeros of a record, each +-1/sqrt(nonzeros)")
        .add(&O::popular, "popular", K::PositiveInt, 10, "size of the coordinate block holding supp(w*)")
        .add(&O::popular_mass, "popular_mass", K::PositiveNumber, 0.5, "probability that a record's entry lands in that block")
        .add(&O::noise_sd, "noise_sd", K::PositiveNumber, 0.1, "label noise")
        .add(&O::data_seed, "data_seed", K::NonNegativeInt, 1, "seed of the generated players");
    return t;
  }
};

class LdpHighDimTask final : public TypedTask<LdpHighDimOptions> {
 public:
  std::string name() const override { return "ldp_highdim"; }
  std::vector<std::string> metrics() const override {
    return {"excess_risk", "risk", "optimum_risk", "zero_excess_risk", "w_error", "gaussian_width", "noise_scale", "clipped"};
  }
  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const LdpHighDimOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<LdpHighDimContext>();
    ctx->config = &cfg;
    ctx->threads = env.threads;
    ctx->d = o.d;
    ctx->sparsity = o.sparsity;
    ctx->nonzeros = o.nonzeros;
    ctx->popular = o.popular;
    ctx->popular_mass = o.popular_mass;
    ctx->noise_sd = o.noise_sd;
    ctx->data_seed = o.data_seed;
    if (ctx->popular > ctx->d || ctx->sparsity > ctx->popular || ctx->nonzeros > ctx->d || ctx->popular_mass > 1)
      throw ConfigError(cfg.file + ": $.task: need sparsity <= popular <= d, nonzeros <= d and popular_mass <= 1 (got sparsity " +
                        std::to_string(ctx->sparsity) + ", popular " + std::to_string(ctx->popular) + ", nonzeros " +
                        std::to_string(ctx->nonzeros) + ", d " + std::to_string(ctx->d) + ", popular_mass " +
                        std::to_string(ctx->popular_mass) + ")");
    ctx->data_summary = {{"name", "generated"}, {"stand_in", false}, {"d", ctx->d}, {"sparsity", ctx->sparsity},
                         {"records", std::to_string(ctx->nonzeros) + " entries +-1/sqrt(" + std::to_string(ctx->nonzeros) +
                                         ") (unit sphere), each in a block of " + std::to_string(ctx->popular) +
                                         " coordinates holding supp(w*) with probability " + std::to_string(ctx->popular_mass) +
                                         "; y = <w*, x> + N(0, " + std::to_string(ctx->noise_sd) + "^2) clipped to [-1, 1]"},
                         {"w_star", "sparsity entries 1/sparsity in the block (L1 ball: alternating signs; simplex: >= 0)"}};
    return ctx;
  }
};

struct LdpHighDimParams {
  std::size_t players = 0;
  std::string set;
  double radius = 0;
  int m = 0;  // compressed only
  static ParamTable<LdpHighDimParams> table(bool compressed) {
    using K = ParamSpec::Kind;
    using P = LdpHighDimParams;
    ParamTable<P> t;
    t.add(&P::players, "players", K::PositiveInt, nullptr, "n")
        .add(&P::set, "set", K::String, "l1_ball", "the constraint set C", {"l1_ball", "simplex"})
        .add(&P::radius, "radius", K::PositiveNumber, 1.0, "r: C = r B_1 or the simplex of sum r (Gaussian width r w(B))");
    if (compressed) t.add(&P::m, "m", K::PositiveInt, 100, "projection dimension");
    return t;
  }
};

class LdpHighDimMethod final : public TypedMethod<LdpHighDimContext, LdpHighDimParams> {
 public:
  explicit LdpHighDimMethod(bool compressed) : compressed_(compressed), table_(LdpHighDimParams::table(compressed)) {}
  std::string name() const override { return compressed_ ? "ldp_compressed" : "ldp_sgd_full"; }
  std::string task() const override { return "ldp_highdim"; }
  void run(const LdpHighDimContext& ctx, const LdpHighDimParams& P, const CellGroup& group, const Emit& emit) const override {
    const std::string set_name = P.set;
    const SparseSet set = parse_sparse_set(set_name);
    const double r = P.radius;
    const auto pop = ctx.population(set_name, P.players);
    const auto opt = ctx.optimum(set_name, *pop, r);
    const double width = r * ctx.width(set_name);
    const double n = static_cast<double>(pop->y.size());
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      const auto t0 = std::chrono::steady_clock::now();
      Eigen::VectorXd w;
      double noise = 0, clipped = 0;
      json details = json::object();
      if (compressed_) {
        // The players' reports do not depend on the radius: their seed is that of the cell key
        // without it, and the radii of one (set, players, m, repetition, epsilon) fit one collection.
        json collected_params = group.params;  // the point the cell keys are made of
        collected_params.erase("radius");
        const std::string key = cell_key(group.method->label, collected_params, cell.epsilon, group.rep);
        const std::uint64_t collection_seed = derive_seed(ctx.config->seed, text_hash("collection|" + key));
        const int m = P.m;
        const auto c0 = std::chrono::steady_clock::now();
        const auto [collection, made] =
            ctx.collections.get(std::to_string(P.players) + "|" + std::to_string(m), key, [&] {
              return ldp_compressed_collect(pop->X, pop->y, m, cell.epsilon, collection_seed, 1.5, ctx.threads);
            });
        const double collection_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
        const HighDimResult h = ldp_compressed_fit(*collection, set, r);
        w = h.w;
        noise = h.noise_scale;
        clipped = static_cast<double>(h.clipped);
        details = {{"budget", "eps/2 on the projected record z (discrete Laplace on the lattice), eps/2 on y"},
                   {"lattice_step", h.lattice_step}, {"noise_scale_y", h.noise_scale_y}, {"z_max", 1.5},
                   {"collection_seed", std::to_string(collection_seed)},
                   {"collection", made ? "made by this cell" : "reused: collected for another radius"},
                   {"collection_seconds", made ? collection_seconds : 0.0}};
      } else {
        w = ldp_sgd_constrained(pop->X, pop->y, cell.epsilon, set, r, cell.noise_seed);
        noise = djw_l2_scale(static_cast<std::size_t>(ctx.d), 2 * (r + 1), cell.epsilon);
        details = {{"budget", "interactive: each player answers once, eps on her gradient (DJW L2 mechanism)"}};
      }
      const double risk = (pop->X * w - pop->y).squaredNorm() / n;
      CellResult res;
      res.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      res.metrics = {{"excess_risk", risk - opt->risk}, {"risk", risk}, {"optimum_risk", opt->risk},
                     {"zero_excess_risk", opt->zero_risk - opt->risk},
                     {"w_error", (w - opt->w).norm()}, {"gaussian_width", width}, {"noise_scale", noise},
                     {"clipped", clipped}};
      details["w_star_distance"] = (w - pop->w_star).norm();
      details["optimum_w_star_distance"] = (opt->w - pop->w_star).norm();
      res.details = std::move(details);
      emit(i, std::move(res));
    }
  }

 private:
  const ParamTable<LdpHighDimParams>& param_table() const override { return table_; }
  bool compressed_;
  ParamTable<LdpHighDimParams> table_;
};

}  // namespace

std::vector<LdpErmOptimum> ldp_erm_optima(const ExperimentConfig& cfg, const RunEnvironment& env, std::size_t players) {
  if (cfg.task != "ldp_erm") throw ConfigError(cfg.file + ": not an ldp_erm config");
  const LdpErmTask erm;
  const Task& task = erm;  // Task::prepare decodes the options (LdpErmTask's prepare takes them decoded)
  const auto prepared = task.prepare(cfg, env);
  const auto& ctx = static_cast<const LdpErmContext&>(*prepared);
  std::set<std::pair<std::string, int>> cells;
  for (const MethodSpec& m : cfg.methods)
    for (const json& point : m.expand()) cells.insert({point.value("source", std::string("generated")), point.value("p", 1)});
  std::vector<LdpErmOptimum> out;
  for (const auto& [source, p] : cells) {
    const auto inst = ctx.instance(source, players, p, env.threads);
    out.push_back({source, p, players, inst->optimum.theta, inst->boundary_distance, inst->loss_range,
                   inst->optimum.risk});
  }
  return out;
}

void register_ldp_task(Registry& registry) {
  registry.add_task(std::make_unique<LdpErmTask>());
  for (auto k : {LdpErmMethod::Kind::Bernstein, LdpErmMethod::Kind::Bernstein1Bit, LdpErmMethod::Kind::InputPerturbation,
                 LdpErmMethod::Kind::Sgd, LdpErmMethod::Kind::NonPrivate, LdpErmMethod::Kind::SgdPiecewise,
                 LdpErmMethod::Kind::SgdHybrid, LdpErmMethod::Kind::SgdPrivUnit})
    registry.add_method(std::make_unique<LdpErmMethod>(k));
  registry.add_task(std::make_unique<LdpMarginalsTask>());
  for (auto k : {LdpMarginalsMethod::Kind::Chebyshev, LdpMarginalsMethod::Kind::RandomizedResponse,
                 LdpMarginalsMethod::Kind::CentralHistogram})
    registry.add_method(std::make_unique<LdpMarginalsMethod>(k));
  registry.add_task(std::make_unique<LdpHighDimTask>());
  registry.add_method(std::make_unique<LdpHighDimMethod>(true));
  registry.add_method(std::make_unique<LdpHighDimMethod>(false));
}

}  // namespace privrace::experiments
