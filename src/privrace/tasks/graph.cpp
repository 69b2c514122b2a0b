#include "privrace/tasks/graph.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"

namespace privrace {

namespace {
int resolve_threads(int t) { return t > 0 ? t : omp_get_max_threads(); }
}  // namespace

// ---------------------------------------------------------------------------------------------
// Exact ground truth

std::vector<double> exact_jaccard_sums(const SetCollection& sets, const SetCollection& in_sets, const SetCollection& queries,
                                       int threads) {
  const std::size_t n = sets.size();
  std::size_t empty_nodes = 0;
  for (std::size_t u = 0; u < n; ++u) empty_nodes += sets.offsets[u + 1] == sets.offsets[u];
  std::vector<double> out(queries.size());
#pragma omp parallel num_threads(resolve_threads(threads))
  {
    // Sparse accumulator: dense counters plus the list of touched nodes, reset after each query.
    std::vector<std::uint32_t> common(n, 0);
    std::vector<std::uint32_t> touched;
#pragma omp for schedule(dynamic, 8)
    for (std::size_t qi = 0; qi < queries.size(); ++qi) {
      const auto q = queries.set(qi);
      if (q.empty()) {
        out[qi] = static_cast<double>(empty_nodes);  // J(empty, empty) = 1, J(empty, X) = 0
        continue;
      }
      touched.clear();
      for (const std::uint32_t v : q) {
        if (v >= in_sets.size()) continue;  // an element no node links to
        for (const std::uint32_t u : in_sets.set(v)) {
          if (common[u]++ == 0) touched.push_back(u);
        }
      }
      double f = 0.0;
      const double qs = static_cast<double>(q.size());
      for (const std::uint32_t u : touched) {
        const double c = common[u];
        f += c / (static_cast<double>(sets.offsets[u + 1] - sets.offsets[u]) + qs - c);
        common[u] = 0;
      }
      out[qi] = f;
    }
  }
  return out;
}

SetCollection sets_of_nodes(const SetCollection& sets, std::span<const std::uint32_t> nodes) {
  SetCollection q;
  for (const std::uint32_t u : nodes) {
    if (u >= sets.size()) throw InputError("query node " + std::to_string(u) + " is not in the graph (" + std::to_string(sets.size()) + " nodes)");
    q.push_back(sets.set(u));
  }
  return q;
}

std::vector<double> exact_jaccard_sums_nodes(const SetCollection& sets, const SetCollection& in_sets,
                                             std::span<const std::uint32_t> nodes, int threads) {
  return exact_jaccard_sums(sets, in_sets, sets_of_nodes(sets, nodes), threads);
}

std::vector<std::uint32_t> choose_query_nodes(std::uint64_t nodes, std::size_t count, std::uint64_t seed) {
  std::vector<std::uint32_t> out;
  if (count >= nodes) {
    out.resize(nodes);
    for (std::uint64_t i = 0; i < nodes; ++i) out[i] = static_cast<std::uint32_t>(i);
    return out;
  }
  // Floyd's algorithm: count distinct draws with count random numbers, no O(nodes) memory.
  SeededRandom rng(derive_seed(seed, 0x9e5));
  std::vector<std::uint32_t> chosen;
  chosen.reserve(count);
  std::vector<std::uint32_t> sorted;
  for (std::uint64_t j = nodes - count; j < nodes; ++j) {
    const auto t = static_cast<std::uint32_t>(rng.below(j + 1));
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), t);
    const std::uint32_t pick = (it != sorted.end() && *it == t) ? static_cast<std::uint32_t>(j) : t;
    sorted.insert(std::lower_bound(sorted.begin(), sorted.end(), pick), pick);
  }
  return sorted;
}

// ---------------------------------------------------------------------------------------------
// R-MAT

namespace {

constexpr std::uint64_t kRmatBlock = std::uint64_t{1} << 16;  // edges per random stream

struct Quadrants {
  std::uint32_t ab, abc, a;  // cumulative thresholds out of 2^16
};

// A seeded bijection of [0, 2^scale): alternating odd multiplications and xor-shifts.
struct Scrambler {
  std::uint64_t mask, m1, m2, c;
  unsigned sh;
  std::uint64_t operator()(std::uint64_t x) const {
    x = ((x ^ c) * m1) & mask;
    x ^= x >> sh;
    x = (x * m2) & mask;
    x ^= x >> sh;
    return x;
  }
};

// Edge k of the graph: the generator is a pure function of (seed, k), so both passes agree.
template <typename F>
void rmat_block(const RmatOptions& o, const Quadrants& q, const Scrambler& scr, std::uint64_t block, std::uint64_t m, F&& emit) {
  SeededRandom rng(derive_seed(o.seed, block));
  const std::uint64_t e0 = block * kRmatBlock, e1 = std::min(m, e0 + kRmatBlock);
  for (std::uint64_t e = e0; e < e1; ++e) {
    std::uint64_t u = 0, v = 0, bits = 0;
    int left = 0;
    for (unsigned level = 0; level < o.scale; ++level) {
      if (left == 0) {
        bits = rng.next();
        left = 4;
      }
      const auto r = static_cast<std::uint32_t>(bits & 0xFFFF);
      bits >>= 16;
      --left;
      const std::uint64_t bu = r >= q.ab, bv = (r >= q.a && r < q.ab) || r >= q.abc;
      u = (u << 1) | bu;
      v = (v << 1) | bv;
    }
    if (o.scramble) {
      u = scr(u);
      v = scr(v);
    }
    emit(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(v));
  }
}

}  // namespace

double rmat_bytes(const RmatOptions& o) {
  const double n = std::ldexp(1.0, static_cast<int>(o.scale));
  const double m = o.edge_factor * n * (o.undirected ? 2.0 : 1.0);
  return 4.0 * m + 8.0 * (n + 1) * 2.0 + 8.0 * n;  // ids + offsets + cursors + kept counts
}

namespace {
void check_rmat_options(const RmatOptions& o) {
  if (o.scale == 0 || o.scale > 31) throw UsageError("R-MAT scale must be in 1..31");
  if (!(o.edge_factor > 0) || o.a < 0 || o.b < 0 || o.c < 0 || o.a + o.b + o.c > 1.0)
    throw UsageError("R-MAT needs edge_factor > 0 and a, b, c >= 0 with a + b + c <= 1");
  const std::uint64_t limit = graph_memory_limit(o.memory_limit);
  const double need = rmat_bytes(o);
  if (need > static_cast<double>(limit))
    throw ResourceError("an R-MAT graph of scale " + std::to_string(o.scale) + " and edge factor " + std::to_string(o.edge_factor) +
                        " needs about " + std::to_string(static_cast<long long>(need / 1048576.0)) + " MiB, more than the " +
                        std::to_string(static_cast<long long>(static_cast<double>(limit) / 1048576.0)) +
                        " MiB allowed; refused before allocating");
  const std::uint64_t ids = std::uint64_t{1} << o.scale;  // the ids R-MAT draws
  if (o.nodes != 0 && (o.nodes > ids || 2 * o.nodes <= ids))
    throw UsageError("R-MAT nodes = " + std::to_string(o.nodes) + " with scale " + std::to_string(o.scale) +
                     ": expected 2^(scale-1) < nodes <= 2^scale");
}

// The m edges of the generator's blocks (ids above n folded onto [0, n)), as adjacency lists
// with repeats: one pass counts the degrees, a second draws the same edges again and scatters
// them (order inside a set is fixed by the sort that follows). Self-loops are counted.
SetCollection rmat_edges(const RmatOptions& o, std::uint64_t n, std::uint64_t m, int threads, std::uint64_t& loops) {
  const std::uint64_t ids = std::uint64_t{1} << o.scale;
  const auto fold = [n](std::uint32_t x) { return x >= n ? static_cast<std::uint32_t>(x - n) : x; };
  const Quadrants q{static_cast<std::uint32_t>(std::lround((o.a + o.b) * 65536.0)),
                    static_cast<std::uint32_t>(std::lround((o.a + o.b + o.c) * 65536.0)),
                    static_cast<std::uint32_t>(std::lround(o.a * 65536.0))};
  std::uint64_t st = derive_seed(o.seed, 0x5C7A);
  const Scrambler scr{ids - 1, splitmix64(st) | 1, splitmix64(st) | 1, splitmix64(st) & (ids - 1), (o.scale + 1) / 2};
  const std::uint64_t blocks = (m + kRmatBlock - 1) / kRmatBlock;
  SetCollection g;
  g.offsets.assign(n + 1, 0);
  std::uint64_t self_loops = 0;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) reduction(+ : self_loops)
  for (std::uint64_t b = 0; b < blocks; ++b) {
    rmat_block(o, q, scr, b, m, [&](std::uint32_t u, std::uint32_t v) {
      u = fold(u);
      v = fold(v);
      if (u == v) {
        ++self_loops;
        if (!o.keep_self_loops) return;
      }
      std::atomic_ref<std::uint64_t>(g.offsets[u + 1]).fetch_add(1, std::memory_order_relaxed);
      if (o.undirected && u != v) std::atomic_ref<std::uint64_t>(g.offsets[v + 1]).fetch_add(1, std::memory_order_relaxed);
    });
  }
  loops = self_loops;
  for (std::uint64_t i = 0; i < n; ++i) g.offsets[i + 1] += g.offsets[i];
  g.ids.resize(g.offsets[n]);
  std::vector<std::uint64_t> cursor(g.offsets.begin(), g.offsets.end() - 1);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::uint64_t b = 0; b < blocks; ++b) {
    rmat_block(o, q, scr, b, m, [&](std::uint32_t u, std::uint32_t v) {
      u = fold(u);
      v = fold(v);
      if (u == v && !o.keep_self_loops) return;
      g.ids[std::atomic_ref<std::uint64_t>(cursor[u]).fetch_add(1, std::memory_order_relaxed)] = v;
      if (o.undirected && u != v) g.ids[std::atomic_ref<std::uint64_t>(cursor[v]).fetch_add(1, std::memory_order_relaxed)] = u;
    });
  }
  return g;
}
}  // namespace

SetCollection generate_rmat(const RmatOptions& o, EdgeListReport* report) {
  check_rmat_options(o);
  const std::uint64_t ids = std::uint64_t{1} << o.scale;
  const std::uint64_t n = o.nodes != 0 ? o.nodes : ids;
  const auto m = static_cast<std::uint64_t>(std::llround(o.edge_factor * static_cast<double>(ids)));
  const int threads = resolve_threads(o.threads);
  std::uint64_t loops = 0;
  SetCollection g = rmat_edges(o, n, m, threads, loops);
  const std::uint64_t dups = sort_and_deduplicate(g, n, threads);
  if (report) {
    *report = EdgeListReport{};
    report->nodes = n;
    report->lines = m;
    report->edges = g.ids.size();
    report->self_loops = loops;
    report->duplicates = dups;
    for (std::uint64_t u = 0; u < n; ++u) {
      const std::uint64_t deg = g.offsets[u + 1] - g.offsets[u];
      report->max_degree = std::max(report->max_degree, deg);
      report->empty_sets += deg == 0;
    }
    report->symmetrised = o.undirected;
  }
  return g;
}

}  // namespace privrace
