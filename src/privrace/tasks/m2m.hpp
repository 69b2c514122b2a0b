#pragma once
// The moment-to-moment (M2M) method: Houssiau, Schellekens, Chatalic, Annamraju & de Montjoye,
// "M2M: a general method to perform various data analysis tasks from a differentially
// private sketch" (sections 3.2-3.5, Appendix B Algorithm 1).
//
// Input: a released feature-map sketch (Phi, z-hat = (sum Phi(x_i) + xi) / (n + zeta), n + zeta)
// and a box domain: the one the sketch records (HIST), or the analyst's (RFF and RACE record none). Everything here is post-processing of the release:
// it reads no data and spends no budget.
//
// Algorithm 1. Draw n_s synthetic points x~ uniformly on the box (psi = Unif(domain), seeded,
// public), and fit the ridge regression of F = f(x~) on P = Phi(x~):
//   a = S (1/n_s) P^T F,   S = (P^T P / n_s + lambda I)^{-1},
//   lambda = sigma_xi^2 / (n + zeta) * R    (eq. 5; sigma_xi^2 the release's noise variance per
//                                            feature, R = 1 in the paper; tiny at eps = inf)
// and answer f-bar ~ <a, z-hat>. Since <a, z-hat> = (1/n_s) sum_i w_i f(x~_i) with
//   w_i = Phi(x~_i)^T S z-hat         (the implicit-M2M weights of section 3.5),
// one factorisation and ONE solve S z-hat give every target f as a weighted average over the
// synthetic points; `coefficients` gives the explicit a for the same factorisation.
//
// Options (post-processing too; docs/privacy-tasks.md, "M2M: the intercept and the choice of lambda"):
// * intercept: an unpenalised constant feature whose sketch value is exactly 1 (the targets
//   are averages, and the average of 1 is 1). The ridge then runs on the centred design,
//   a = (C + lambda I)^{-1} (P - 1 mu^T)^T F / n_s with C = P^T P / n_s - mu mu^T,
//   mu = P^T 1 / n_s, and f-hat = mean(F) + <a, z-hat - mu>; so w_i = 1 + (Phi(x~_i) - mu)^T S
//   (z-hat - mu) and the weights average to exactly 1.
// * lambda_rule AutoNoise: lambda = sigma_e^2 / s with sigma_e^2 = sigma_xi^2 / (n + zeta)^2 and
//   s = max(1 / (n + zeta), (||r||^2 - m sigma_e^2) / tr(G)), the prior scale of the signal
//   matched to the release (r = z-hat - mu and G = C with the intercept; z-hat and P^T P / n_s
//   without). Never above eq. (5); equal to it when the data look like draws from psi.
//
// Cost. P (n_s x m) is never materialised: P^T P is accumulated over fixed chunks of synthetic
// points. Dense maps (RFF): one GEMM per chunk and tile of P^T P. One-hot maps (RACE, HIST:
// Phi(x) has one 1 in each of k blocks of width m / k): P^T P is a sum of outer products of
// index sets, so it is accumulated as co-occurrence counts, block pair by block pair (a W x W
// block stays in cache). The lower triangle only; memory m^2 doubles, factorised in place by a
// blocked parallel Cholesky. Everything is deterministic and independent of the thread count:
// chunks are fixed, each chunk has its own seeded stream, each output tile is written by one
// thread in a fixed order.
#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/sketch/feature_sketch.hpp"

namespace privrace {

// "LO:HI" -> {lo, hi}, as `privrace m2m --domain` takes it: parse_box_domain's one interval
// (two finite numbers with LO < HI), else a UsageError that quotes `what` and the text.
std::pair<double, double> parse_domain_interval(const std::string& text, const std::string& what = "--domain");

// The analyst's a-priori domain: a box, each attribute uniform on [lo, hi], or (binary) on {lo, hi}.
struct BoxDomain {
  std::vector<double> lo, hi;
  std::vector<bool> binary;  // empty = all continuous

  static BoxDomain uniform(std::size_t dim, double lo, double hi);
  std::size_t dim() const { return lo.size(); }
  bool is_binary(std::size_t j) const { return j < binary.size() && binary[j]; }
  // UsageError naming the attribute when lo >= hi (or not finite) or the sizes differ.
  void check() const;
  nlohmann::json to_json() const;
};

// How the ridge system (A + lambda I) x = r is solved (A = P^T P / n_s, or C with the intercept).
// Cholesky: one factorisation per release. ConjugateGradient: iterations of one product with the
// shared A each, to a residual of kRidgeCgTolerance; a release whose lambda is large against A's
// spectrum needs few. Automatic: conjugate gradients where their bound on the iterations costs
// less than a factorisation (m2m_cg_affordable), else Cholesky. The two agree to rounding
// (tests/tasks/test_m2m.cpp derives the tolerance).
enum class M2mRidgeSolver { Automatic, Cholesky, ConjugateGradient };
// Relative residual ||r|| / ||b|| at which conjugate gradients stop.
inline constexpr double kRidgeCgTolerance = 1e-14;

// How lambda is chosen for a private release (eq. 5 is the paper's; see the options above).
enum class M2mLambdaRule { Eq5, AutoNoise };
std::string to_string(M2mLambdaRule rule);    // "eq5" | "auto-noise"
M2mLambdaRule parse_m2m_lambda_rule(const std::string& text);  // UsageError naming the text

struct M2mOptions {
  // Empty (no attributes): the domain the sketch records. HIST records its histograms' domain
  // (family.lo / family.hi), and only that domain is accepted; RFF and RACE record none (their
  // features are bounded for any record), so they need one. See m2m_domain.
  BoxDomain domain;
  std::size_t samples = 100000;       // n_s
  std::uint64_t seed = 0x4d324d;      // synthetic points (public, data-independent)
  double extra_regularization = 1.0;  // R of Algorithm 1
  double nonprivate_lambda = 1e-9;    // lambda when the release is not private (the paper's value)
  int threads = 0;                    // 0 = OpenMP default
  bool intercept = false;             // an unpenalised constant feature with sketch value 1
  M2mLambdaRule lambda_rule = M2mLambdaRule::Eq5;
  M2mRidgeSolver ridge_solver = M2mRidgeSolver::Automatic;
  // answer_m2m only: answer a task the feature map cannot identify (m2m_unsupported_reason)
  // instead of refusing it; the answer then carries a warning.
  bool allow_unsupported = false;
  // How refusals name the options (the command line's; the Python module passes its own).
  std::string domain_option = "--domain";
  std::string allow_option = "--allow-unsupported";
};

// The domain a sketch's feature map records: HIST's per-attribute [family.lo, family.hi]; none
// for RFF and RACE.
std::optional<BoxDomain> m2m_recorded_domain(const FeatureMap& map);
// The domain M2M fits on: options.domain, or the recorded one when options.domain is empty.
// UsageError when the map records a domain and options.domain differs from it (naming both),
// or when neither gives one.
BoxDomain m2m_domain(const FeatureMap& map, const M2mOptions& options);

// Synthetic points are generated in chunks of this many rows, chunk c from its own stream
// derive_seed(seed, c): the same points for any thread count.
inline constexpr std::size_t kM2mChunk = 2048;
// One-hot maps count co-occurrences over this many points at a time (their indices only).
inline constexpr std::size_t kGramChunk = 16 * kM2mChunk;

// Row block [first, first + rows) of the n_s synthetic points (float, as the feature maps read).
void m2m_synthetic_chunk(const BoxDomain& domain, std::uint64_t seed, std::size_t chunk, std::size_t rows,
                         DenseMatrix& out);

// What M2M fits that does not depend on the release's noise: the synthetic points and
// P^T P / n_s (lower triangle). A group of releases of one map (one per epsilon) shares it.
class M2mDesign {
 public:
  // The domain is m2m_domain(map, options) (options().domain holds it). UsageError when the
  // domain's dimension differs from the map's input dimension, or n_s = 0.
  M2mDesign(std::shared_ptr<const FeatureMap> map, const M2mOptions& options);

  const FeatureMap& map() const { return *map_; }
  const std::shared_ptr<const FeatureMap>& map_ptr() const { return map_; }
  const M2mOptions& options() const { return options_; }
  std::size_t features() const { return m_; }
  std::size_t samples() const { return static_cast<std::size_t>(synthetic_.rows()); }
  const DenseMatrix& synthetic() const { return synthetic_; }
  const Eigen::MatrixXd& gram() const { return gram_; }  // P^T P / n_s, lower triangle valid
  // mu = P^T 1 / n_s, the synthetic mean of each feature (computed when options().intercept).
  const Eigen::VectorXd& feature_mean() const { return feature_mean_; }
  double gram_seconds() const { return gram_seconds_; }
  // max_i sum_j |(P^T P / n_s)_ij| >= its largest eigenvalue (Gershgorin), and so >= C's, C being
  // P^T P / n_s less a positive semi-definite term: kappa(A + lambda I) <= (bound + lambda) / lambda.
  double gram_norm_bound() const { return norm_bound_; }
  // (A + lambda I) v with A = P^T P / n_s, less mu mu^T with the intercept.
  Eigen::VectorXd ridge_product(const Eigen::VectorXd& v, double lambda) const;
  // Phi(x~_i)^T v for every synthetic point, chunk by chunk: from the dense map's features kept
  // since the Gram matrix was accumulated (when they fit in kM2mFeatureCacheBytes), else remade.
  Eigen::VectorXd apply(const Eigen::VectorXd& v) const;
  // P^T F / n_s (m x k) for F(i, k) = f_k(x~_i).
  Eigen::MatrixXd cross(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const;

 private:
  void accumulate_dense(Eigen::MatrixXd& gram);
  // Chunk c's features (rows c kM2mChunk ...): the kept copy, else made into `scratch`.
  const DoubleMatrix& chunk_features(std::size_t c, DoubleMatrix& scratch) const;
  void accumulate_one_hot(Eigen::MatrixXd& gram) const;

  std::shared_ptr<const FeatureMap> map_;
  M2mOptions options_;
  std::size_t m_ = 0, active_ = 0;
  bool block_structured_ = true;
  DenseMatrix synthetic_;
  Eigen::MatrixXd gram_;
  Eigen::VectorXd feature_mean_;
  // A dense map's features of every chunk, kept from the Gram's accumulation: the cells of a
  // repetition share the design, and each would remake them (a sine and a cosine an entry).
  std::vector<DoubleMatrix> kept_features_;
  double gram_seconds_ = 0, norm_bound_ = 0;
};

// The most memory M2mDesign keeps a dense map's features in (n_s x m doubles; 160 MB at n_s =
// 10^5 and m = 200); a larger design remakes them where they are needed.
inline constexpr double kM2mFeatureCacheBytes = 1024.0 * 1024.0 * 1024.0;

// Conjugate gradients on design.ridge_product(., lambda) x = b from x = 0: stops when the
// recurrence's residual is at most tol ||b||. Returns the iterations taken, or -1 when
// max_iterations did not get there.
int ridge_conjugate_gradient(const M2mDesign& design, double lambda, const Eigen::VectorXd& b, double tol,
                             int max_iterations, Eigen::VectorXd& x);
// Iterations after which conjugate gradients have cut the error's energy norm by `reduction` on
// any system of condition number <= kappa: ceil(ln(2 / reduction) / ln((sqrt(kappa) + 1) /
// (sqrt(kappa) - 1))) (the Chebyshev bound).
int cg_iteration_bound(double kappa, double reduction);
// Whether conjugate gradients are used for lambda under Automatic: the bound for a residual of
// kRidgeCgTolerance is at most m / 64 iterations. An iteration reads the m^2 / 2 stored entries
// once (memory bound, 2 m^2 flops), a factorisation does m^3 / 3 flops at matrix-product speed,
// about 8 times the product's rate here (bench_m2m BM_RidgeSolve): m / 64 iterations cost about
// a quarter of a factorisation.
bool m2m_cg_affordable(const M2mDesign& design, double lambda, int* bound = nullptr);

class M2mModel {
 public:
  // Fits (accumulate, factorise, solve S z-hat, weights). Throws UsageError when the domain's
  // dimension differs from the map's input dimension, or the release has no map or a sums vector
  // of the wrong length; InputError when the release's count or noise variance is not finite.
  M2mModel(const FeatureSketchRelease& release, const M2mOptions& options);
  // The same with a shared design (its map must be the release's map).
  M2mModel(std::shared_ptr<const M2mDesign> design, const FeatureSketchRelease& release);

  double lambda() const { return lambda_; }
  // The domain the model was fitted on (the sketch's recorded one when none was given).
  const BoxDomain& domain() const { return design_->options().domain; }
  double count_used() const { return count_used_; }  // n + zeta as used (estimator_count)
  // max(n + zeta, ||sums||_2 / max_x ||Phi(x)||_2, 1): the least count the release is consistent with (docs/privacy-tasks.md).
  static double estimator_count(const FeatureSketchRelease& release);
  std::size_t samples() const { return design_->samples(); }
  std::size_t features() const { return design_->features(); }
  const DenseMatrix& synthetic() const { return design_->synthetic(); }
  // x = S z-hat (S (z-hat - mu) with the intercept), the solution of the ridge system.
  const Eigen::VectorXd& solution() const { return solved_; }
  // "cholesky" or "cg" (M2mRidgeSolver), and the iterations taken by the latter.
  const std::string& solver() const { return solver_; }
  // w_i = Phi(x~_i)^T S z-hat, one per synthetic point.
  const Eigen::VectorXd& weights() const { return weights_; }
  // omega_i = w_i / n_s: f-hat = sum_i omega_i f(x~_i) for every target f.
  Eigen::VectorXd average_weights() const { return weights_ / static_cast<double>(samples()); }
  // f-hat for each column k of F (n_s x k, F(i, k) = f_k(x~_i)): (1/n_s) sum_i w_i F(i, k).
  Eigen::VectorXd estimate(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const;
  // The explicit ridge coefficients a = S P^T F / n_s (m x k) from the kept factorisation
  // (with the intercept: a = S (P - 1 mu^T)^T F / n_s).
  Eigen::MatrixXd coefficients(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const;
  // The unpenalised constant b = mean(F) - a^T mu per column (zero without the intercept):
  // f-hat = <a, z-hat> + b.
  Eigen::VectorXd intercepts(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const;
  bool intercept() const { return design_->options().intercept; }
  // The factor L of the solved system (lower triangle): L L^T = P^T P / n_s + lambda I, or
  // C + lambda I with the intercept. Made on first use where conjugate gradients solved it.
  const Eigen::MatrixXd& factor() const;
  // The lambda of a rule for a release on a design, from public quantities only (the release's
  // z-hat, count and noise variance; the design's P^T P / n_s and mu). No noise: nonprivate_lambda.
  static double choose_lambda(const M2mDesign& design, const FeatureSketchRelease& release);
  const Eigen::VectorXd& z_hat() const { return z_; }
  // Seconds of each stage and the sizes, for records and benchmarks.
  nlohmann::json describe() const;
  // Bytes of the solve's working memory: the m x m factor and one chunk of features
  // (a shared design holds one more m x m matrix).
  std::size_t solve_bytes() const;

 private:
  void fit(const FeatureSketchRelease& release);
  void factorise() const;

  std::shared_ptr<const M2mDesign> design_;
  double lambda_ = 0, count_used_ = 0;
  bool noisy_ = false;
  Eigen::VectorXd z_, solved_, weights_;
  mutable Eigen::MatrixXd factor_;  // lower triangle: the Cholesky factor L of P^T P / n_s + lambda I
  std::string solver_ = "cholesky";
  int cg_iterations_ = 0, cg_bound_ = 0;
  double factor_seconds_ = 0, weight_seconds_ = 0;
};

// In-place blocked Cholesky of the lower triangle of a (A = L L^T, L left in the lower
// triangle), the trailing updates in parallel tiles; deterministic for any thread count.
// Returns false when a pivot is not positive (the matrix is not numerically positive definite).
bool parallel_cholesky_lower(Eigen::MatrixXd& a);
// Solves L L^T x = b in place with the factor from parallel_cholesky_lower.
void cholesky_solve_lower(const Eigen::MatrixXd& l, Eigen::Ref<Eigen::MatrixXd> b);

// --------------------------------------------------------------------------------------
// The tasks of section 4, evaluated on a weighted sample: sum_i omega_i f(x_i). The truth is
// the data with omega_i = 1/n, M2M the synthetic points with M2mModel::average_weights(), a
// synthetic data set with omega_i = 1/n_synthetic. Columns are attributes.

// A predicate X_attribute <= value (less = true) or X_attribute >= value.
struct CountingPredicate {
  std::size_t attribute = 0;
  bool less = true;
  double value = 0;
};
// A conjunction of predicates on distinct attributes: section 4.2's queries have 3; a query of
// one predicate is a one-attribute (marginal) query.
struct CountingQuery {
  std::vector<CountingPredicate> predicates;
  std::string text() const;  // "i <= value; j >= value; k <= value" (0-based attributes)
  std::size_t attributes() const { return predicates.size(); }  // distinct, once checked
};
// n queries: 3 distinct attributes uniformly at random, each predicate <= or >= with
// probability 1/2, the threshold uniform on the attribute's domain interval. Seeded.
std::vector<CountingQuery> random_counting_queries(const BoxDomain& domain, std::size_t count, std::uint64_t seed);
// Parses "i op value; j op value; ..." (op is <= or >=; one or more predicates) per line (blank
// lines and lines starting with # are skipped). InputError naming the file, line and token when
// a line is malformed, an attribute is >= dim, or an attribute repeats within a query.
std::vector<CountingQuery> parse_counting_queries(const std::string& path, std::size_t dim);
void check_counting_query(const CountingQuery& q, std::size_t dim, const std::string& where);

using WeightedRows = Eigen::Ref<const DoubleMatrix>;

Eigen::VectorXd weighted_means(const WeightedRows& x, const Eigen::VectorXd& omega);
Eigen::VectorXd weighted_second_moments(const WeightedRows& x, const Eigen::VectorXd& omega);
// The 10 (or `points`) equispaced CDF points of attribute j: S_t = lo_j + t (hi_j - lo_j) / points,
// t = 1..points. Returns dim x points: row j holds sum_i omega_i 1{x_ij <= S_t}.
DoubleMatrix cdf_points(const BoxDomain& domain, std::size_t points = 10);
DoubleMatrix weighted_cdfs(const WeightedRows& x, const Eigen::VectorXd& omega, const DoubleMatrix& points);
// C_jk = sum_i omega_i (x_ij - mu_j)(x_ik - mu_k) with the given means (M2M: the M2M means).
Eigen::MatrixXd weighted_covariance(const WeightedRows& x, const Eigen::VectorXd& omega, const Eigen::VectorXd& means);
// Fraction of the (weighted) records in each query's set: sum_i omega_i 1{x_i in S}, each
// query's sum over the rows in order (through CountingMasks).
Eigen::VectorXd weighted_counts(const WeightedRows& x, const Eigen::VectorXd& omega,
                                const std::vector<CountingQuery>& queries);
// Every row's membership in every query's set, one bit each (n x queries / 8 bytes: 12.5 MB at
// 10^5 rows and 1000 queries), for rows that many weightings share (a repetition's synthetic
// points, reweighted in each of its cells); a three-predicate query's bits are made four rows a
// step with AVX2. weighted_counts(omega) sums eight queries at once,
// each over the rows in order (eight independent chains of additions instead of one at a time).
class CountingMasks {
 public:
  CountingMasks(const WeightedRows& x, const std::vector<CountingQuery>& queries);
  Eigen::VectorXd weighted_counts(const Eigen::VectorXd& omega) const;
  Eigen::Index rows() const { return n_; }

 private:
  Eigen::Index n_ = 0;
  std::size_t queries_ = 0;
  std::vector<std::uint8_t> bits_;  // queries 8b..8b+7 at row i: bit k of bits_[b * n + i]
};

// Metrics of section 4.
// (The mean relative error and the ROC AUC of the experiments are in experiments/metrics.hpp.)
// Earth-mover distance between two CDFs sampled at `points` equispaced points on an attribute's
// domain, in units of the domain width: (1/points) sum_t |F-hat(S_t) - F(S_t)| (the W1 distance
// between the two histograms of bin masses F(S_t) - F(S_{t-1}) when both have total mass 1),
// averaged over the attributes (rows).
double mean_cdf_emd(const DoubleMatrix& estimate, const DoubleMatrix& truth);
double frobenius_distance(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b);
double mean_absolute_error(const Eigen::VectorXd& a, const Eigen::VectorXd& b);

// --------------------------------------------------------------------------------------
// Implicit M2M (section 3.5): logistic regression with the weighted loss
//   min_theta (1/n) sum_i omega_i * n * l(y_i, theta . [x_i, 1]) + (l2 / 2) ||theta_x||^2
// over rows whose LAST column is the label in {0, 1} (weights may be negative: the ridge term
// keeps the objective bounded below). L-BFGS (NLopt LD_LBFGS); gradients summed over fixed
// chunks in order, so the result does not depend on the thread count.
struct WeightedLogisticResult {
  Eigen::VectorXd theta;  // d - 1 feature weights then the bias
  double objective = 0;
  int evaluations = 0;
  std::string status;
};
WeightedLogisticResult weighted_logistic_regression(const WeightedRows& rows, const Eigen::VectorXd& omega,
                                                    double l2, int max_evaluations = 500);
// theta . [x, 1] for each row of x (the features only).
Eigen::VectorXd logistic_scores(const WeightedRows& features, const Eigen::VectorXd& theta);

// --------------------------------------------------------------------------------------
// One task of section 4 against a released sketch, as numbers (`privrace m2m` parses its
// command line and prints them: src/cli/m2m_command.cpp).
enum class M2mTask { Mean, Moment2, Cdf, Cov, Count };
std::string to_string(M2mTask task);  // "mean" | "moment2" | "cdf" | "cov" | "count"
// The attributes a task needs: cov 2, the others 1.
std::size_t m2m_min_attributes(M2mTask task);

// Which tasks a feature map's features identify (docs/privacy-tasks.md, "M2M: the tasks each feature
// map supports"). RFF and RACE features are functions of all attributes together: every task.
// HIST holds one-dimensional marginals, which "cannot, by definition, be used to estimate
// correlations between attributes" (Houssiau et al., section 4.3): marginal tasks only (mean,
// moment2, cdf, one-attribute counting queries); cov (its off-diagonal entries) and counting
// queries over several attributes are joint. Returns "" when `task` (with `queries`) is
// supported, else the reason.
std::string m2m_unsupported_reason(const FeatureMap& map, M2mTask task, const std::vector<CountingQuery>& queries = {});
// "" when supported. When not: UsageError with the reason and options.allow_option, unless
// options.allow_unsupported, which returns the warning to show with the answer instead.
std::string check_m2m_task(const FeatureMap& map, M2mTask task, const std::vector<CountingQuery>& queries,
                           const M2mOptions& options);

struct M2mAnswer {
  M2mTask task = M2mTask::Mean;
  Eigen::VectorXd values;       // mean, moment2: one per attribute; count: the fraction of records per query
  DoubleMatrix cdf_points, cdf;  // cdf: attributes x points, F_j(S_t) at S_t = cdf_points(j, t)
  Eigen::MatrixXd cov;           // cov: with the M2M means
  double count_used = 0;         // n + zeta as the model used it (count = fraction * count_used)
  std::string warning;           // non-empty when an unsupported task was answered (allow_unsupported)
};
// Fits the M2M model of `release` on m2m_domain(map, options) and answers `task`. InputError
// when the release has no feature map or a query names a missing attribute; UsageError when the
// sketch has fewer attributes than the task needs, (count) there are no queries, the domain is
// refused (m2m_domain), or the map does not support the task (check_m2m_task).
M2mAnswer answer_m2m(const FeatureSketchRelease& release, M2mTask task, const M2mOptions& options,
                     const std::vector<CountingQuery>& queries = {}, std::size_t cdf_points = 10);

}  // namespace privrace
