#pragma once
// Private kernel mean embeddings with public synthetic points (Balog, Tolstikhin & Schölkopf,
// "Differentially Private Database Release via Kernel Mean Embeddings", ICML 2018, Algorithm 1).
//
// 1. M public points z_1..z_M, drawn data-independently (uniform over the public domain, or
//    normal centred on it with sd = span/4) from a seed that may be published.
// 2. An orthonormal basis e_1..e_m of span{phi(z_j)} in the RKHS of k: pivoted Cholesky of the
//    Gram matrix, K_PP = L L^T on the m pivots, e = Phi_P L^{-T}. Pivoting stops when every
//    residual k(z, z) - ||proj phi(z)||^2 is below `tol`: the points left out lie (numerically)
//    in the span already, so this is Algorithm 1's basis up to tol.
// 3. The coordinates of the empirical mean embedding mu = (1/N) sum phi(x) in that basis,
//    alpha = L^{-1} s_P with s_P(p) = <phi(z_p), mu> = f_D(z_p), plus Gaussian noise.
// 4. The weights of the released points are w = B beta with B = L^{-T} (Algorithm 1's
//    w = beta B), NOT beta itself; the released KDE is f~(q) = sum_p w_p k(z_p, q).
//
// Sensitivity (Balog et al. Sec. 4, with kappa = sup k(x, x) = 1): the coordinates are a
// projection onto an orthonormal system, so ||alpha(D) - alpha(D')||_2 <= ||mu_D - mu_D'||_H.
// Replace one record: ||phi(x) - phi(x')|| / N <= 2/N. Add one record (N public):
// ||(phi(x) - mu) / (N + 1)|| <= 2/(N + 1). So the L2 sensitivity is 2/N and the Gaussian
// mechanism's sigma follows from (eps, delta): the paper's classic sigma = (2/N) sqrt(2 ln
// (1.25/delta)) / eps where it is valid (eps < 1), the analytic Gaussian mechanism (Balle &
// Wang 2018) for eps >= 1, where the classic bound does not hold.
//
// Kernel: the SAME kernel as the target KDE. The p-stable collision probability is positive
// semi-definite: k(x, q) = P[h(x) = h(q)] = E_h[sum_c 1{h(x) = c} 1{h(q) = c}] is an average of
// inner products of one-hot feature maps. (tests check the Gram matrix's smallest eigenvalue.)
#include <cstdint>
#include <string>
#include <vector>

#include "privrace/baselines/function_release.hpp"
#include "privrace/core/random.hpp"

namespace privrace::baselines {

struct KmeOptions {
  std::size_t points = 5000;         // M
  std::string synthetic = "uniform";  // uniform | normal (data-independent; see private_moments for the data-informed points)
  double tol = 1e-5;                  // pivoted Cholesky residual at which to stop
  // Basis size cap. 0 = none but memory: the rank stops at max_bytes / (8 M), M x rank doubles
  // (2 GiB: every rank up to M for M <= 16,384; 2684 at M = 100k). The selection's rows are
  // floats now and take half of that; the bound is kept so that the rank, and the records, stay
  // what they were. A fixed
  // cap is not justified by saturation: on covtype (8 principal components, bandwidth 0.5,
  // M = 5000 uniform points) the noise-free error kept falling with the rank, 0.224 (250),
  // 0.172 (500), 0.131 (1000), 0.115 (1500), 0.086 (3000), 0.073 (5000 = M, exact span);
  // see configs/README.md.
  std::size_t max_rank = 0;
  double max_bytes = 2.0 * (1ULL << 30);
  std::uint64_t seed = 1;             // public points (data-independent)
};

// Pivoted (incomplete) Cholesky of the Gram matrix of `points` under `spec`: returns the pivot
// indices (in order) and L restricted to them (m x m, lower triangular), at most max_rank of
// them (0 = up to M). Each step is parallel over the points.
//
// The greedy selection reads M x t stored entries at step t, so it is bound by memory bandwidth.
// PivotRows::Float holds those rows in single precision (half the bytes; sums in double) and
// then factors the chosen pivots' Gram matrix in double, so L is exact to double rounding for
// whichever pivots were chosen; only a near-tie between two residuals (relative ~1e-7) can pick a
// different pivot than PivotRows::Double. The sensitivity (above) holds for any public
// pivots. Automatic: Float when tol >= kFloatPivotTolerance, else Double; Float falls back to
// Double when the chosen Gram is not positive definite in double.
struct PivotedCholesky {
  std::vector<std::size_t> pivots;
  Eigen::MatrixXd L;       // m x m lower triangular: K_PP = L L^T
  double max_residual = 0;  // largest k(z,z) - ||proj||^2 left when it stopped
};
enum class PivotRows { Automatic, Float, Double };
inline constexpr double kFloatPivotTolerance = 1e-6;
// Candidates per batch of the selection (kme.cpp); 1 = one pass over the rows per step.
inline constexpr std::size_t kPivotLookahead = 32;
PivotedCholesky pivoted_cholesky(const DoubleMatrix& points, const KernelSpec& spec, double tol, std::size_t max_rank,
                                 PivotRows rows = PivotRows::Automatic, std::size_t lookahead = kPivotLookahead);

// The rank cap pivoted_cholesky gets: min(M, max_rank (0 = none), floor(max_bytes / (8 M))), at least 1.
std::size_t kme_rank_cap(std::size_t points, std::size_t max_rank, double max_bytes);

// Gaussian sigma for L2 sensitivity `l2` as Balog et al. (classic for eps < 1, analytic otherwise).
double kme_sigma(double epsilon, double delta, double l2);

// Data-informed public points, made private. The paper (CCS'21 Sec. 5.1) "uses information
// about the dataset to inform the distribution of synthetic points": it sets the mean and
// standard deviation of a normal to cover the data. Taken from the private data itself that
// would leak, so here they are released first with the Laplace mechanism and the points are
// drawn from the released values (post-processing, public seed):
//
//   u_ij = (clip(x_ij) - lower) / span in [0, 1];  S1_j = sum_i u_ij,  S2_j = sum_i u_ij^2.
//   Add or remove one record: every S1_j and S2_j moves by u or u^2 in [0, 1]; replace one:
//   by |u - u'| <= 1 and |u^2 - u'^2| <= 1. So the 2d-vector (S1, S2) has L1 sensitivity 2d
//   and Lap(2d / epsilon_summary) on each coordinate is epsilon_summary-DP. N is public.
//   mean_j = S1~_j / N and var_j = S2~_j / N - mean_j^2, clamped into [0, 1] and
//   [min_sd^2, 1/4] (1/4 is the largest variance on [0, 1]; min_sd keeps points spread when
//   noise drives the variance below zero).
//
// Budget split (KmeMethod "private_normal"): epsilon_summary = share * epsilon for this
// summary, (1 - share) * epsilon and all of delta for the Gaussian weights. The weights'
// sensitivity 2/N holds for ANY public points, and the points depend on the data only through
// the summary, so basic (adaptive) composition gives (epsilon, delta)-DP for the whole release.
struct PrivateMoments {
  std::vector<double> mean, sd;  // per dimension, in [0, 1] units of the domain
  double epsilon = 0;            // epsilon_summary spent
  double noise_scale = 0;        // Laplace scale on each released sum: 2d / epsilon_summary
};
PrivateMoments private_moments(const DenseRef& train, const Domain& dom, double epsilon_summary, RandomSource& rng,
                               double min_sd = 0.02);
// count points z_ij = from_unit(clamp(mean_j + sd_j g, 0, 1)), g standard normal from `seed`.
DoubleMatrix moment_points(const PrivateMoments& m, std::size_t count, const Domain& dom, std::uint64_t seed);

class KmeRelease {
 public:
  KmeRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, const KmeOptions& opt);
  // With given public points (opt.points and opt.synthetic are not used).
  KmeRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, DoubleMatrix points,
             const KmeOptions& opt);
  // Noise-free coordinates (the non-private limit) if rng == nullptr.
  WeightedPoints release(double epsilon, double delta, RandomSource* rng, double* sigma_out = nullptr) const;
  std::size_t rank() const { return chol_.pivots.size(); }
  std::size_t rank_cap() const { return rank_cap_; }
  double max_residual() const { return chol_.max_residual; }
  const DoubleMatrix& public_points() const { return z_; }
  const std::vector<double>& alpha() const { return alpha_; }

 private:
  void fit(const DenseRef& train, const KernelSpec& spec, const Domain& dom, const KmeOptions& opt);
  DoubleMatrix z_;
  PivotedCholesky chol_;
  std::vector<double> alpha_;
  double n_ = 0;
  std::size_t rank_cap_ = 0;
};

}  // namespace privrace::baselines
