#pragma once
// Kernel density estimation: exact LSH-kernel sums (the ground truth a RACE sketch estimates),
// RACE density queries, and the error metrics of the papers' KDE experiments.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace {

// The LSH kernel whose sums are computed: l2 (p-stable, bucket width `bandwidth`, k = P^p)
// or angular (signed random projections, k = (1 - angle/pi)^p).
struct KernelSpec {
  Kernel kernel = Kernel::L2;
  double bandwidth = 1.0;
  std::size_t power = 1;
  nlohmann::json to_json() const;
};

// Exact kernel sums S(q_j) = sum_i k(x_i, q_j) for every query (not divided by N).
// Identical data rows are merged with weights first (e.g. skin has 51k distinct of 245k rows),
// then query blocks run in parallel (OpenMP) against cache-sized data blocks. The p-stable
// kernel is evaluated from a cubic Hermite table (relative error below 1e-8; exact formula
// beyond the table), which avoids an erfc and an exp per pair.
std::vector<double> exact_kernel_sums(const DenseRef& data, const DenseRef& queries, const KernelSpec& spec);

// The same sums over given rows with given weights, S(q_j) = sum_i w_i k(x_i, q_j), rows not
// merged: the released functions of the KDE baselines (weighted synthetic or pivot points) are
// evaluated by the same blocked routine as the ground truth.
std::vector<double> weighted_row_kernel_sums(const DoubleMatrix& x, const std::vector<double>& w, const DenseRef& queries,
                                             const KernelSpec& spec);

// The exact kernel sums at every point of the lattice axes[0] x ... x axes[d-1] (point index
// with the last axis fastest; coordinates held as Real, as queries are): the values
// exact_kernel_sums gives with those points as queries, bit for bit, without forming them. In
// d <= 8 (L2) the distance over the first d - 1 coordinates is computed once for every value
// of the last axis (the Bernstein lattice's kernel sums, 1/(k+1) of the distance work).
std::vector<double> lattice_kernel_sums(const DenseRef& data, const std::vector<std::vector<double>>& axes,
                                        const KernelSpec& spec);

// One p-stable collision probability at distance/width ratio s = c / w, from the table.
double pstable_kernel_tabulated(double s);
// The same at s[0..n) (s >= 0), into out (which may be s): bit for bit the values of the
// function above; with AVX2, four at a time.
void pstable_kernel_tabulated(const double* s, std::size_t n, double* out);

// RACE density estimates f_hat(q) = (kernel-sum estimate) / N-hat, for several query options
// at once (the LSH hashing and the counter lookups are shared). out[k][j] is option k, query j.
std::vector<std::vector<double>> race_densities(const RaceSketch& sketch, const DenseRef& queries,
                                                const std::vector<QueryOptions>& options);

// Corollary 1 of the private RACE paper (Coleman & Shrivastava, Theorem 4): the R that balances
// the LSH sampling error against the Laplace noise. With f~(q) = sum_x sqrt(k(x, q)) the
// median-of-means error is bounded by (f~^2 / R + 2 R / eps^2)^{1/2} sqrt(32 log 1/delta): the
// first term is the LSH variance (Theorem 2) over R rows, the second the Laplace variance
// 2 (R / eps)^2 of each row's count, averaged over R rows. d/dR (a / R + b R) = 0 at
// R = sqrt(a / b) with a = f~^2, b = 2 / eps^2, so R = ceil(f~ eps / sqrt 2). f~ is not
// known without reading the private data; the paper bounds it by f~ <= N (k <= 1), so we take
// f~ = level * N with `level` in (0, 1] the assumed mean of sqrt(k(x, q)) (1 = the paper's
// bound). Returns that R as a double (it can exceed any memory: N eps / sqrt 2 is 1.7e5 on
// skin at eps = 1); at least 1. Throws UsageError unless n >= 1, eps > 0, 0 < level <= 1.
double corollary1_rows(double n, double epsilon, double level = 1.0);

// The mean relative error of the experiments is experiments/metrics.hpp's mean_relative_error.
// sqrt(sum_j (est_j - truth_j)^2 * spacing): the L2 function error on an evenly spaced grid.
double l2_function_error(std::span<const double> estimate, std::span<const double> truth, double spacing);

}  // namespace privrace
