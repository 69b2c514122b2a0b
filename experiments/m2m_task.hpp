#pragma once
// The M2M task family (Houssiau et al., section 4; Figure 3, Figure 4, Table 1).
//
// analysis = "statistics" (Figure 3 / Table 1): one released feature-map sketch of the whole
// table answers five tasks per cell: the mean and the second moment of each attribute (MRE),
// the CDF of each attribute at 10 equispaced points (EMD), the covariance matrix with the M2M
// means (Frobenius distance) and seeded random counting queries (MAE of the answered fraction).
// analysis = "logistic" (Figure 4): the sketch of the training rows (features + the 0/1 label as
// the last attribute) trains a logistic regression by implicit M2M; AUC on a held-out test set.
//
// Methods: m2m_rff, m2m_race, m2m_hist (private sketches, one build per group, noise per
// epsilon), m2m_nonprivate (the same maps at eps = inf, Table 1's first row), dp_erm (objective
// perturbation, Figure 4) and logistic_nonprivate (the non-private truth of Figure 4).
//
// SYNTHETIC-DATA METHODS (DP-Copula, PrivBayes, DP-WGAN, ...). A method of this task that
// releases a synthetic table derives from TypedMethod<M2mContext> and, in run, for each
// cell: fit its generator on `context.sketch_rows` with the cell's epsilon and noise seed,
// sample a table with the same columns (statistics: every attribute of sketch_rows, in the unit
// box; logistic: the features then the 0/1 label as the last column, like sketch_rows), and emit
//     evaluate_synthetic(context, synthetic_rows)
// (plus its own build_seconds and details). evaluate_synthetic computes every metric of the cell
// exactly as the sketch methods are scored: the statistics as empirical averages over the
// synthetic rows (the paper's "empirical average of the functions f on the synthetic data"), and
// for the logistic analysis a logistic regression trained on the synthetic rows, AUC on the
// held-out test rows, AUC = 0.5 when the synthetic table has a single class (as the paper does).
#include "experiment.hpp"
#include "privrace/tasks/m2m.hpp"

namespace privrace::experiments {

struct M2mContext : TaskContext {
  std::string analysis;        // "statistics" | "logistic"
  DenseMatrix sketch_rows;     // the rows the sketch (or a generator) sees, in the unit box
  BoxDomain domain;            // M2M's psi: the unit box ({0, 1} for the label column)
  std::size_t samples = 100000;  // n_s
  double logistic_l2 = 1e-4;   // ridge term of every logistic fit (implicit M2M, synthetic data)

  // statistics: the exact answers on sketch_rows
  Eigen::VectorXd true_mean, true_moment2;
  DoubleMatrix cdf_at;         // d x 10 CDF points
  DoubleMatrix true_cdf;       // d x 10
  Eigen::MatrixXd true_cov;    // with the true means
  std::vector<CountingQuery> queries;
  Eigen::VectorXd true_counts;  // fraction of records in each query's set

  // logistic: held-out rows (features only) and their 0/1 labels; dp_erm's inputs
  DenseMatrix test_x;
  std::vector<int> test_y;
  DoubleMatrix train_lr, test_lr;  // [2x - 1, 1] / sqrt(d + 1): every row has norm <= 1
  Eigen::VectorXd train_pm;        // labels in {-1, +1}
};

// Every metric of the task for a weighted sample: the statistics as sum_i omega_i f(x_i) over
// `rows`, or (logistic) the AUC of the weighted logistic regression on `rows`.
// `masks`, when given, holds these rows' memberships in the context's counting queries (rows
// that several cells reweight): the same counts without testing the predicates again.
CellResult evaluate_weighted(const M2mContext& context, const DoubleMatrix& rows, const Eigen::VectorXd& omega,
                             const CountingMasks* masks = nullptr);
// A synthetic table (see above): omega_i = 1 / rows; a table with one class gets AUC 0.5.
CellResult evaluate_synthetic(const M2mContext& context, const DoubleMatrix& synthetic_rows);

// Task m2m; methods m2m_rff, m2m_race, m2m_hist, m2m_nonprivate, dp_erm, logistic_nonprivate.
void register_m2m_task(Registry& registry);

}  // namespace privrace::experiments
