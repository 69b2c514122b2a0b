#pragma once
// Large-graph Jaccard kernel sums (CCS'21 Section 6): each node is a data point, its set of
// (out-)neighbours; f(q) = sum over nodes u of J(N(u), N(q)).
//  - exact ground truth by common-neighbour counting over q's two-hop neighbourhood;
//  - a seeded choice of query nodes and the mean relative error;
//  - (the parallel sketch builder for set collections is sketch/set_builder.hpp, included here);
//  - an R-MAT (Graph500-style) power-law generator.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/io/edge_list.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/set_builder.hpp"

namespace privrace {

// Exact f(q) = sum_u J(N(u), Q) for each query set Q (sorted, duplicate-free), over the data
// sets `sets` (node u's set = sets.set(u)). `in_sets` is the transpose of `sets` (node v's
// set = {u : v in N(u)}): pass transpose_sets(sets, sets.size()), or `sets` itself when the
// graph is symmetric. Work per query: sum over v in Q of |in_sets(v)|. Nodes sharing no element
// with Q contribute 0, except that two empty sets have J = 1 (MinHash codes of empty sets agree).
// Parallel over queries (threads = 0: OpenMP default), one sparse accumulator per thread.
std::vector<double> exact_jaccard_sums(const SetCollection& sets, const SetCollection& in_sets, const SetCollection& queries,
                                       int threads = 0);
// Same for query nodes of the graph itself (Q = N(q)).
std::vector<double> exact_jaccard_sums_nodes(const SetCollection& sets, const SetCollection& in_sets,
                                             std::span<const std::uint32_t> nodes, int threads = 0);
// The sets of the given nodes (e.g. to write them as a query file or hash them).
SetCollection sets_of_nodes(const SetCollection& sets, std::span<const std::uint32_t> nodes);

// `count` distinct node ids in [0, nodes), chosen uniformly with a seeded generator and
// returned in increasing order (all nodes if count >= nodes).
std::vector<std::uint32_t> choose_query_nodes(std::uint64_t nodes, std::size_t count, std::uint64_t seed);


// R-MAT (Chakrabarti et al. 2004) as in Graph500: 2^scale nodes, edge_factor x 2^scale edges,
// quadrant probabilities a, b, c (d = 1 - a - b - c), node ids scrambled by a seeded bijection.
// Deterministic for a seed whatever the thread count (edges come in fixed blocks with their own
// streams). The generator runs twice (count, then fill) so no edge buffer is held: memory is
// the CSR only; refused (ResourceError, with the estimate) before allocating if it won't fit.
struct RmatOptions {
  unsigned scale = 16;
  double edge_factor = 16.0;
  double a = 0.57, b = 0.19, c = 0.19;
  std::uint64_t seed = 1;
  // 0: the 2^scale nodes R-MAT draws; else a graph of this many (2^(scale-1) < nodes <= 2^scale,
  // a data set's node count): ids at or above it fold onto id - nodes as edges are drawn.
  std::uint64_t nodes = 0;
  bool undirected = true;        // Graph500 graphs are undirected: each edge in both sets
  bool keep_self_loops = false;
  bool scramble = true;          // permute node ids (hubs are otherwise all near id 0)
  std::uint64_t memory_limit = 0;  // 0 = 80% of physical memory
  int threads = 0;
};
SetCollection generate_rmat(const RmatOptions& opts, EdgeListReport* report = nullptr);
// Bytes generate_rmat will allocate at its peak.
double rmat_bytes(const RmatOptions& opts);

}  // namespace privrace
