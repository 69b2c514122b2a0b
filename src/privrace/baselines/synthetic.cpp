#include "privrace/baselines/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "privrace/baselines/aim.hpp"
#include "privrace/baselines/dp_copula.hpp"
#include "privrace/baselines/dp_wgan.hpp"
#include "privrace/baselines/mst.hpp"
#include "privrace/baselines/privbayes.hpp"
#include "privrace/core/error.hpp"

namespace privrace::baselines {

TableBox TableBox::uniform(std::size_t columns, double lo, double hi) {
  TableBox b;
  b.lo.assign(columns, lo);
  b.hi.assign(columns, hi);
  return b;
}

void TableBox::check(std::size_t columns) const {
  if (lo.size() != columns || hi.size() != columns)
    throw UsageError("synthetic data: the box has " + std::to_string(lo.size()) + " lower and " + std::to_string(hi.size()) +
                     " upper bounds for a table of " + std::to_string(columns) + " columns");
  for (std::size_t j = 0; j < columns; ++j)
    if (!(std::isfinite(lo[j]) && std::isfinite(hi[j]) && lo[j] < hi[j]))
      throw UsageError("synthetic data: column " + std::to_string(j) + " has the interval [" + std::to_string(lo[j]) + ", " +
                       std::to_string(hi[j]) + "]; expected finite bounds with lo < hi");
}

double TableBox::to_unit(std::size_t j, double v) const {
  const double t = (v - lo[j]) / (hi[j] - lo[j]);
  return std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
}

nlohmann::json TableBox::to_json() const { return {{"lo", lo}, {"hi", hi}}; }

void check_synthetic_rows(std::size_t rows, const std::string& generator) {
  if (rows == 0) throw UsageError(generator + ": requested synthetic size 0; expected at least 1 row");
}

void check_synthetic_privacy(const SyntheticPrivacy& privacy, bool delta_required, const std::string& generator) {
  if (!(privacy.epsilon > 0) || !std::isfinite(privacy.epsilon))
    throw UsageError(generator + ": epsilon " + std::to_string(privacy.epsilon) + " is invalid; expected a finite epsilon > 0");
  if (delta_required) {
    if (!(privacy.delta > 0 && privacy.delta < 1))
      throw UsageError(generator + ": delta " + std::to_string(privacy.delta) + " is outside (0, 1)");
  } else if (privacy.delta != 0) {
    throw UsageError(generator + ": delta " + std::to_string(privacy.delta) + " given, but " + generator +
                     " is epsilon-DP (expected delta = 0)");
  }
}

std::unique_ptr<SyntheticGenerator> make_synthetic_generator(const std::string& name, const nlohmann::json& params) {
  if (name == "dp_copula") {
    DpCopulaOptions o;
    o.bins = params.value("bins", o.bins);
    o.marginal_ratio = params.value("marginal_ratio", o.marginal_ratio);
    o.min_eigenvalue = params.value("min_eigenvalue", o.min_eigenvalue);
    return std::make_unique<DpCopula>(o);
  }
  if (name == "privbayes") {
    PrivBayesOptions o;
    o.degree = params.value("degree", o.degree);
    o.bins = params.value("bins", o.bins);
    o.beta = params.value("beta", o.beta);
    return std::make_unique<PrivBayesGenerator>(o);
  }
  if (name == "dp_wgan") {
    DpWganOptions o;
    o.latent = params.value("latent", o.latent);
    o.hidden = params.value("hidden", o.hidden);
    o.batch = params.value("batch", o.batch);
    o.generator_steps = params.value("generator_steps", o.generator_steps);
    o.critic_steps = params.value("critic_steps", o.critic_steps);
    o.clip = params.value("clip", o.clip);
    o.learning_rate = params.value("learning_rate", o.learning_rate);
    o.weight_clip = params.value("weight_clip", o.weight_clip);
    o.search.sigma_min = params.value("sigma_min", o.search.sigma_min);
    o.search.sigma_max = params.value("sigma_max", o.search.sigma_max);
    o.threads = params.value("threads", o.threads);
    return std::make_unique<DpWgan>(o);
  }
  if (name == "mst") {
    MstOptions o;
    o.bins = params.value("bins", o.bins);
    o.iterations = params.value("iterations", o.iterations);
    o.neighbors = params.value("neighbors", o.neighbors);
    o.max_cells = params.value("max_cells", o.max_cells);
    return std::make_unique<MstGenerator>(o);
  }
  if (name == "aim") {
    AimOptions o;
    o.bins = params.value("bins", o.bins);
    o.degree = params.value("degree", o.degree);
    if (params.contains("workload")) o.workload = params.at("workload").get<std::vector<std::vector<int>>>();
    o.max_cells = params.value("max_cells", o.max_cells);
    o.rounds_per_attribute = params.value("rounds_per_attribute", o.rounds_per_attribute);
    o.alpha = params.value("alpha", o.alpha);
    o.round_iterations = params.value("round_iterations", o.round_iterations);
    o.final_iterations = params.value("final_iterations", o.final_iterations);
    o.neighbors = params.value("neighbors", o.neighbors);
    return std::make_unique<AimGenerator>(o);
  }
  throw UsageError("synthetic data: unknown generator '" + name + "'; expected dp_copula, privbayes, dp_wgan, mst or aim");
}

}  // namespace privrace::baselines
