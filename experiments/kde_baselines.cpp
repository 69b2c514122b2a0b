#include "kde_baselines.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>

#include "kde_task.hpp"
#include "shared_work.hpp"
#include "privbayes_params.hpp"
#include "race_params.hpp"
#include "privrace/baselines/bernstein.hpp"
#include "privrace/baselines/histogram.hpp"
#include "privrace/baselines/kme.hpp"
#include "privrace/baselines/pfda.hpp"
#include "privrace/baselines/privbayes.hpp"
#include "privrace/baselines/spectral.hpp"
#include "synthetic_params.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"

namespace privrace::experiments {
namespace {

using K = ParamSpec::Kind;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The public box every baseline clips the data into: lower and upper (the first parameters of each).
struct DomainParams {
  double lower = 0, upper = 0;
  baselines::Domain domain() const { return {lower, upper}; }
  std::string check() const { return upper > lower ? "" : "upper must exceed lower"; }
  static const ParamTable<DomainParams>& table() {
    static const auto t =
        ParamTable<DomainParams>()
            .add(&DomainParams::lower, "lower", K::Number, 0.0, "public lower bound of every feature (data is clipped into [lower, upper])")
            .add(&DomainParams::upper, "upper", K::Number, 1.0, "public upper bound of every feature");
    return t;
  }
};

// The (epsilon, delta) methods: delta > 0 is the parameter's kind, delta < 1 is checked here.
std::string check_delta(double delta) { return delta < 1 ? "" : "delta must be below 1"; }
std::string check_domain_and_delta(const DomainParams& domain, double delta) {
  auto e = domain.check();
  return e.empty() ? check_delta(delta) : e;
}

// Common frame: the method supplies `prepare` (epsilon-independent, timed once) and
// `release(eps, rng) -> densities at the queries` (timed per cell, noise + evaluation).
template <class Params>
class BaselineMethod : public TypedMethod<KdeContext, Params> {
 public:
  using Emit = Method::Emit;
  std::string task() const override { return "kde"; }
  // A setting the method refuses (a lattice or a marginal too large, estimated time above
  // the limit) is recorded, metrics null and the reason in details, instead of ending the run.
  void run(const KdeContext& ctx, const Params& p, const CellGroup& group, const Emit& emit) const final {
    std::vector<bool> done(group.cells.size(), false);
    try {
      run_cells(ctx, p, group, [&](std::size_t i, CellResult r) {
        done[i] = true;
        emit(i, std::move(r));
      });
    } catch (const baselines::InfeasibleError& e) {
      // The estimates as numbers, so a figure or table can say what the refused setting would cost.
      refuse_rest(group, done, emit,
                  {{"refused", e.what()},
                   {"estimated_seconds", e.estimated_seconds},
                   {"estimated_bytes", e.estimated_bytes},
                   {"estimated_operations", e.operations}});
    } catch (const UsageError& e) {
      refuse_rest(group, done, emit, {{"refused", e.what()}});
    }
  }

 private:
  static void refuse_rest(const CellGroup& group, const std::vector<bool>& done, const Emit& emit, const json& details) {
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      if (done[i]) continue;
      CellResult r;
      for (const auto& m : {"mre", "mre_debiased", "l2_error", "l2_error_debiased"})
        r.metrics[m] = std::numeric_limits<double>::quiet_NaN();
      r.details = details;
      emit(i, std::move(r));
    }
  }

 protected:
  virtual void run_cells(const KdeContext& ctx, const Params& p, const CellGroup& group, const Emit& emit) const = 0;
  // The parameters as a key of shared work (SharedWork): the point they were decoded from.
  json key_of(const Params& p) const { return this->param_table().encode(p); }
  struct Timed {
    std::vector<double> dens;
    double noise_seconds = 0, query_seconds = 0;
    json details = json::object();
  };
  // Emits every cell of the group given a prepared release function.
  template <typename Release>
  void emit_all(const KdeContext& ctx, const CellGroup& group, const Emit& emit, double prepare_seconds,
                const json& shared_details, Release&& release) const {
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      SeededRandom rng(cell.noise_seed);  // experiments: reproducible noise, not fit for release
      Timed t = release(cell.epsilon, rng);
      CellResult r;
      r.metrics = ctx.metrics(t.dens, t.dens);
      r.build_seconds = prepare_seconds + t.noise_seconds;
      r.query_seconds_per_query = t.query_seconds / static_cast<double>(ctx.queries.rows());
      r.details = shared_details;
      r.details["prepare_seconds"] = prepare_seconds;
      r.details["noise_seconds"] = t.noise_seconds;
      r.details["noise_seeded"] = true;
      for (auto& [k, v] : t.details.items()) r.details[k] = v;
      // The qualitative density plot (paper Figure 3, eps = 1) needs the released function
      // itself: kept for small grids, first repetition only.
      if (group.rep == 0 && ctx.queries.rows() <= 500 && std::abs(cell.epsilon - 1.0) < 1e-9) {
        r.details["released_on_queries"] = t.dens;
        r.details["truth_on_queries"] = ctx.truth;
      }
      emit(i, std::move(r));
    }
  }
};

struct BernsteinParams {
  DomainParams domain;
  int degree = 0;
  double max_seconds = 0, max_memory_gb = 0;
  std::string check() const { return domain.check(); }
  static const ParamTable<BernsteinParams>& table() {
    using P = BernsteinParams;
    static const auto t =
        ParamTable<P>()
            .add(&P::domain, DomainParams::table())
            .add(&P::degree, "degree", K::PositiveInt, nullptr, "Bernstein degree k: (k+1)^d lattice points")
            .add(&P::max_seconds, "max_seconds", K::PositiveNumber, 3600.0, "refuse lattices estimated to take longer")
            .add(&P::max_memory_gb, "max_memory_gb", K::PositiveNumber, 16.0, "refuse lattices estimated to need more memory (GiB)");
    return t;
  }
};

class BernsteinMethod final : public BaselineMethod<BernsteinParams> {
 public:
  std::string name() const override { return "bernstein"; }
  void run_cells(const KdeContext& ctx, const BernsteinParams& p, const CellGroup& group, const Emit& emit) const override {
    const int degree = p.degree;
    const auto d = static_cast<std::size_t>(ctx.train.cols());
    const double evals_per_second = 1e8;  // BernsteinRelease's default, measured on this machine
    const auto [cached, prep] = cache_.get(ctx, key_of(p), [&] {
      return baselines::BernsteinRelease(ctx.train, ctx.kernel, p.domain.domain(), degree, p.max_seconds, evals_per_second,
                                         p.max_memory_gb * (1ULL << 30));
    });
    const baselines::BernsteinRelease& exact = *cached;
    const json shared = {
        {"lattice_points", exact.lattice_size()},
        {"estimated_seconds", static_cast<double>(exact.lattice_size()) * static_cast<double>(ctx.train.rows()) / evals_per_second},
        {"estimated_bytes", baselines::BernsteinRelease::estimated_bytes(degree, d)}};
    emit_all(ctx, group, emit, prep, shared, [&](double eps, RandomSource& rng) {
      Timed t;
      auto t1 = Clock::now();
      const auto priv = exact.privatized(eps, rng);
      t.noise_seconds = since(t1);
      t1 = Clock::now();
      t.dens = priv.evaluate(ctx.queries);
      t.query_seconds = since(t1);
      t.details["noise_scale"] = exact.noise_scale(eps);
      return t;
    });
  }

 private:
  SharedWork<const baselines::BernsteinRelease> cache_;
};

struct KmeParams {
  DomainParams domain;
  std::size_t points = 0;
  std::string synthetic;
  double summary_share = 0, delta = 0, tol = 0;
  std::size_t max_rank = 0;
  double max_memory_gb = 0;
  std::string check() const {
    if (auto e = domain.check(); !e.empty()) return e;
    if (summary_share >= 1) return "summary_share must be below 1";
    return check_delta(delta);
  }
  static const ParamTable<KmeParams>& table() {
    using P = KmeParams;
    static const auto t =
        ParamTable<P>()
            .add(&P::domain, DomainParams::table())
            .add(&P::points, "points", K::PositiveInt, 5000, "M public synthetic points")
            .add(&P::synthetic, "synthetic", K::String, "uniform",
                 "public points: uniform or normal over the domain (data-independent), or private_normal: normal with "
                 "the data's per-dimension mean and sd released under summary_share * epsilon",
                 {"uniform", "normal", "private_normal"})
            .add(&P::summary_share, "summary_share", K::PositiveNumber, 0.1, "private_normal: share of epsilon for the mean/sd summary")
            .add(&P::delta, "delta", K::PositiveNumber, 0.01, "delta of the Gaussian mechanism")
            .add(&P::tol, "tol", K::PositiveNumber, 1e-5, "pivoted Cholesky stopping residual")
            // No fixed rank cap by default: the error kept falling up to the full rank in the
            // measurement of baselines/kme.hpp (configs/README.md), so only memory bounds it.
            .add(&P::max_rank, "max_rank", K::NonNegativeInt, 0, "basis size cap; 0 = only the memory bound")
            .add(&P::max_memory_gb, "max_memory_gb", K::PositiveNumber, 2.0, "memory for the M x rank factor (GiB); bounds the rank");
    return t;
  }
};

class KmeMethod final : public BaselineMethod<KmeParams> {
 public:
  std::string name() const override { return "kme"; }
  void run_cells(const KdeContext& ctx, const KmeParams& p, const CellGroup& group, const Emit& emit) const override {
    baselines::KmeOptions o;
    o.points = p.points;
    o.synthetic = p.synthetic;
    o.tol = p.tol;
    o.max_rank = p.max_rank;
    o.max_bytes = p.max_memory_gb * (1ULL << 30);
    o.seed = group.seed;
    const double delta = p.delta;
    const baselines::Domain dom = p.domain.domain();
    if (o.synthetic == "private_normal") {
      // The public points depend on a private summary, so the basis is fit per cell (its cost
      // is in the cell's noise_seconds). Budget split derived in baselines/kme.hpp.
      const double share = p.summary_share;
      emit_all(ctx, group, emit, 0.0, json::object(), [&](double eps, RandomSource& rng) {
        Timed t;
        auto t1 = Clock::now();
        const baselines::PrivateMoments mom = baselines::private_moments(ctx.train, dom, share * eps, rng);
        const baselines::KmeRelease kme(ctx.train, ctx.kernel, dom,
                                        baselines::moment_points(mom, o.points, dom, derive_seed(group.seed, 11)), o);
        double sigma = 0;
        const double eps_weights = (1.0 - share) * eps;
        const auto wp = kme.release(eps_weights, delta, &rng, &sigma);
        t.noise_seconds = since(t1);
        t1 = Clock::now();
        t.dens = wp.evaluate(ctx.queries, ctx.kernel);
        t.query_seconds = since(t1);
        t.details["noise_sigma"] = sigma;
        t.details["rank"] = kme.rank();
        t.details["rank_cap"] = kme.rank_cap();
        t.details["cholesky_residual"] = kme.max_residual();
        t.details["budget_split"] = {{"summary_epsilon", share * eps},
                                     {"weights_epsilon", eps_weights},
                                     {"weights_delta", delta},
                                     {"composition", "basic: summary (pure, Laplace) then weights (Gaussian)"}};
        t.details["summary_noise_scale"] = mom.noise_scale;
        return t;
      });
      return;
    }
    const auto t0 = Clock::now();
    const baselines::KmeRelease kme(ctx.train, ctx.kernel, dom, o);
    const double prep = since(t0);
    emit_all(ctx, group, emit, prep,
             {{"rank", kme.rank()}, {"rank_cap", kme.rank_cap()}, {"cholesky_residual", kme.max_residual()}},
             [&](double eps, RandomSource& rng) {
               Timed t;
               auto t1 = Clock::now();
               double sigma = 0;
               const auto wp = kme.release(eps, delta, &rng, &sigma);
               t.noise_seconds = since(t1);
               t1 = Clock::now();
               t.dens = wp.evaluate(ctx.queries, ctx.kernel);
               t.query_seconds = since(t1);
               t.details["noise_sigma"] = sigma;
               return t;
             });
  }
};

struct SpectralParams {
  DomainParams domain;
  int terms = 0;
  std::string check() const { return domain.check(); }
  static const ParamTable<SpectralParams>& table() {
    static const auto t = ParamTable<SpectralParams>()
                              .add(&SpectralParams::domain, DomainParams::table())
                              .add(&SpectralParams::terms, "terms", K::PositiveInt, nullptr, "M cosine coefficients");
    return t;
  }
};

class SpectralMethod final : public BaselineMethod<SpectralParams> {
 public:
  std::string name() const override { return "spectral"; }
  void run_cells(const KdeContext& ctx, const SpectralParams& p, const CellGroup& group, const Emit& emit) const override {
    const auto [cached, prep] = cache_.get(
        ctx, key_of(p), [&] { return baselines::SpectralRelease(ctx.train, ctx.kernel, p.domain.domain(), p.terms); });
    const baselines::SpectralRelease& sp = *cached;
    emit_all(ctx, group, emit, prep, {{"l1_sensitivity", sp.l1_sensitivity()}}, [&](double eps, RandomSource& rng) {
      Timed t;
      auto t1 = Clock::now();
      const auto c = sp.release(eps, &rng);
      t.noise_seconds = since(t1);
      t1 = Clock::now();
      t.dens = sp.evaluate(c, ctx.queries);
      t.query_seconds = since(t1);
      t.details["noise_scale"] = sp.l1_sensitivity() / eps;
      return t;
    });
  }

 private:
  SharedWork<const baselines::SpectralRelease> cache_;
};

struct PfdaParams {
  DomainParams domain;
  double phi = 0, delta = 0, rho = 0;
  int grid = 0, eigenpairs = 0;
  std::string check() const { return check_domain_and_delta(domain, delta); }
  static const ParamTable<PfdaParams>& table() {
    using P = PfdaParams;
    static const auto t =
        ParamTable<P>()
            .add(&P::domain, DomainParams::table())
            .add(&P::phi, "phi", K::PositiveNumber, 0.01, "RKHS penalty")
            .add(&P::delta, "delta", K::PositiveNumber, 0.01, "delta")
            .add(&P::rho, "rho", K::Number, 0.0, "Gaussian covariance range in [0,1] units (0: bandwidth / span)")
            .add(&P::grid, "grid", K::PositiveInt, 1000, "Nystrom grid points")
            .add(&P::eigenpairs, "eigenpairs", K::PositiveInt, 400, "at most this many eigenpairs");
    return t;
  }
};

class PfdaMethod final : public BaselineMethod<PfdaParams> {
 public:
  std::string name() const override { return "pfda"; }
  void run_cells(const KdeContext& ctx, const PfdaParams& p, const CellGroup& group, const Emit& emit) const override {
    baselines::PfdaOptions o;
    o.phi = p.phi;
    o.rho = p.rho;
    o.grid = p.grid;
    o.max_eigenpairs = p.eigenpairs;
    const auto [cached, prep] =
        cache_.get(ctx, key_of(p), [&] { return baselines::PfdaRelease(ctx.train, ctx.kernel, p.domain.domain(), o); });
    const baselines::PfdaRelease& pf = *cached;
    const double delta = p.delta;
    emit_all(ctx, group, emit, prep, {{"eigenpairs_used", pf.eigenpairs()}, {"h_sensitivity", pf.sensitivity()}},
             [&](double eps, RandomSource& rng) {
               Timed t;
               auto t1 = Clock::now();
               const auto f = pf.release(eps, delta, &rng);
               t.noise_seconds = since(t1);
               t1 = Clock::now();
               t.dens = pf.evaluate(f, ctx.queries);
               t.query_seconds = since(t1);
               t.details["noise_sigma"] = pf.sigma(eps, delta);
               return t;
             });
  }

 private:
  SharedWork<const baselines::PfdaRelease> cache_;
};

struct HistogramParams {
  DomainParams domain;
  int bins = 0;
  NeighborRelation neighbors = NeighborRelation::AddRemove;
  std::string check() const { return domain.check(); }
  static const ParamTable<HistogramParams>& table() {
    using P = HistogramParams;
    static const auto t = ParamTable<P>()
                              .add(&P::domain, DomainParams::table())
                              .add(&P::bins, "bins", K::PositiveInt, nullptr, "bins per dimension")
                              .add(&P::neighbors, "neighbors", neighbor_choices(), "add-remove", "neighbouring relation");
    return t;
  }
};

class HistogramMethod final : public BaselineMethod<HistogramParams> {
 public:
  std::string name() const override { return "histogram"; }
  void run_cells(const KdeContext& ctx, const HistogramParams& p, const CellGroup& group, const Emit& emit) const override {
    const auto t0 = Clock::now();
    const baselines::HistogramRelease h(ctx.train, p.domain.domain(), p.bins);
    const double prep = since(t0);
    const double sens = p.neighbors == NeighborRelation::Replace ? 2.0 : 1.0;
    emit_all(ctx, group, emit, prep, {{"cells", h.cells()}}, [&](double eps, RandomSource& rng) {
      Timed t;
      auto t1 = Clock::now();
      const auto wp = h.points(h.noisy_counts(eps, sens, &rng));
      t.noise_seconds = since(t1);
      t1 = Clock::now();
      t.dens = wp.evaluate(ctx.queries, ctx.kernel);
      t.query_seconds = since(t1);
      t.details["noise_scale"] = sens / eps;
      t.details["released_points"] = wp.weights.size();
      return t;
    });
  }
};

struct PrivBayesKdeParams {
  DomainParams domain;
  baselines::PrivBayesOptions model;  // degree, bins, beta
  std::size_t samples = 0;
  std::string check() const {
    if (auto e = domain.check(); !e.empty()) return e;
    return check_privbayes_beta(model);
  }
  static const ParamTable<PrivBayesKdeParams>& table() {
    using P = PrivBayesKdeParams;
    static const auto t = [] {
      ParamTable<P> t;
      t.add(&P::domain, DomainParams::table());
      add_privbayes_degree_bins(t, &P::model).add(&P::samples, "samples", K::PositiveInt, 10000, "M synthetic points");
      return add_privbayes_beta(t, &P::model);
    }();
    return t;
  }
};

class PrivBayesMethod final : public BaselineMethod<PrivBayesKdeParams> {
 public:
  std::string name() const override { return "privbayes"; }
  void run_cells(const KdeContext& ctx, const PrivBayesKdeParams& p, const CellGroup& group, const Emit& emit) const override {
    const baselines::PrivBayesOptions& o = p.model;
    const baselines::Domain dom = p.domain.domain();
    // The binned table and its mutual-information scores (no randomness) serve every
    // epsilon, repetition and sample size of one (domain, degree, bins, beta).
    const json key = {p.domain.lower, p.domain.upper, o.degree, o.bins, o.beta};
    const auto [shared_pb, prep] = cache_.get(ctx, key, [&] {
      return baselines::PrivBayes(ctx.train, baselines::TableBox::uniform(static_cast<std::size_t>(ctx.train.cols()), dom.lower, dom.upper), o);
    });
    const baselines::PrivBayes& pb = *shared_pb;
    const auto samples = p.samples;
    emit_all(ctx, group, emit, prep, json::object(), [&](double eps, RandomSource& rng) {
      const std::size_t evals_before = pb.score_evaluations();
      Timed t;
      auto t1 = Clock::now();
      SeededRandom sampler(derive_seed(group.seed, 7));  // sampling is post-processing
      baselines::PrivBayesNetwork net;
      baselines::WeightedPoints wp;  // M synthetic points of weight 1 / M
      wp.points = pb.fit(eps, &rng, &net).sample(samples, sampler);
      wp.weights.assign(samples, 1.0 / static_cast<double>(samples));
      t.noise_seconds = since(t1);  // network + noisy conditionals + sampling
      t1 = Clock::now();
      t.dens = wp.evaluate(ctx.queries, ctx.kernel);
      t.query_seconds = since(t1);
      t.details["conditional_noise_scale"] = pb.conditional_noise_scale(eps);
      t.details["network_order"] = net.order;
      t.details["network_parents"] = net.parents;
      t.details["scores_computed"] = pb.score_evaluations() - evals_before;  // the rest were shared
      return t;
    });
  }

 private:
  SharedWork<const baselines::PrivBayes> cache_;
};

// MST and AIM (McKenna et al. 2021, 2022; baselines/mst.hpp, aim.hpp) behind the synthetic-data
// interface, as PrivBayes above: one private fit per cell on the clipped training rows in the box
// [lower, upper]^d, then `samples` synthetic rows of weight 1 / samples whose KDE is the release
// (sampling is post-processing). rho-zCDP stated as (epsilon, delta)-DP; the generator's privacy
// record (budget split, rho, delta) goes into each record.
struct SyntheticKdeParams {
  DomainParams domain;
  baselines::SyntheticOptions options;  // the generator's hyperparameters
  std::size_t samples = 0;
  double delta = 0;
  std::string check() const { return check_domain_and_delta(domain, delta); }
  // The table of a method whose generator takes `hyperparameters` (synthetic_params.hpp).
  static ParamTable<SyntheticKdeParams> table(const std::string& generator, const std::vector<ParamSpec>& hyperparameters) {
    using P = SyntheticKdeParams;
    return ParamTable<P>()
        .add(&P::domain, DomainParams::table())
        .add(&P::options, synthetic_table(generator, hyperparameters))
        .add(&P::samples, "samples", K::PositiveInt, 100000, "M synthetic points")
        .add(&P::delta, "delta", K::PositiveNumber, 1e-9, "delta of (epsilon, delta)-DP from rho-zCDP (the AIM paper's 1e-9)");
  }
};

class SyntheticKdeMethod final : public BaselineMethod<SyntheticKdeParams> {
 public:
  SyntheticKdeMethod(std::string generator, const std::vector<ParamSpec>& hyperparameters)
      : generator_(std::move(generator)), table_(SyntheticKdeParams::table(generator_, hyperparameters)) {}
  std::string name() const override { return generator_; }
  void run_cells(const KdeContext& ctx, const SyntheticKdeParams& p, const CellGroup& group, const Emit& emit) const override {
    const baselines::SyntheticOptions& options = p.options;
    const baselines::Domain dom = p.domain.domain();
    const auto box = baselines::TableBox::uniform(static_cast<std::size_t>(ctx.train.cols()), dom.lower, dom.upper);
    const auto samples = p.samples;
    const double delta = p.delta;
    emit_all(ctx, group, emit, 0.0, json::object(), [&](double eps, RandomSource& rng) {
      Timed t;
      auto t1 = Clock::now();
      const auto gen = baselines::make_synthetic_generator(generator_, options);
      try {
        gen->fit(ctx.train, box, {eps, delta}, rng);
      } catch (const UsageError& e) {
        // An epsilon whose noise the exact sampler cannot draw (sigma above 10^7 counts) is
        // refused for that cell only: metrics NaN, the reason recorded.
        t.dens.assign(static_cast<std::size_t>(ctx.queries.rows()), std::numeric_limits<double>::quiet_NaN());
        t.details["refused"] = e.what();
        return t;
      }
      baselines::WeightedPoints wp;  // M synthetic points of weight 1 / M
      wp.points = gen->sample(samples, derive_seed(group.seed, 7));  // post-processing
      wp.weights.assign(samples, 1.0 / static_cast<double>(samples));
      t.noise_seconds = since(t1);  // selection + measurements + estimation + sampling
      t1 = Clock::now();
      t.dens = wp.evaluate(ctx.queries, ctx.kernel);
      t.query_seconds = since(t1);
      t.details["privacy"] = gen->privacy_record();
      return t;
    });
  }

 private:
  const ParamTable<SyntheticKdeParams>& param_table() const override { return table_; }
  std::string generator_;
  ParamTable<SyntheticKdeParams> table_;
};

}  // namespace

void register_kde_baselines(Registry& registry) {
  registry.add_method(std::make_unique<BernsteinMethod>());
  registry.add_method(std::make_unique<KmeMethod>());
  registry.add_method(std::make_unique<SpectralMethod>());
  registry.add_method(std::make_unique<PfdaMethod>());
  registry.add_method(std::make_unique<HistogramMethod>());
  registry.add_method(std::make_unique<PrivBayesMethod>());
  registry.add_method(std::make_unique<SyntheticKdeMethod>(
      "mst", std::vector<ParamSpec>{{"bins", K::PositiveInt, 16, {}, "equal-width bins per attribute"},
                                    {"iterations", K::PositiveInt, 1000, {}, "Private-PGM iterations"},
                                    {"neighbors", K::String, "add-remove", {"add-remove", "replace"}, "neighbouring relation"}}));
  registry.add_method(std::make_unique<SyntheticKdeMethod>(
      "aim", std::vector<ParamSpec>{{"bins", K::PositiveInt, 16, {}, "equal-width bins per attribute"},
                                    {"degree", K::PositiveInt, 3, {}, "workload: every marginal of this many attributes (the paper's 3)"},
                                    {"max_cells", K::PositiveNumber, double(1 << 20), {}, "model size bound in junction-tree cells"},
                                    {"round_iterations", K::PositiveInt, 100, {}, "Private-PGM iterations after each round"},
                                    {"final_iterations", K::PositiveInt, 1000, {}, "Private-PGM iterations for the released model"},
                                    {"neighbors", K::String, "add-remove", {"add-remove", "replace"}, "neighbouring relation"}}));
}

}  // namespace privrace::experiments
