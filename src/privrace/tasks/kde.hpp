#pragma once
// Kernel density estimation: exact LSH-kernel sums (the ground truth a RACE sketch estimates),
// RACE density queries, and the error metrics of the papers' KDE experiments.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace {

// The LSH kernel whose sums are computed: "l2" (p-stable, bucket width `bandwidth`, k = P^p)
// or "angular" (signed random projections, k = (1 - angle/pi)^p).
struct KernelSpec {
  std::string kernel = "l2";
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

// One p-stable collision probability at distance/width ratio s = c / w, from the table.
double pstable_kernel_tabulated(double s);

// RACE density estimates f_hat(q) = (kernel-sum estimate) / N-hat, for several query options
// at once (the LSH hashing and the counter lookups are shared). out[k][j] is option k, query j.
std::vector<std::vector<double>> race_densities(const RaceSketch& sketch, const DenseRef& queries,
                                                const std::vector<QueryOptions>& options);

// mean_j |est_j - truth_j| / truth_j over queries with truth_j > 0 (the paper's "relative error").
double mean_relative_error(std::span<const double> estimate, std::span<const double> truth);
// sqrt(sum_j (est_j - truth_j)^2 * spacing): the L2 function error on an evenly spaced grid.
double l2_function_error(std::span<const double> estimate, std::span<const double> truth, double spacing);

}  // namespace privrace
