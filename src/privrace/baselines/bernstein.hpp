#pragma once
// The Bernstein mechanism (Aldà & Rubinstein, "The Bernstein Mechanism: Function Release
// under Differential Privacy", AAAI 2017) for the normalised KDE f_D(y) = (1/N) sum k(x, y).
//
// Data is mapped into the unit cube [0,1]^d through the public domain. f_D is evaluated on
// the lattice {0, 1/k, ..., 1}^d ((k+1)^d points, in parallel), each value gets Laplace noise,
// and the release is the tensor-product Bernstein polynomial
//   B(y) = sum_{v in {0..k}^d} F~(v/k) prod_j C(k, v_j) y_j^{v_j} (1 - y_j)^{k - v_j}.
//
// Sensitivity (our kernel, k(x, y) in [0, 1], N public as in the paper): one lattice value
// F(y) = S(y)/N with S = sum_x k(x, y) in [0, N] changes
//   * replace one record:  |k(x, y) - k(x', y)| / N <= 1/N;
//   * add one record:      |(S + k)/(N + 1) - S/N| = |N k - S| / (N (N + 1)) <= 1/(N + 1) < 1/N
//     (remove is symmetric).
// So each of the (k+1)^d released values has sensitivity 1/N, the vector L1 sensitivity
// (k+1)^d / N, and A&R's Laplace mechanism adds Lap((k+1)^d / (N eps)) to every value.
#include <cmath>
#include <cstdint>
#include <vector>

#include "privrace/baselines/function_release.hpp"
#include "privrace/core/random.hpp"

namespace privrace::baselines {

class BernsteinRelease {
 public:
  // Exact lattice values (no noise yet). Throws InfeasibleError (a UsageError) carrying the
  // time and memory estimates when (k+1)^d x N kernel evaluations (duplicates not credited)
  // exceed max_seconds or the lattice's memory (estimated_bytes) exceeds max_bytes.
  BernsteinRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, int k, double max_seconds = 3600,
                   double kernel_evals_per_second = 1e8,  // measured: ~1.3e8/s on 2 busy cores (skin, d = 3)
                   double max_bytes = 16.0 * (1ULL << 30));

  // Peak bytes of a degree-k lattice in d dimensions: the exact values and one private copy,
  // 8 + 8 a point (the kernel sums read the lattice's axes, not its points).
  static double estimated_bytes(int k, std::size_t d);
  static double lattice_points(int k, std::size_t d) { return std::pow(k + 1.0, static_cast<double>(d)); }

  std::size_t lattice_size() const { return values_.size(); }
  double noise_scale(double epsilon) const;  // (k+1)^d / (N eps)
  // A private copy: every lattice value + Lap(noise_scale(eps)).
  BernsteinRelease privatized(double epsilon, RandomSource& rng) const;

  // B(y) at each query (queries in data units; clipped into the domain).
  std::vector<double> evaluate(const DenseRef& queries) const;
  // The same, with the lattice values replaced (tests: polynomial reproduction).
  void set_values(std::vector<double> v) { values_ = std::move(v); }
  const std::vector<double>& values() const { return values_; }
  int degree() const { return k_; }
  std::size_t dim() const { return d_; }

  // The 1-D Bernstein basis b_v(t) = C(k, v) t^v (1 - t)^(k - v), v = 0..k.
  static void basis(int k, double t, double* out);

 private:
  BernsteinRelease() = default;
  int k_ = 0;
  std::size_t d_ = 0;
  double n_ = 0;
  Domain dom_;
  std::vector<double> values_;  // row-major over the multi-index (dimension 0 slowest)
};

}  // namespace privrace::baselines
