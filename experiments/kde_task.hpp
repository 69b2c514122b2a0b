#pragma once
// The KDE task family: held-out queries (or a 1-D grid), exact LSH-kernel density as ground
// truth (cached), and the error metrics. Methods for this task derive from TypedMethod<KdeContext>.
#include "experiment.hpp"
#include "privrace/tasks/kde.hpp"

namespace privrace::experiments {

struct KdeContext : TaskContext {
  DenseMatrix train;           // the rows a method may use (queries removed)
  DenseMatrix queries;         // held-out points or grid points
  std::vector<double> truth;   // exact density f(q) = sum_x k(x, q) / N_train
  KernelSpec kernel;
  double spacing = 1.0;        // grid spacing for the L2 function error (held-out: 1 / #queries)
  bool cache_hit = false;

  // Every KDE metric from density estimates (plain and debiased).
  json metrics(const std::vector<double>& plain, const std::vector<double>& debiased) const;
};

// Task kde; methods race and race_corollary1 (R = ceil(N eps / sqrt 2) by Corollary 1, capped
// at max_rows; see kde_task.cpp).
void register_kde_task(Registry& registry);

// Ground-truth cache file (results/cache/kde-<hash>.bin): magic, key, densities, CRC-32.
// Returns false (never throws) when the file is absent, of another key, or damaged.
bool read_truth_cache(const std::string& path, const std::string& key, std::vector<double>& out);
void write_truth_cache(const std::string& path, const std::string& key, const std::vector<double>& truth);

}  // namespace privrace::experiments
