#pragma once
// Differentially private synthetic-data generators behind one interface: DP-Copula
// (dp_copula.hpp), PrivBayes (privbayes.hpp) and DP-WGAN (dp_wgan.hpp).
//
// A generator is fitted ONCE to a table under a privacy budget; the fitted model is the
// release. Sampling synthetic tables from it, of any size and any number of them, is
// post-processing and spends nothing more. Every task is then answered on the synthetic rows.
//
// Neighbouring tables: DP-Copula and PrivBayes normalise by the number of rows n (Kendall's
// tau, the noisy frequencies), so n is public and neighbours REPLACE one record, as in their
// papers. DP-WGAN's accountant (the Poisson-subsampled Gaussian mechanism, Mironov, Talwar &
// Zhang 2019) is stated for neighbours that add or remove one record. Each record says which.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"

namespace privrace::baselines {

// The public box the table is declared to lie in, one interval per column. Records are
// clipped into it (a per-record map: no privacy cost); synthetic rows always lie inside it.
struct TableBox {
  std::vector<double> lo, hi;

  static TableBox uniform(std::size_t columns, double lo, double hi);
  std::size_t dim() const { return lo.size(); }
  // UsageError naming the column when the box does not have `columns` finite intervals lo < hi.
  void check(std::size_t columns) const;
  double to_unit(std::size_t j, double v) const;  // clipped into [0, 1]
  double from_unit(std::size_t j, double t) const { return lo[j] + t * (hi[j] - lo[j]); }
  nlohmann::json to_json() const;
};

struct SyntheticPrivacy {
  double epsilon = 1.0;
  double delta = 0.0;  // (epsilon, delta)-DP generators (DP-WGAN); the pure ones require 0
};

class SyntheticGenerator {
 public:
  virtual ~SyntheticGenerator() = default;
  virtual std::string name() const = 0;
  // Fits the private model. Every random choice that touches the data draws from `noise`: a
  // SeededRandom in experiments (reproducible, recorded as not fit for release) or a
  // CryptoRandom for a release. Throws UsageError for bad settings (epsilon <= 0, delta out of
  // range, table and box of different widths, an empty table).
  virtual void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) = 0;
  // `rows` synthetic records (rows > 0; UsageError otherwise), inside the box; the same seed
  // gives the same table. Throws UsageError before fit.
  virtual DoubleMatrix sample(std::size_t rows, std::uint64_t seed) const = 0;
  // What was released and how the budget was spent: {"generator", "epsilon", "delta",
  // "neighbors", "budget_split": {...}, noise scales, ...}.
  virtual nlohmann::json privacy_record() const = 0;
};

// UsageError for a synthetic size of 0 (shared by every generator).
void check_synthetic_rows(std::size_t rows, const std::string& generator);
// UsageError unless epsilon > 0 is finite and (delta_allowed ? 0 < delta < 1 : delta == 0).
void check_synthetic_privacy(const SyntheticPrivacy& privacy, bool delta_required, const std::string& generator);

// make_synthetic_generator (by name, with typed options): synthetic_generators.hpp.

}  // namespace privrace::baselines
