#include "privrace/baselines/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "privrace/baselines/synthetic_generators.hpp"
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

std::unique_ptr<SyntheticGenerator> make_synthetic_generator(const std::string& name, const SyntheticOptions& options) {
  if (name == "dp_copula") return std::make_unique<DpCopula>(options.dp_copula);
  if (name == "privbayes") return std::make_unique<PrivBayesGenerator>(options.privbayes);
  if (name == "dp_wgan") return std::make_unique<DpWgan>(options.dp_wgan);
  if (name == "mst") return std::make_unique<MstGenerator>(options.mst);
  if (name == "aim") return std::make_unique<AimGenerator>(options.aim);
  throw UsageError("synthetic data: unknown generator '" + name + "'; expected dp_copula, privbayes, dp_wgan, mst or aim");
}

}  // namespace privrace::baselines
