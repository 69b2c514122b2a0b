// Synthetic-data baselines of the M2M experiments (Houssiau et al., section 4: "for each SDG and
// epsilon, we generate 10 synthetic datasets ... and perform the tasks of interest on the
// synthetic data"): DP-Copula, PrivBayes and DP-WGAN (baselines/synthetic.hpp) as methods of
// the m2m task, for both analyses (statistics: Figure 3; logistic: Figure 4).
//
// One cell = one private fit of the generator on the task's rows (context.sketch_rows, in the
// unit box, the label as the last column in the logistic analysis) with the cell's epsilon and
// noise seed, then `datasets` synthetic tables (default 10, the paper's count) sampled from it,
// every task evaluated on each (evaluate_synthetic: the same metrics as the sketches), and the
// cell's metrics the average over the tables (each table's metrics are in the details).
// Sampling is post-processing, so the tables share the one fit's budget; the repetitions of the
// config give independent fits. Binary columns (the label) are rounded to the nearer of their
// two values (post-processing). Records carry each method's (epsilon, delta) and its budget
// split (the generator's privacy record); DP-WGAN is (epsilon, 1e-5)-DP, MST and AIM
// (epsilon, 1e-9)-DP, the others epsilon-DP.
//
// Registry names: dp_copula, privbayes_m2m (the name `privbayes` is the KDE method; configs
// label this one "PrivBayes"), dp_wgan, mst_m2m and aim_m2m (MST and AIM, rho-zCDP stated as
// (epsilon, delta)-DP with delta = 1e-9 by default).
#include "m2m_synthetic.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "m2m_task.hpp"
#include "shared_work.hpp"
#include "synthetic_params.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"

namespace privrace::experiments {
namespace {

using K = ParamSpec::Kind;


// The generator's hyperparameters, then how many tables of how many rows, then (approximate
// DP generators) delta.
struct SyntheticM2mParams {
  baselines::SyntheticOptions options;
  std::size_t datasets = 0, synthetic_rows = 0;
  double delta = 0.0;  // pure-DP generators: no delta parameter, 0
  // Options a generator does not take keep the library's defaults, which pass.
  std::string check() const {
    if (!(delta < 1)) return "delta must be in (0, 1)";
    if (!(options.dp_copula.marginal_ratio > 0)) return "marginal_ratio must be positive";
    if (!(options.privbayes.beta < 1)) return "beta must be below 1";
    return {};
  }
  // The table of a method whose generator takes `hyperparameters`; `approximate`: with delta.
  static ParamTable<SyntheticM2mParams> table(const std::string& generator, const std::vector<ParamSpec>& hyperparameters,
                                              bool approximate, double default_delta, const std::string& delta_help) {
    using P = SyntheticM2mParams;
    ParamTable<P> t;
    t.add(&P::options, synthetic_table(generator, hyperparameters))
        .add(&P::datasets, "datasets", K::PositiveInt, 10, "synthetic tables sampled from each fit (the paper's 10 per epsilon)")
        .add(&P::synthetic_rows, "synthetic_rows", K::NonNegativeInt, 0, "rows per synthetic table (0 = as many as the real table)");
    if (approximate) t.add(&P::delta, "delta", K::PositiveNumber, default_delta, delta_help);
    return t;
  }
};

class SyntheticM2mMethod final : public TypedMethod<M2mContext, SyntheticM2mParams> {
 public:
  SyntheticM2mMethod(std::string name, std::string generator, const std::vector<ParamSpec>& hyperparameters, bool approximate,
                     double default_delta = 1e-5, const std::string& delta_help = "delta of (epsilon, delta)-DP (the paper's 1e-5)")
      : name_(std::move(name)),
        generator_(std::move(generator)),
        table_(SyntheticM2mParams::table(generator_, hyperparameters, approximate, default_delta, delta_help)) {}
  std::string name() const override { return name_; }
  std::string task() const override { return "m2m"; }

  void run(const M2mContext& ctx, const SyntheticM2mParams& p, const CellGroup& group, const Emit& emit) const override {
    baselines::SyntheticOptions options = p.options;
    // One torch thread whatever the run's threads: libtorch's sums depend on its thread count,
    // and one thread keeps the records the same under any --threads and --jobs; the networks are
    // small enough that a second thread saved 5% of a cell (docs/experiments.md, "Jobs").
    options.dp_wgan.threads = 1;
    const baselines::TableBox box{ctx.domain.lo, ctx.domain.hi};
    // DP-Copula's exact concordances depend on the table only: shared work, counted once for
    // every cell and repetition of the run.
    if (generator_ == "dp_copula")
      options.dp_copula.concordances =
          concordances_.get(ctx, json::object(), [&] { return baselines::exact_concordances(ctx.sketch_rows, box); }).first;
    const auto tables = p.datasets;
    const auto rows_wanted = p.synthetic_rows;
    const std::size_t rows = rows_wanted > 0 ? rows_wanted : static_cast<std::size_t>(ctx.sketch_rows.rows());
    const double delta = p.delta;
    for (std::size_t i = 0; i < group.cells.size(); ++i) {
      const PendingCell& cell = group.cells[i];
      const auto gen = baselines::make_synthetic_generator(generator_, options);
      SeededRandom noise(cell.noise_seed);  // experiments: reproducible noise, not fit for release
      const auto t0 = std::chrono::steady_clock::now();
      try {
        gen->fit(ctx.sketch_rows, box, {cell.epsilon, delta}, noise);
      } catch (const UsageError& e) {
        // DP-WGAN: an epsilon no noise multiplier in the search range reaches. Recorded as
        // refused (NaN metrics, the reason in the details), not skipped and not fatal.
        if (std::string(e.what()).find("too small for any noise multiplier") == std::string::npos) throw;
        CellResult r = evaluate_synthetic(ctx, ctx.sketch_rows.cast<double>().topRows(1));
        for (auto& [k, v] : r.metrics.items()) v = std::numeric_limits<double>::quiet_NaN();
        r.details = {{"generator", generator_}, {"epsilon", cell.epsilon}, {"delta", delta}, {"refused", e.what()}};
        emit(i, std::move(r));
        continue;
      }
      const double fit_seconds = seconds_since(t0);
      json per_table = json::array();
      json sums = json::object();
      std::map<std::string, std::size_t> counted;
      double sample_seconds = 0, eval_seconds = 0;
      std::size_t single_class = 0;
      for (std::size_t t = 0; t < tables; ++t) {
        const auto t1 = std::chrono::steady_clock::now();
        DoubleMatrix syn = gen->sample(rows, derive_seed(cell.noise_seed, 0x5EED + t));
        for (std::size_t j = 0; j < ctx.domain.dim(); ++j)
          if (ctx.domain.is_binary(j)) {
            const double lo = ctx.domain.lo[j], hi = ctx.domain.hi[j];
            for (Eigen::Index r = 0; r < syn.rows(); ++r)
              syn(r, static_cast<Eigen::Index>(j)) = syn(r, static_cast<Eigen::Index>(j)) > 0.5 * (lo + hi) ? hi : lo;
          }
        sample_seconds += seconds_since(t1);
        const auto t2 = std::chrono::steady_clock::now();
        const CellResult one = evaluate_synthetic(ctx, syn);
        eval_seconds += seconds_since(t2);
        if (one.details.contains("single_class")) ++single_class;
        per_table.push_back(one.metrics);
        for (const auto& [k, v] : one.metrics.items()) {
          if (!v.is_number() || !std::isfinite(v.get<double>())) continue;
          sums[k] = sums.value(k, 0.0) + v.get<double>();
          ++counted[k];
        }
      }
      CellResult r;
      r.metrics = per_table.front();  // keys of the task (NaN for the other analysis)
      for (auto& [k, v] : r.metrics.items())
        v = counted[k] == tables ? sums[k].get<double>() / static_cast<double>(tables) : std::numeric_limits<double>::quiet_NaN();
      r.build_seconds = fit_seconds;
      r.query_seconds_per_query = (sample_seconds + eval_seconds) / static_cast<double>(tables);
      r.details["generator"] = generator_;
      r.details["epsilon"] = cell.epsilon;
      r.details["delta"] = delta;
      r.details["privacy"] = gen->privacy_record();
      r.details["synthetic_tables"] = tables;
      r.details["synthetic_rows"] = rows;
      r.details["per_table_metrics"] = per_table;
      r.details["single_class_tables"] = single_class;
      r.details["fit_seconds"] = fit_seconds;
      r.details["sample_seconds"] = sample_seconds;
      r.details["noise_seeded"] = true;
      emit(i, std::move(r));
    }
  }

 private:
  const ParamTable<SyntheticM2mParams>& param_table() const override { return table_; }
  std::string name_, generator_;
  ParamTable<SyntheticM2mParams> table_;
  SharedWork<const baselines::ExactConcordances> concordances_;
};

}  // namespace

void register_m2m_synthetic(Registry& registry) {
  registry.add_method(std::make_unique<SyntheticM2mMethod>(
      "dp_copula", "dp_copula",
      std::vector<ParamSpec>{{"bins", K::PositiveInt, 100, {}, "equal-width bins per attribute for the noisy marginals"},
                             {"marginal_ratio", K::PositiveNumber, 8.0, {}, "k = eps1 / eps2 (marginals / correlations)"}},
      false));
  registry.add_method(std::make_unique<SyntheticM2mMethod>(
      "privbayes_m2m", "privbayes",
      std::vector<ParamSpec>{{"degree", K::PositiveInt, 2, {}, "network degree k (the paper's D)"},
                             {"bins", K::PositiveInt, 16, {}, "equal-width bins per attribute"},
                             {"beta", K::PositiveNumber, 0.3, {}, "share of epsilon for the network"}},
      false));
  registry.add_method(std::make_unique<SyntheticM2mMethod>(
      "dp_wgan", "dp_wgan",
      std::vector<ParamSpec>{{"generator_steps", K::PositiveInt, 1000, {}, "generator updates"},
                             {"critic_steps", K::PositiveInt, 5, {}, "DP-SGD critic updates per generator update"},
                             {"batch", K::PositiveInt, 256, {}, "expected Poisson batch size (q = batch / n)"},
                             {"hidden", K::PositiveInt, 64, {}, "units per hidden layer"},
                             {"latent", K::PositiveInt, 16, {}, "generator input dimension"},
                             {"clip", K::PositiveNumber, 1.0, {}, "per-example L2 clipping norm C"},
                             {"learning_rate", K::PositiveNumber, 5e-4, {}, "Adam step size"},
                             {"weight_clip", K::PositiveNumber, 0.1, {}, "critic weight clipping (WGAN)"}},
      true));
  // MST and AIM: rho-zCDP converted to (epsilon, delta); delta 1e-9 as in the AIM paper's experiments.
  registry.add_method(std::make_unique<SyntheticM2mMethod>(
      "mst_m2m", "mst",
      std::vector<ParamSpec>{{"bins", K::PositiveInt, 16, {}, "equal-width bins per attribute (the paper compresses domains)"},
                             {"iterations", K::PositiveInt, 1000, {}, "Private-PGM iterations"},
                             {"neighbors", K::String, "add-remove", {"add-remove", "replace"}, "neighbouring relation"}},
      true, 1e-9, "delta of (epsilon, delta)-DP from rho-zCDP (1e-9, as the AIM paper's experiments)"));
  registry.add_method(std::make_unique<SyntheticM2mMethod>(
      "aim_m2m", "aim",
      std::vector<ParamSpec>{{"bins", K::PositiveInt, 16, {}, "equal-width bins per attribute (the paper compresses domains)"},
                             {"degree", K::PositiveInt, 3, {}, "workload: every marginal of this many attributes (the paper's 3)"},
                             {"max_cells", K::PositiveNumber, double(1 << 20), {}, "model size bound in junction-tree cells"},
                             {"round_iterations", K::PositiveInt, 100, {}, "Private-PGM iterations after each round"},
                             {"final_iterations", K::PositiveInt, 1000, {}, "Private-PGM iterations for the released model"},
                             {"neighbors", K::String, "add-remove", {"add-remove", "replace"}, "neighbouring relation"}},
      true, 1e-9, "delta of (epsilon, delta)-DP from rho-zCDP (1e-9, as the AIM paper's experiments)"));
}

}  // namespace privrace::experiments
