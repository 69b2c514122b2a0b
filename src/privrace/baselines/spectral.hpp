#pragma once
// Orthogonal-series (spectral) release of the 1-D KDE (Wasserman & Zhou 2010, Sec. 4.3;
// Hall, Rinaldo & Wasserman 2013), as the RACE paper runs it: "approximate the kernel density
// function with a Fourier series, truncate the series expansion, and add Laplace noise to
// each coefficient".
//
// Data (and queries) are mapped into [0, 1] through the public domain (salaries / 250k).
// Basis: the cosine basis of L2[0, 1], phi_0 = 1, phi_j(t) = sqrt(2) cos(pi j t), j = 1..M-1.
// Coefficients of F(t) = f_D(domain(t)):  c_j = int_0^1 F(t) phi_j(t) dt = (1/N) sum_x g_j(x),
// g_j(x) = int_0^1 k(x, t) phi_j(t) dt, evaluated by midpoint quadrature on G points.
//
// Sensitivity: c_j is an average of g_j over records, so (as for Bernstein's lattice values)
// replace-one changes it by <= 2 sup_x |g_j(x)| / N and add/remove-one by <= 2 sup|g_j| / (N+1).
// sup_x |g_j(x)| is a public, data-independent number computed on a fine x grid (x 1.01 for
// the grid), never more than sqrt(2) int k. L1 sensitivity of the M-vector: Delta = sum_j
// 2 sup|g_j| / N; the Laplace mechanism adds Lap(Delta / eps) to every coefficient (the
// paper's public code queried the UN-noised coefficients; we release only the noisy ones).
#include <vector>

#include "privrace/baselines/function_release.hpp"
#include "privrace/core/random.hpp"

namespace privrace::baselines {

class SpectralRelease {
 public:
  SpectralRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, int terms, int quadrature = 4096);
  double l1_sensitivity() const { return l1_; }
  // Noise-free coefficients if rng == nullptr.
  std::vector<double> release(double epsilon, RandomSource* rng) const;
  std::vector<double> evaluate(const std::vector<double>& coef, const DenseRef& queries) const;
  const std::vector<double>& coefficients() const { return c_; }
  static double basis(int j, double t);

 private:
  Domain dom_;
  std::vector<double> c_;
  double l1_ = 0;
};

}  // namespace privrace::baselines
