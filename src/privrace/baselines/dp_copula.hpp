#pragma once
// DP-Copula (Li, Xiong & Jiang, "DPCopula: Differentially Private Data Synthesization by
// Semi-parametric Gaussian Copulas", EDBT 2014), the Kendall's tau variant (their Algorithm 4):
// private 1-D marginals plus a private Gaussian-copula correlation matrix, then sampling.
//
// Neighbours replace one record; n is public (the paper's setting: tau and the empirical
// marginals are normalised by n).
//
// Budget split (the paper's Algorithm 4): epsilon = eps1 + eps2, with
//   eps1 = k / (1 + k) epsilon for the m marginal histograms, eps1 / m each,
//   eps2 = epsilon / (1 + k) for the m (m - 1) / 2 Kendall coefficients, eps2 / C(m, 2) each,
// k = eps1 / eps2 the paper's ratio parameter (`marginal_ratio`, default 8). Sequential
// composition over the m + C(m, 2) releases gives epsilon.
//
// Marginals. Column j is cut into `bins` equal-width bins over its declared interval; the
// count vector changes by at most 2 in L1 when one record is replaced (one count -1, one +1),
// so discrete Laplace noise of scale 2 m / eps1 on every count (exact sampler,
// mechanisms.hpp: the counts are integers) makes each histogram (eps1 / m)-DP. Negative noisy
// counts are set to 0, the histogram is normalised (post-processing; all-zero -> uniform), and
// values are uniform inside their bin: a piecewise-linear marginal CDF F_j.
//
// Correlation. For each pair (i, j) the released value is the integer
//   S_ij = sum_{a < b} sign(x_ai - x_bi) sign(x_aj - x_bj)   (concordant - discordant pairs),
// Kendall's tau-a = S / C(n, 2). Replacing record a changes only the n - 1 pairs containing
// it, each term by at most 2 (from -1 to +1): Delta(S) = 2 (n - 1), i.e. Delta(tau) = 4 / n
// (the paper states 4 / (n + 1); 4 / n is what replace-one gives with n public and is the
// larger, so never less noise). S gets exact discrete Laplace noise of scale
// 2 (n - 1) C(m, 2) / eps2: no real-valued Laplace anywhere in DP-Copula. Then
// rho_ij = sin(pi tau_ij / 2) (exact for the Gaussian copula), and the matrix is repaired to
// the nearest correlation matrix (Higham 2002, alternating projections) with eigenvalues at
// least `min_eigenvalue`, so its Cholesky factor exists.
//
// Constant column. Tau-b and Pearson are undefined for it (0 / 0). Tau-a is not: every pair is
// tied in that column, S = 0, so before noise the column is independent of every other, which
// is exactly what a constant is; the copula then only sees noise for it, and its noisy
// histogram puts (almost) all synthetic values in its bin. No special case, and nothing about
// the data is revealed by a branch. The same holds for ties in general (discrete columns): tau-a
// counts tied pairs as 0.
//
// Sampling (post-processing): z ~ N(0, P) through the Cholesky factor, u_j = Phi(z_j),
// x_j = F_j^{-1}(u_j).
#include <cstdint>
#include <memory>
#include <vector>

#include "privrace/baselines/synthetic.hpp"

namespace privrace::baselines {

// The exact concordances S_ij of a table's columns (clipped into the box, in [0, 1]) and the
// columns they were counted on. They do not depend on epsilon or on the noise, so an experiment
// counts them once for all its fits of one table (experiments' SharedWork) and passes them in
// DpCopulaOptions::concordances; a fit uses them only for a table whose columns are bit for bit
// `unit`, and refuses any other (UsageError): a fit with them releases exactly what it would
// without them.
struct ExactConcordances {
  std::vector<std::vector<double>> unit;
  std::vector<std::int64_t> s;  // pairs i < j in the order (0, 1), (0, 2), ..., (m - 2, m - 1)
};
ExactConcordances exact_concordances(const DenseRef& table, const TableBox& box);

struct DpCopulaOptions {
  int bins = 100;               // equal-width bins per column for the marginals
  double marginal_ratio = 8.0;  // k = eps1 / eps2
  double min_eigenvalue = 1e-6; // floor of the repaired correlation matrix's spectrum
  // Optional: the table's exact concordances, counted once for several fits (ExactConcordances).
  std::shared_ptr<const ExactConcordances> concordances;
};

// Kendall's S = concordant - discordant pairs of (x, y) (tau-a numerator), O(n log n) by
// Knight's merge-sort count (S = pairs - ties_x - ties_y + ties_xy - 2 discordant).
std::int64_t kendall_concordance(const std::vector<double>& x, const std::vector<double>& y);
// The correlation matrix nearest to `a` in Frobenius norm with eigenvalues >= min_eigenvalue
// (Higham 2002 alternating projections with Dykstra's correction, then a final eigenvalue
// floor and unit diagonal).
Eigen::MatrixXd nearest_correlation(const Eigen::MatrixXd& a, double min_eigenvalue);

class DpCopula final : public SyntheticGenerator {
 public:
  explicit DpCopula(const DpCopulaOptions& options = {});
  std::string name() const override { return "dp_copula"; }
  void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) override;
  DoubleMatrix sample(std::size_t rows, std::uint64_t seed) const override;
  nlohmann::json privacy_record() const override;

  // The released values and their noise (for tests and records).
  double histogram_noise_scale() const { return histogram_scale_; }      // counts
  double concordance_noise_scale() const { return concordance_scale_; }  // S units
  const std::vector<std::vector<std::int64_t>>& noisy_counts() const { return noisy_counts_; }
  const Eigen::MatrixXd& noisy_concordance() const { return noisy_s_; }  // S_ij + noise, i != j
  const Eigen::MatrixXd& correlation() const { return correlation_; }    // after the repair

 private:
  DpCopulaOptions opt_;
  bool fitted_ = false;
  TableBox box_;
  std::size_t n_ = 0, m_ = 0;
  double epsilon_ = 0, eps1_ = 0, eps2_ = 0, histogram_scale_ = 0, concordance_scale_ = 0;
  std::vector<std::vector<std::int64_t>> noisy_counts_;
  std::vector<std::vector<double>> cdf_;  // per column: bins + 1 running sums, cdf[0] = 0, cdf[bins] = 1
  Eigen::MatrixXd noisy_s_, correlation_, cholesky_;
};

}  // namespace privrace::baselines
