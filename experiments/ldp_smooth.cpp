// Task ldp_smooth (Wang, Gaboardi & Xu 2018, Section 6.2, Algorithm 5): a family of Gaussian
// kernel density queries with several bandwidths, answered at once from the trigonometric
// (Chebyshev-cosine) basis released by LDP-AVG, against per-query LDP averaging.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "ldp_task.hpp"
#include "params.hpp"
#include "shared_work.hpp"
#include "privrace/core/number.hpp"
#include "privrace/ldp/mean_mechanisms.hpp"
#include "privrace/ldp/protocols.hpp"
#include "privrace/ldp/smooth.hpp"

namespace privrace::experiments {

namespace {

using namespace privrace::ldp;

std::vector<double> parse_bandwidths(const std::string& file, const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::optional<double> v = parse_finite_number(item);
    if (!v || !(*v > 0))
      throw ConfigError(file + ": $.task.bandwidths: '" + item + "' is not a positive number (expected e.g. \"0.1,0.2,0.4\")");
    out.push_back(*v);
  }
  if (out.empty()) throw ConfigError(file + ": $.task.bandwidths: empty, expected e.g. \"0.1,0.2,0.4\"");
  return out;
}

struct LdpSmoothContext : TaskContext {
  int d = 2;
  std::vector<KernelQuery> queries;
  std::vector<double> bandwidths;
  std::uint64_t data_seed = 1;
  bool clip = true;
  PointData real;  // the data set's first d columns mapped into [-1, 1]^d by public bounds

  mutable std::mutex mutex;
  struct Population {
    PointData data;
    std::vector<double> exact;
  };
  mutable RecentObjects<std::pair<std::string, std::size_t>, Population> cache{3};
  // Coefficients per degree t (public: they depend on the queries only).
  mutable std::map<int, std::shared_ptr<const std::vector<std::vector<double>>>> coefficient_cache;
  mutable std::map<int, std::vector<double>> approx_cache;  // t -> max |f - p| per query

  std::shared_ptr<const Population> population(const std::string& source, std::size_t n) const {
    const auto lock = lock_noting_wait(mutex);
    const auto key = std::make_pair(source, n);
    if (auto found = cache.find(key)) return found;
    const SharedWorkTimer made(run_threads);  // the players and the exact answers: every repetition's
    auto pop = std::make_shared<Population>();
    PointData& p = pop->data;
    p.n = n;
    p.d = static_cast<std::size_t>(d);
    p.x.resize(n * p.d);
    if (source == "generated") {
      // Three Gaussian clusters (centres and spreads from the seed) truncated to [-1, 1]^d by
      // rejection, player i from her own stream: nested in n, nothing clipped.
      SeededRandom model(derive_seed(data_seed, 0x5300ULL));
      std::vector<double> centre(3 * p.d), spread(3);
      for (auto& c : centre) c = -0.6 + 1.2 * model.unit();
      for (auto& s : spread) s = 0.15 + 0.25 * model.unit();
      for (std::size_t i = 0; i < n; ++i) {
        SeededRandom rng(derive_seed(derive_seed(data_seed, 0x5301ULL), i));
        const std::size_t cls = static_cast<std::size_t>(rng.below(3));
        for (std::size_t a = 0; a < p.d; ++a) {
          double v;
          do v = centre[cls * p.d + a] + spread[cls] * sample_normal(rng);
          while (std::abs(v) > 1.0);
          p.x[i * p.d + a] = v;
        }
      }
    } else {
      // Rows of the real table drawn with replacement (nested in n).
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t r = derive_seed(derive_seed(data_seed, 0x5302ULL), i) % real.n;
        for (std::size_t a = 0; a < p.d; ++a) p.x[i * p.d + a] = real.x[r * real.d + a];
      }
    }
    clip_to_cube(p, clip, source == "generated" ? "generated players" : config->dataset);
    pop->exact = exact_kernel_answers(p, queries, run_threads);
    cache.put(key, pop);
    return pop;
  }

  std::shared_ptr<const std::vector<std::vector<double>>> coefficients(const TrigonometricBasis& basis) const {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = coefficient_cache.find(basis.degree()); it != coefficient_cache.end()) return it->second;
    auto c = std::make_shared<std::vector<std::vector<double>>>(queries.size());
    std::vector<double> approx(queries.size());
    const auto Q = static_cast<std::int64_t>(queries.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::int64_t q = 0; q < Q; ++q) {
      const auto& query = queries[static_cast<std::size_t>(q)];
      (*c)[static_cast<std::size_t>(q)] = basis.coefficients([&](const double* x) { return query(x); });
      approx[static_cast<std::size_t>(q)] =
          basis.approximation_error([&](const double* x) { return query(x); }, (*c)[static_cast<std::size_t>(q)]);
    }
    coefficient_cache[basis.degree()] = c;
    approx_cache[basis.degree()] = approx;
    return c;
  }
};

// The config's "task" object, decoded once (params.hpp: TypedTask).
struct LdpSmoothOptions {
  int d = 2;
  int centres_per_axis = 8;
  std::string bandwidths = "0.15,0.25,0.4,0.7";  // parsed (with its own messages) by prepare()
  std::uint64_t data_seed = 1;
  bool clip = true;
  static const ParamTable<LdpSmoothOptions>& table() {
    using K = ParamSpec::Kind;
    using O = LdpSmoothOptions;
    static const auto t = ParamTable<O>()
        .add(&O::d, "d", K::PositiveInt, 2, "dimension of the data universe [-1, 1]^d")
        .add(&O::centres_per_axis, "centres_per_axis", K::PositiveInt, 8, "kernel centres: a grid of this many per axis")
        .add(&O::bandwidths, "bandwidths", K::String, "0.15,0.25,0.4,0.7", "comma-separated Gaussian kernel bandwidths")
        .add(&O::data_seed, "data_seed", K::NonNegativeInt, 1, "seed of the generated players and of the resampling of real rows")
        .add(&O::clip, "clip", K::Bool, true, "clamp coordinates outside [-1, 1] (rows counted) instead of refusing");
    return t;
  }
};

class LdpSmoothTask final : public TypedTask<LdpSmoothOptions> {
 public:
  std::string name() const override { return "ldp_smooth"; }
  std::vector<std::string> metrics() const override {
    return {"max_abs_error", "mean_abs_error", "approximation_error", "queries", "terms", "reports_per_player", "clipped_rows"};
  }
  std::unique_ptr<TaskContext> prepare(const ExperimentConfig& cfg, const LdpSmoothOptions& o,
                                       const RunEnvironment& env) const override {
    auto ctx = std::make_unique<LdpSmoothContext>();
    ctx->config = &cfg;
    ctx->threads = env.threads;
    ctx->d = o.d;
    ctx->bandwidths = parse_bandwidths(cfg.file, o.bandwidths);
    ctx->queries = kde_query_family(ctx->d, o.centres_per_axis, ctx->bandwidths);
    ctx->data_seed = o.data_seed;
    ctx->clip = o.clip;
    const json& entry = env.datasets->entry(cfg.dataset);
    Preprocessing prep = Preprocessing::from_json(entry.value("preprocessing", json::object()));
    prep = Preprocessing::from_json(cfg.preprocessing, prep);
    ctx->data = load_dataset(*env.datasets, cfg.dataset, prep, env.search);
    const auto& x = ctx->data.x;
    if (x.cols() < ctx->d)
      throw ConfigError(cfg.file + ": $.task.d: d = " + std::to_string(ctx->d) + " but the data set '" + cfg.dataset +
                        "' has only " + std::to_string(x.cols()) + " features after preprocessing");
    // Public preprocessing: the config's "unit_cube" scaling by the registry's bounds gives
    // [0, 1]; 2 v - 1 maps it onto the data universe [-1, 1]^d.
    ctx->real.n = static_cast<std::size_t>(x.rows());
    ctx->real.d = static_cast<std::size_t>(ctx->d);
    ctx->real.x.resize(ctx->real.n * ctx->real.d);
    for (std::size_t i = 0; i < ctx->real.n; ++i)
      for (std::size_t a = 0; a < ctx->real.d; ++a)
        ctx->real.x[i * ctx->real.d + a] = 2.0 * x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(a)) - 1.0;
    if (ctx->real.n == 0) throw InputError(cfg.dataset + ": no rows");
    ctx->data_summary = {{"name", cfg.dataset},
                         {"stand_in", ctx->data.stand_in},
                         {"rows", ctx->real.n},
                         {"d", ctx->d},
                         {"features", ctx->data.feature_names},
                         {"queries", ctx->queries.size()},
                         {"bandwidths", ctx->bandwidths},
                         {"query", "Gaussian kernel exp(-||x - c||^2 / (2 sigma^2)), centres on a grid of [-1, 1]^d"},
                         {"preprocessing", "real source: first d features scaled by public bounds into [-1, 1]^d, "
                                           "players drawn with replacement; generated: 3 truncated Gaussian clusters"}};
    note_substitute(ctx->data_summary, ctx->data);  // real data of another version than the paper's
    return ctx;
  }
};

// Algorithm 5 with the basis sent through Wang et al.'s multidimensional PM or HM (ICDE 2019,
// Algorithm 4) instead of LDP-AVG: each player's D = t^d - 1 terms phi_r(x) lie in [-1, 1]
// already; she reports k = max(1, min(D, floor(eps / 2.5))) sampled terms with eps / k each,
// scaled by D / k, and the server averages (unbiased) and answers every query from the means.
SmoothRelease mean_mechanism_queries(const PointData& data, const TrigonometricBasis& basis,
                                     const std::vector<std::vector<double>>& coefficients, double eps, bool hybrid,
                                     std::uint64_t seed, int threads) {
  const std::size_t terms = basis.sent();
  // phi_r is a product of Chebyshev values in [-1, 1]; the clamp only absorbs rounding.
  auto value = [&](std::uint64_t i, std::size_t j) { return std::clamp(basis.value(j, data.row(i)), -1.0, 1.0); };
  SmoothRelease rel;
  if (hybrid) {
    const HybridVector mech(terms, eps);
    rel.sent_means = simulate_sampled_mean(mech, data.n, seed, value, threads).mean;
    rel.reports_per_player = mech.k();
  } else {
    const PiecewiseVector mech(terms, eps);
    rel.sent_means = simulate_sampled_mean(mech, data.n, seed, value, threads).mean;
    rel.reports_per_player = mech.k();
  }
  rel.answers.reserve(coefficients.size());
  for (const auto& c : coefficients) rel.answers.push_back(basis.answer(c, rel.sent_means));
  return rel;
}

// The population (both methods) and the trigonometric basis (ldp_trigonometric).
struct LdpSmoothParams {
  std::size_t players = 0;
  std::string source;
  int t = 0;
  std::string protocol;
  double max_gib = 0;
  static ParamTable<LdpSmoothParams> table(bool trigonometric) {
    using K = ParamSpec::Kind;
    using P = LdpSmoothParams;
    ParamTable<P> table;
    table.add(&P::players, "players", K::PositiveInt, nullptr, "n, the number of simulated players")
        .add(&P::source, "source", K::String, "generated", "generated players or rows of the data set", {"generated", "real"});
    if (trigonometric)
      table.add(&P::t, "t", K::PositiveInt, 8, "degree t - 1 per variable (t^d basis terms)")
          .add(&P::protocol, "protocol", K::String, "bit",
               "LDP-AVG: one public term and one bit a player (Lemma 2), or all terms by Algorithm 1; or the "
               "terms through Wang et al.'s multidimensional Piecewise (pm) or Hybrid (hm) Mechanism",
               {"bit", "laplace", "pm", "hm"})
          .add(&P::max_gib, "max_gib", K::PositiveNumber, 2.0, "refuse bases needing more memory");
    return table;
  }
};

class LdpSmoothMethod final : public TypedMethod<LdpSmoothContext, LdpSmoothParams> {
 public:
  explicit LdpSmoothMethod(bool trigonometric) : trig_(trigonometric), table_(LdpSmoothParams::table(trigonometric)) {}
  std::string name() const override { return trig_ ? "ldp_trigonometric" : "ldp_per_query_average"; }
  std::string task() const override { return "ldp_smooth"; }
  void run(const LdpSmoothContext& ctx, const LdpSmoothParams& P, const CellGroup& group, const Emit& emit) const override {
    const auto pop = ctx.population(P.source, P.players);
    std::unique_ptr<TrigonometricBasis> basis;
    std::shared_ptr<const std::vector<std::vector<double>>> coeffs;
    std::vector<double> approx;
    if (trig_) {
      basis = std::make_unique<TrigonometricBasis>(ctx.d, P.t, ctx.queries.size(), P.max_gib * 1073741824.0);
      coeffs = ctx.coefficients(*basis);
      std::lock_guard<std::mutex> lock(ctx.mutex);
      approx = ctx.approx_cache.at(basis->degree());
    }
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<double> est;
      double reports = 1, terms = 0, worst_approx = 0;
      json details = json::object();
      if (trig_) {
        const std::string& protocol = P.protocol;
        const bool mean_mechanism = protocol == "pm" || protocol == "hm";
        const SmoothRelease rel =
            mean_mechanism ? mean_mechanism_queries(pop->data, *basis, *coeffs, cell.epsilon, protocol == "hm",
                                                    cell.noise_seed, ctx.threads)
                           : ldp_trigonometric_queries(pop->data, *basis, *coeffs, cell.epsilon,
                                                       parse_smooth_protocol(protocol), cell.noise_seed, ctx.threads);
        est = rel.answers;
        reports = static_cast<double>(rel.reports_per_player);
        terms = static_cast<double>(basis->sent());
        for (double a : approx) worst_approx = std::max(worst_approx, a);
        details["budget"] = protocol == "bit"       ? "one public basis term and one bit a player with the whole eps"
                            : protocol == "laplace" ? "all t^d - 1 terms a player, eps / (t^d - 1) each (basic composition)"
                                                    : "k = max(1, min(t^d - 1, floor(eps / 2.5))) terms sampled by the player, "
                                                      "eps / k each (Wang et al. Algorithm 4 over " +
                                                          std::string(protocol == "pm" ? "PM" : "HM") + ")";
      } else {
        est = ldp_per_query_kernel_answers(pop->data, ctx.queries, cell.epsilon, cell.noise_seed, ctx.threads);
        terms = static_cast<double>(ctx.queries.size());
        details["budget"] = "one public query and one bit a player with the whole eps";
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // Per bandwidth: max |error| and (trigonometric) the approximation error of the polynomial.
      const std::size_t per_bw = ctx.queries.size() / ctx.bandwidths.size();
      json by_bw = json::array();
      double mx = 0, mean = 0;
      for (std::size_t b = 0; b < ctx.bandwidths.size(); ++b) {
        double e_max = 0, a_max = 0;
        for (std::size_t q = b * per_bw; q < (b + 1) * per_bw; ++q) {
          const double e = std::abs(est[q] - pop->exact[q]);
          e_max = std::max(e_max, e);
          mean += e / static_cast<double>(ctx.queries.size());
          if (trig_) a_max = std::max(a_max, approx[q]);
        }
        mx = std::max(mx, e_max);
        json row = {{"bandwidth", ctx.bandwidths[b]}, {"max_abs_error", e_max}};
        if (trig_) row["approximation_error"] = a_max;
        by_bw.push_back(row);
      }
      details["by_bandwidth"] = by_bw;
      CellResult r;
      r.build_seconds = seconds;
      r.metrics = {{"max_abs_error", mx},
                   {"mean_abs_error", mean},
                   {"approximation_error", worst_approx},
                   {"queries", static_cast<double>(ctx.queries.size())},
                   {"terms", terms},
                   {"reports_per_player", reports},
                   {"clipped_rows", static_cast<double>(pop->data.clipped)}};
      r.details = std::move(details);
      emit(i, std::move(r));
    }
  }

 private:
  const ParamTable<LdpSmoothParams>& param_table() const override { return table_; }
  bool trig_;
  ParamTable<LdpSmoothParams> table_;
};

}  // namespace

void register_ldp_smooth(Registry& registry) {
  registry.add_task(std::make_unique<LdpSmoothTask>());
  registry.add_method(std::make_unique<LdpSmoothMethod>(true));
  registry.add_method(std::make_unique<LdpSmoothMethod>(false));
}

}  // namespace privrace::experiments
