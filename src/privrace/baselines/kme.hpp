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
  std::string synthetic = "uniform";  // uniform | normal
  double tol = 1e-5;                  // pivoted Cholesky residual at which to stop
  std::size_t max_rank = 1500;        // memory guard: M x max_rank doubles
  std::uint64_t seed = 1;             // public points (data-independent)
};

// Pivoted (incomplete) Cholesky of the Gram matrix of `points` under `spec`: returns the pivot
// indices (in order) and L restricted to them (m x m, lower triangular). Parallel per column.
struct PivotedCholesky {
  std::vector<std::size_t> pivots;
  Eigen::MatrixXd L;       // m x m lower triangular: K_PP = L L^T
  double max_residual = 0;  // largest k(z,z) - ||proj||^2 left when it stopped
};
PivotedCholesky pivoted_cholesky(const DoubleMatrix& points, const KernelSpec& spec, double tol, std::size_t max_rank);

// Gaussian sigma for L2 sensitivity `l2` as Balog et al. (classic for eps < 1, analytic otherwise).
double kme_sigma(double epsilon, double delta, double l2);

class KmeRelease {
 public:
  KmeRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, const KmeOptions& opt);
  // Noise-free coordinates (the non-private limit) if rng == nullptr.
  WeightedPoints release(double epsilon, double delta, RandomSource* rng, double* sigma_out = nullptr) const;
  std::size_t rank() const { return chol_.pivots.size(); }
  double max_residual() const { return chol_.max_residual; }
  const DoubleMatrix& public_points() const { return z_; }
  const std::vector<double>& alpha() const { return alpha_; }

 private:
  DoubleMatrix z_;
  PivotedCholesky chol_;
  std::vector<double> alpha_;
  double n_ = 0;
};

}  // namespace privrace::baselines
