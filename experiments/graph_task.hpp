#pragma once
// The graph task family (CCS'21 Section 6, Table 4, Figure 6): every node is a data point, the
// set of its (out-)neighbours; the kernel is Jaccard similarity (MinHash), and the query of node
// q is f(q) = sum_u J(N(u), N(q)). Methods for this task derive from TypedMethod<GraphContext>.
#include "experiment.hpp"
#include "privrace/io/edge_list.hpp"
#include "privrace/tasks/graph.hpp"

namespace privrace::experiments {

struct GraphContext : TaskContext {
  SetCollection sets;                      // node u's set = N(u), sorted, de-duplicated
  std::vector<std::uint32_t> query_nodes;  // seeded, increasing
  SetCollection query_sets;                // N(q) of each query node
  std::vector<double> truth;               // exact f(q) = sum_u J(N(u), N(q))^power (a SUM, not a density)
  std::size_t power = 1;
  std::uint64_t nodes = 0, edges = 0;      // sets, stored neighbours
  std::string source;                      // "dataset" | "rmat"
  bool symmetric = false;
  bool truth_cache_hit = false, graph_cache_hit = false;
  double load_seconds = 0, truth_seconds = 0;

  // Metrics from kernel-SUM estimates (plain and debiased) and the sketch's N-hat:
  // mre = mean |S_hat - f| / f (the paper's relative error of f), mre_debiased likewise,
  // mre_density = mean |S_hat / N_hat - f / N| / (f / N) (N-hat noise included).
  json metrics(const std::vector<double>& sums, const std::vector<double>& debiased_sums, double n_hat) const;
};

// Task graph; methods "race_graph" (private RACE with densified MinHash; one exact sketch per
// (R, W, rep), a fresh privatized copy per epsilon) and "race_graph_scaling" (build time of R-MAT
// graphs of a given scale at a given thread count: the thread-scaling and time-per-edge study;
// no error metrics, no epsilon).
void register_graph_task(Registry& registry);

}  // namespace privrace::experiments
