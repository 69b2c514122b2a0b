#include "privrace/baselines/private_pgm.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/core/vector_math.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines::pgm {
namespace {

// Rows per sampling block: each block draws from its own stream.
constexpr std::size_t kPgmSampleBlock = 4096;
// Largest intermediate table of a marginal computed by variable elimination.
constexpr double kMaxEliminationCells = double(1u << 27);

std::string clique_text(const Clique& c) {
  std::string s = "{";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::to_string(c[i]);
  return s + "}";
}

// UsageError naming the first clique with an attribute outside 0 .. d - 1.
void check_attributes(const std::vector<Clique>& cliques, std::size_t d) {
  for (const Clique& c : cliques)
    for (const int a : c)
      if (a < 0 || static_cast<std::size_t>(a) >= d)
        throw UsageError("private-pgm: clique " + clique_text(c) + " names attribute " + std::to_string(a) +
                         "; expected attributes 0.." + std::to_string(d - 1));
}

bool is_subset(const Clique& sub, const Clique& c) { return std::includes(c.begin(), c.end(), sub.begin(), sub.end()); }

Clique set_union(const Clique& a, const Clique& b) {
  Clique u;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(u));
  return u;
}

Clique set_intersection(const Clique& a, const Clique& b) {
  Clique u;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(u));
  return u;
}

Clique set_difference(const Clique& a, const Clique& b) {
  Clique u;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(u));
  return u;
}

// f(cell, index in sub) for every cell of c in order (c's last attribute fastest): index_map
// without the table, for maps used once (a model marginal's products and sums).
template <class F>
void for_each_sub_index(const Clique& c, const Clique& sub, const std::vector<int>& domain, F&& f) {
  const std::size_t k = c.size();
  // Stride in `sub` of each position of `c` (0 for attributes not in sub).
  std::vector<std::uint64_t> w(k, 0), size(k);
  std::uint64_t stride = 1;
  for (std::size_t i = sub.size(); i-- > 0;) {
    const auto it = std::find(c.begin(), c.end(), sub[i]);
    if (it == c.end()) throw Error("private-pgm: " + clique_text(sub) + " is not a subset of " + clique_text(c));
    w[static_cast<std::size_t>(it - c.begin())] = stride;
    stride *= static_cast<std::uint64_t>(domain[static_cast<std::size_t>(sub[i])]);
  }
  if (k == 0) {
    f(std::size_t{0}, std::uint64_t{0});
    return;
  }
  for (std::size_t i = 0; i < k; ++i) size[i] = static_cast<std::uint64_t>(domain[static_cast<std::size_t>(c[i])]);
  std::vector<std::uint64_t> digit(k, 0);
  std::uint64_t idx = 0;
  std::size_t cell = 0;
  for (;;) {
    for (std::uint64_t t = 0; t < size[k - 1]; ++t) f(cell++, idx + t * w[k - 1]);  // the last attribute
    for (std::size_t i = k - 1;;) {  // the others, as an odometer
      if (i == 0) return;
      --i;
      ++digit[i];
      idx += w[i];
      if (digit[i] < size[i]) break;
      idx -= w[i] * size[i];
      digit[i] = 0;
    }
  }
}

// out[j] = sum of v over the cells of c whose cell in sub is j (the additions in cell order).
void marginalise_to(const std::vector<double>& v, const Clique& c, const Clique& sub, const std::vector<int>& domain,
                    std::vector<double>& out) {
  out.assign(static_cast<std::size_t>(clique_cells(sub, domain)), 0.0);
  for_each_sub_index(c, sub, domain, [&](std::size_t cell, std::uint64_t idx) { out[idx] += v[cell]; });
}

// The largest of a non-empty table, as four running maxima so that it vectorises: the value
// std::max_element finds (for numbers; of equal zeros it may return the other sign, and
// exp(x - mx) is the same for either).
double largest(const std::vector<double>& v) {
  const std::size_t n = v.size();
  double m[4] = {v[0], v[0], v[0], v[0]};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t l = 0; l < 4; ++l) m[l] = v[i + l] > m[l] ? v[i + l] : m[l];
  for (; i < n; ++i) m[0] = v[i] > m[0] ? v[i] : m[0];
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

// The sum in four running sums (so that it vectorises; a table's order of additions, not its
// values, changes the last bits of the total).
void normalise(std::vector<double>& v) {
  const std::size_t n = v.size();
  double part[4] = {0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t l = 0; l < 4; ++l) part[l] += v[i + l];
  for (; i < n; ++i) part[0] += v[i];
  const double s = (part[0] + part[1]) + (part[2] + part[3]);
  if (s > 0 && std::isfinite(s)) {
    const double inv = 1.0 / s;
    for (double& x : v) x *= inv;
  } else {
    std::fill(v.begin(), v.end(), 1.0 / static_cast<double>(v.size()));
  }
}

// Index drawn by inversion of one uniform on running sums `cum` (ascending, last = total).
std::size_t draw_cumulative(const double* cum, std::size_t len, RandomSource& rng) {
  const double total = cum[len - 1];
  if (!(total > 0)) return static_cast<std::size_t>(rng.below(len));
  const double u = rng.unit() * total;
  const std::size_t i = static_cast<std::size_t>(std::upper_bound(cum, cum + len, u) - cum);
  return std::min(i, len - 1);
}

}  // namespace

double clique_cells(const Clique& c, const std::vector<int>& domain) {
  double cells = 1;
  for (const int a : c) cells *= static_cast<double>(domain[static_cast<std::size_t>(a)]);
  return cells;
}

std::vector<std::uint32_t> index_map(const Clique& c, const Clique& sub, const std::vector<int>& domain) {
  const double total = clique_cells(c, domain);
  if (total > 4294967295.0) throw UsageError("private-pgm: clique " + clique_text(c) + " has more than 2^32 cells");
  std::vector<std::uint32_t> out(static_cast<std::size_t>(total));
  for_each_sub_index(c, sub, domain, [&](std::size_t cell, std::uint64_t idx) { out[cell] = static_cast<std::uint32_t>(idx); });
  return out;
}

SubsetMap::SubsetMap(const Clique& c, const Clique& sub, const std::vector<int>& domain) {
  const std::vector<std::uint32_t> map = index_map(c, sub, domain);
  // The trailing attributes of c that are all in sub, or all outside it: their cells are a run.
  std::size_t t = c.size();
  const bool in_sub = t > 0 && std::binary_search(sub.begin(), sub.end(), c[t - 1]);
  std::size_t run = 1;
  while (t > 0 && std::binary_search(sub.begin(), sub.end(), c[t - 1]) == in_sub)
    run *= static_cast<std::size_t>(domain[static_cast<std::size_t>(c[--t])]);
  run_ = std::max<std::size_t>(run, 1);
  step_ = in_sub;
  base_.resize(map.size() / run_);
  for (std::size_t r = 0; r < base_.size(); ++r) base_[r] = map[r * run_];
}

void SubsetMap::sum_to(const std::vector<double>& v, std::vector<double>& out, std::size_t out_cells) const {
  out.assign(out_cells, 0.0);
  const double* x = v.data();
  for (const std::uint32_t b : base_) {
    double* dst = out.data() + b;
    if (step_) {
      for (std::size_t t = 0; t < run_; ++t) dst[t] += x[t];
    } else {
      double acc = *dst;  // one cell's additions, in cell order
      for (std::size_t t = 0; t < run_; ++t) acc += x[t];
      *dst = acc;
    }
    x += run_;
  }
}

// ---------------------------------------------------------------- junction tree

std::vector<Clique> JunctionTree::triangulate_by_definition(const std::vector<Clique>& cliques, std::size_t attributes) {
  const std::size_t d = attributes;
  check_attributes(cliques, d);
  std::vector<std::vector<char>> adj(d, std::vector<char>(d, 0));
  for (const Clique& c : cliques)
    for (const int a : c) {
      for (const int b : c)
        if (a != b) adj[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = 1;
    }
  std::vector<char> alive(d, 1);
  std::vector<Clique> elim;
  std::vector<int> nb;
  for (std::size_t step = 0; step < d; ++step) {
    std::size_t best = d, best_fill = 0, best_deg = 0;
    for (std::size_t v = 0; v < d; ++v) {
      if (!alive[v]) continue;
      nb.clear();
      for (std::size_t u = 0; u < d; ++u)
        if (alive[u] && adj[v][u]) nb.push_back(static_cast<int>(u));
      std::size_t fill = 0;
      for (std::size_t i = 0; i < nb.size(); ++i)
        for (std::size_t j = i + 1; j < nb.size(); ++j)
          fill += !adj[static_cast<std::size_t>(nb[i])][static_cast<std::size_t>(nb[j])];
      if (best == d || fill < best_fill || (fill == best_fill && nb.size() < best_deg)) {
        best = v;
        best_fill = fill;
        best_deg = nb.size();
      }
    }
    Clique c{static_cast<int>(best)};
    for (std::size_t u = 0; u < d; ++u)
      if (alive[u] && adj[best][u]) c.push_back(static_cast<int>(u));
    std::sort(c.begin(), c.end());
    for (const int a : c)
      for (const int b : c)
        if (a != b) adj[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = 1;
    alive[best] = 0;
    elim.push_back(std::move(c));
  }
  // Keep the maximal ones, in elimination order.
  std::vector<Clique> out;
  for (std::size_t i = 0; i < elim.size(); ++i) {
    bool maximal = true;
    for (std::size_t j = 0; j < elim.size() && maximal; ++j)
      if (j != i && is_subset(elim[i], elim[j]) && (elim[i].size() < elim[j].size() || j < i)) maximal = false;
    if (maximal) out.push_back(elim[i]);
  }
  return out;
}

// Min-fill elimination with neighbour sets as bit masks of W = ceil(d / 64) words: a vertex's
// fill is C(deg, 2) minus the edges among its neighbours, one popcount per neighbour (the
// definition above counts the pairs one by one). Same order of candidates, same ties.
std::vector<Clique> JunctionTree::triangulate(const std::vector<Clique>& cliques, std::size_t attributes,
                                              const Clique* extra) {
  const std::size_t d = attributes, words = (d + 63) / 64;
  check_attributes(cliques, d);
  if (extra) check_attributes({*extra}, d);
  std::vector<std::uint64_t> adj(d * words, 0), alive(words, 0), nb(words), mask(words);
  const auto row = [&](std::size_t v) { return adj.data() + v * words; };
  for (std::size_t v = 0; v < d; ++v) alive[v >> 6] |= std::uint64_t{1} << (v & 63);
  for (std::size_t i = 0; i < cliques.size() + (extra != nullptr); ++i) {
    const Clique& c = i < cliques.size() ? cliques[i] : *extra;
    std::fill(mask.begin(), mask.end(), 0);
    for (const int a : c) mask[static_cast<std::size_t>(a) >> 6] |= std::uint64_t{1} << (a & 63);
    for (const int a : c) {
      std::uint64_t* r = row(static_cast<std::size_t>(a));
      for (std::size_t w = 0; w < words; ++w) r[w] |= mask[w];
      r[static_cast<std::size_t>(a) >> 6] &= ~(std::uint64_t{1} << (a & 63));
    }
  }
  // An attribute in no clique of two or more has fill 0 and degree 0, the least there is, and
  // eliminating it changes no other attribute's: min-fill eliminates every such attribute
  // first, in index order, each a clique of its own that no other clique contains (nor is
  // contained in). So they are set aside at once, and the search below (AIM runs it for every
  // candidate of every round, on models where most attributes are still on their own) runs over
  // the others only. The cliques and their order are those of the search over all attributes.
  std::vector<Clique> elim;
  std::size_t remaining = 0;
  for (std::size_t v = 0; v < d; ++v) {
    const std::uint64_t* r = row(v);
    if (std::all_of(r, r + words, [](std::uint64_t x) { return x == 0; })) {
      elim.push_back({static_cast<int>(v)});
      alive[v >> 6] &= ~(std::uint64_t{1} << (v & 63));
    } else {
      ++remaining;
    }
  }
  const std::size_t isolated = elim.size();
  std::vector<std::size_t> members;
  for (std::size_t step = 0; step < remaining; ++step) {
    std::size_t best = d, best_fill = 0, best_deg = 0;
    for (std::size_t aw = 0; aw < words; ++aw) {
      for (std::uint64_t live = alive[aw]; live; live &= live - 1) {  // the live attributes, in index order
        const std::size_t v = aw * 64 + static_cast<std::size_t>(std::countr_zero(live));
        std::size_t deg = 0, adjacent2 = 0;  // adjacent2: ordered pairs of adjacent neighbours
        for (std::size_t w = 0; w < words; ++w) {
          nb[w] = row(v)[w] & alive[w];
          deg += static_cast<std::size_t>(std::popcount(nb[w]));
        }
        for (std::size_t w = 0; w < words; ++w)
          for (std::uint64_t bits = nb[w]; bits; bits &= bits - 1) {
            const std::uint64_t* ru = row(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
            for (std::size_t x = 0; x < words; ++x) adjacent2 += static_cast<std::size_t>(std::popcount(ru[x] & nb[x]));
          }
        const std::size_t fill = deg * (deg - (deg > 0)) / 2 - adjacent2 / 2;
        if (best == d || fill < best_fill || (fill == best_fill && deg < best_deg)) {
          best = v;
          best_fill = fill;
          best_deg = deg;
        }
      }
    }
    // The eliminated clique: best and its live neighbours, made pairwise adjacent.
    for (std::size_t w = 0; w < words; ++w) mask[w] = row(best)[w] & alive[w];
    mask[best >> 6] |= std::uint64_t{1} << (best & 63);
    members.clear();
    for (std::size_t w = 0; w < words; ++w)
      for (std::uint64_t bits = mask[w]; bits; bits &= bits - 1)
        members.push_back(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
    for (const std::size_t a : members) {
      std::uint64_t* r = row(a);
      for (std::size_t w = 0; w < words; ++w) r[w] |= mask[w];
      r[a >> 6] &= ~(std::uint64_t{1} << (a & 63));
    }
    alive[best >> 6] &= ~(std::uint64_t{1} << (best & 63));
    elim.emplace_back(members.begin(), members.end());  // ascending: sorted
  }
  // Keep the maximal ones, in elimination order (as the definition: a clique inside another is
  // dropped, and of two equal ones the first is kept).
  std::vector<std::uint64_t> sets(elim.size() * words, 0);
  for (std::size_t i = 0; i < elim.size(); ++i)
    for (const int a : elim[i]) sets[i * words + (static_cast<std::size_t>(a) >> 6)] |= std::uint64_t{1} << (a & 63);
  const auto inside = [&](std::size_t i, std::size_t j) {
    for (std::size_t w = 0; w < words; ++w)
      if (sets[i * words + w] & ~sets[j * words + w]) return false;
    return true;
  };
  std::vector<Clique> out(elim.begin(), elim.begin() + static_cast<std::ptrdiff_t>(isolated));  // maximal, above
  for (std::size_t i = isolated; i < elim.size(); ++i) {
    bool maximal = true;
    for (std::size_t j = isolated; j < elim.size() && maximal; ++j)
      if (j != i && inside(i, j) && (elim[i].size() < elim[j].size() || j < i)) maximal = false;
    if (maximal) out.push_back(elim[i]);
  }
  return out;
}

double JunctionTree::size_of(const std::vector<Clique>& cliques, const std::vector<int>& domain, const Clique* extra) {
  double cells = 0;
  for (const Clique& c : triangulate(cliques, domain.size(), extra)) cells += clique_cells(c, domain);
  return cells;
}

JunctionTree JunctionTree::build(const std::vector<Clique>& cliques, const std::vector<int>& domain) {
  JunctionTree t;
  t.cliques_ = triangulate(cliques, domain.size());
  const std::size_t k = t.cliques_.size();
  // Maximum spanning tree of the clique graph (weight: separator size), Kruskal.
  struct Edge {
    std::size_t w, a, b;
  };
  std::vector<Edge> edges;
  for (std::size_t a = 0; a < k; ++a)
    for (std::size_t b = a + 1; b < k; ++b)
      edges.push_back({set_intersection(t.cliques_[a], t.cliques_[b]).size(), a, b});
  std::stable_sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.w > y.w; });
  std::vector<std::size_t> comp(k);
  std::iota(comp.begin(), comp.end(), std::size_t{0});
  auto find = [&](std::size_t x) {
    while (comp[x] != x) x = comp[x] = comp[comp[x]];
    return x;
  };
  std::vector<std::vector<std::size_t>> nbr(k);
  for (const Edge& e : edges) {
    const std::size_t ra = find(e.a), rb = find(e.b);
    if (ra == rb) continue;
    comp[ra] = rb;
    nbr[e.a].push_back(e.b);
    nbr[e.b].push_back(e.a);
  }
  t.parent_.assign(k, -1);
  t.sep_.assign(k, Clique{});
  std::vector<char> seen(k, 0);
  t.order_.push_back(0);
  seen[0] = 1;
  for (std::size_t i = 0; i < t.order_.size(); ++i) {
    const auto c = static_cast<std::size_t>(t.order_[i]);
    for (const std::size_t ch : nbr[c]) {
      if (seen[ch]) continue;
      seen[ch] = 1;
      t.parent_[ch] = static_cast<int>(c);
      t.sep_[ch] = set_intersection(t.cliques_[ch], t.cliques_[c]);
      t.order_.push_back(static_cast<int>(ch));
    }
  }
  t.home_.assign(domain.size(), -1);
  for (std::size_t c = 0; c < k; ++c)
    for (const int a : t.cliques_[c])
      if (t.home_[static_cast<std::size_t>(a)] < 0) t.home_[static_cast<std::size_t>(a)] = static_cast<int>(c);
  return t;
}

// With the tree rooted at order()[0]: a clique is in the subtree when some needed clique lies
// below it and either another lies outside its subtree, or it is needed itself, or two of its
// children's subtrees hold one (it joins them). One pass up the tree instead of pruning leaves.
std::vector<char> JunctionTree::spanning_subtree(const std::vector<char>& needed) const {
  const std::size_t k = cliques_.size();
  std::vector<std::size_t> below(k, 0), branches(k, 0);
  std::size_t total = 0;
  for (std::size_t c = 0; c < k; ++c) total += needed[c] ? 1 : 0;
  for (std::size_t i = order_.size(); i-- > 0;) {
    const auto c = static_cast<std::size_t>(order_[i]);
    below[c] += needed[c] ? 1 : 0;
    if (parent_[c] >= 0 && below[c] > 0) {
      below[static_cast<std::size_t>(parent_[c])] += below[c];
      ++branches[static_cast<std::size_t>(parent_[c])];
    }
  }
  std::vector<char> in(k, 0);
  for (std::size_t c = 0; c < k; ++c)
    in[c] = below[c] > 0 && (below[c] < total || needed[c] || branches[c] >= 2);
  return in;
}

int JunctionTree::containing(const Clique& sub) const {
  for (std::size_t c = 0; c < cliques_.size(); ++c)
    if (is_subset(sub, cliques_[c])) return static_cast<int>(c);
  return -1;
}

// ---------------------------------------------------------------- model

GraphicalModel::GraphicalModel(std::vector<int> domain, const std::vector<Clique>& potentials)
    : domain_(std::move(domain)) {
  for (std::size_t j = 0; j < domain_.size(); ++j)
    if (domain_[j] < 1 || domain_[j] > 65535)
      throw UsageError("private-pgm: attribute " + std::to_string(j) + " has " + std::to_string(domain_[j]) +
                       " values; expected 1..65535");
  tree_ = JunctionTree::build(potentials, domain_);
  for (const Clique& c : potentials)
    theta_.emplace(c, std::vector<double>(static_cast<std::size_t>(clique_cells(c, domain_)), 0.0));
  const std::size_t k = tree_.cliques().size();
  std::vector<const Clique*> pc;
  for (const auto& [c, th] : theta_) pc.push_back(&c);
  // A potential inside a larger one with the same home is folded into it (added to the larger
  // table, its marginal summed from the larger one's): one pass over the home clique per
  // unfolded potential instead of one per potential.
  for (std::size_t m = 0; m < pc.size(); ++m) {
    const int home = tree_.containing(*pc[m]);
    theta_home_.push_back(home);
  }
  fold_parent_.assign(pc.size(), -1);
  fold_map_.resize(pc.size());
  theta_map_.resize(pc.size());
  for (std::size_t m = 0; m < pc.size(); ++m) {
    std::size_t best = pc.size();
    for (std::size_t q = 0; q < pc.size(); ++q)
      if (q != m && theta_home_[q] == theta_home_[m] && pc[q]->size() > pc[m]->size() && is_subset(*pc[m], *pc[q]) &&
          (best == pc.size() || pc[q]->size() > pc[best]->size()))
        best = q;
    if (best < pc.size()) {
      fold_parent_[m] = static_cast<int>(best);
      fold_map_[m] = SubsetMap(*pc[best], *pc[m], domain_);
    } else {
      theta_map_[m] = SubsetMap(tree_.cliques()[static_cast<std::size_t>(theta_home_[m])], *pc[m], domain_);
    }
  }
  fold_order_.resize(pc.size());
  std::iota(fold_order_.begin(), fold_order_.end(), std::size_t{0});
  std::stable_sort(fold_order_.begin(), fold_order_.end(),
                   [&](std::size_t a, std::size_t b) { return pc[a]->size() < pc[b]->size(); });
  acc_.resize(pc.size());
  sep_map_.resize(k);
  par_map_.resize(k);
  for (std::size_t c = 0; c < k; ++c) {
    sep_map_[c] = SubsetMap(tree_.cliques()[c], tree_.separator(c), domain_);
    if (tree_.parent(c) >= 0)
      par_map_[c] = SubsetMap(tree_.cliques()[static_cast<std::size_t>(tree_.parent(c))], tree_.separator(c), domain_);
  }
  marg_.resize(k);
  work_.resize(k);
  up_.resize(k);
  for (std::size_t c = 0; c < k; ++c) {
    marg_[c].assign(static_cast<std::size_t>(clique_cells(tree_.cliques()[c], domain_)), 0.0);
    work_[c].assign(marg_[c].size(), 0.0);
  }
}

void GraphicalModel::calibrate() {
  const std::size_t k = tree_.cliques().size();
  cond_.clear();  // made from the former marginals
  one_way_.clear();
  // Clique tables exp(theta_C - max theta_C), theta_C the sum of the potentials homed at C.
  for (std::size_t c = 0; c < k; ++c) std::fill(work_[c].begin(), work_[c].end(), 0.0);
  {
    std::size_t m = 0;
    for (const auto& [cl, th] : theta_) acc_[m++] = th;
    // Smaller potentials into their fold parents first (sizes increase along a chain).
    for (const std::size_t q : fold_order_) {
      if (fold_parent_[q] < 0) continue;
      std::vector<double>& big = acc_[static_cast<std::size_t>(fold_parent_[q])];
      const std::vector<double>& small = acc_[q];
      fold_map_[q].combine(big, small, big, std::plus<>());
    }
    for (m = 0; m < acc_.size(); ++m) {
      if (fold_parent_[m] >= 0) continue;
      std::vector<double>& w = work_[static_cast<std::size_t>(theta_home_[m])];
      theta_map_[m].combine(w, acc_[m], w, std::plus<>());
    }
  }
  // The model's inference, not a mechanism: libmvec's exp, four values a call (core/vector_math.hpp).
  for (std::size_t c = 0; c < k; ++c) {
    std::vector<double>& w = work_[c];
    exp_shifted(w.data(), w.size(), largest(w));
  }
  // Up: children before parents.
  const std::vector<int>& order = tree_.order();
  std::vector<double> tmp;
  for (std::size_t i = order.size(); i-- > 1;) {
    const auto c = static_cast<std::size_t>(order[i]);
    const auto p = static_cast<std::size_t>(tree_.parent(c));
    const std::size_t sc = static_cast<std::size_t>(clique_cells(tree_.separator(c), domain_));
    sep_map_[c].sum_to(work_[c], up_[c], sc);
    normalise(up_[c]);
    par_map_[c].combine(work_[p], up_[c], work_[p], std::multiplies<>());
  }
  // Down: the root's belief, then each child's from its parent's.
  const auto root = static_cast<std::size_t>(order[0]);
  marg_[root] = work_[root];
  normalise(marg_[root]);
  for (std::size_t i = 1; i < order.size(); ++i) {
    const auto c = static_cast<std::size_t>(order[i]);
    const auto p = static_cast<std::size_t>(tree_.parent(c));
    const std::size_t sc = static_cast<std::size_t>(clique_cells(tree_.separator(c), domain_));
    par_map_[c].sum_to(marg_[p], tmp, sc);
    for (std::size_t s = 0; s < sc; ++s) tmp[s] = up_[c][s] > 0 ? tmp[s] / up_[c][s] : 0.0;
    sep_map_[c].combine(work_[c], tmp, marg_[c], std::multiplies<>());
    normalise(marg_[c]);
  }
}

void GraphicalModel::potential_marginals(std::vector<std::vector<double>>& mu) const {
  mu.resize(theta_.size());
  std::size_t m = 0;
  for (const auto& [c, th] : theta_) {
    if (fold_parent_[m] < 0)
      theta_map_[m].sum_to(marg_[static_cast<std::size_t>(theta_home_[m])], mu[m], th.size());
    ++m;
  }
  // Folded ones from their parents, larger first.
  std::vector<std::size_t> sizes;
  for (const auto& [c, th] : theta_) sizes.push_back(th.size());
  for (std::size_t i = fold_order_.size(); i-- > 0;) {
    const std::size_t q = fold_order_[i];
    if (fold_parent_[q] >= 0) fold_map_[q].sum_to(mu[static_cast<std::size_t>(fold_parent_[q])], mu[q], sizes[q]);
  }
}

std::vector<double> GraphicalModel::marginal(const Clique& attrs) const { return marginal(attrs, nullptr); }

std::vector<double> GraphicalModel::marginal(const Clique& attrs, const std::map<Clique, std::vector<double>>* known) const {
  const int home = tree_.containing(attrs);
  std::vector<double> out;
  if (home >= 0) {
    const auto h = static_cast<std::size_t>(home);
    marginalise_to(marg_[h], tree_.cliques()[h], attrs, domain_, out);
    return out;
  }
  // The smallest subtree covering the attributes.
  const std::size_t k = tree_.cliques().size();
  std::vector<char> need(k, 0);
  for (const int a : attrs) {
    const int c = a >= 0 && static_cast<std::size_t>(a) < domain_.size() ? tree_.home(a) : -1;
    if (c < 0) throw UsageError("private-pgm: attribute " + std::to_string(a) + " is not in the model");
    need[static_cast<std::size_t>(c)] = 1;
  }
  const std::vector<char> in = tree_.spanning_subtree(need);
  // Cliques joined by an empty separator are independent in the model (its joint is the product
  // of the clique marginals over the separator marginals, and an empty separator's is 1), so the
  // marginal is the product of the marginals of the attributes on each side: the subtree is cut
  // at its empty separators and each part's attributes are summed over that part alone (each
  // part's own spanning subtree lies inside it, so the recursion cuts nothing more).
  {
    std::vector<int> part(k, -1);
    int parts = 0;
    for (const int c : tree_.order()) {
      const auto cu = static_cast<std::size_t>(c);
      if (!in[cu]) continue;
      const int p = tree_.parent(cu);
      part[cu] = p >= 0 && in[static_cast<std::size_t>(p)] && !tree_.separator(cu).empty() ? part[static_cast<std::size_t>(p)]
                                                                                              : parts++;
    }
    if (parts > 1) {
      std::vector<Clique> sub(static_cast<std::size_t>(parts));
      for (const int a : attrs) sub[static_cast<std::size_t>(part[static_cast<std::size_t>(tree_.home(a))])].push_back(a);
      const auto kept = [&](const Clique& s) -> const std::vector<double>* {
        if (!known) return nullptr;
        const auto it = known->find(s);
        return it == known->end() ? nullptr : &it->second;
      };
      out.assign(static_cast<std::size_t>(clique_cells(attrs, domain_)), 1.0);
      for (const Clique& s : sub) {
        if (s.empty()) continue;
        // The same numbers as marginal(s), made once where they were kept.
        std::vector<double> made;
        const std::vector<double>* m = nullptr;
        if (s.size() == 1 && one_way_.size() == domain_.size()) {
          m = &one_way_[static_cast<std::size_t>(s[0])];
        } else if (const std::vector<double>* k = kept(s)) {
          m = k;
        } else {
          made = marginal(s);
          m = &made;
        }
        for_each_sub_index(attrs, s, domain_, [&](std::size_t j, std::uint64_t idx) { out[j] *= (*m)[idx]; });
      }
      normalise(out);
      return out;
    }
  }
  // Factors: the subtree's top clique's marginal, every other clique's conditional given its
  // separator with its parent (both in the subtree): their product is the subtree's joint. The
  // model's tables are read in place (conditionals from prepare_conditionals() when made).
  struct Table {
    Clique attrs;
    const std::vector<double>* values = nullptr;
  };
  std::deque<std::vector<double>> made;  // tables made here (a deque keeps their addresses)
  std::vector<Table> fs;
  for (std::size_t c = 0; c < k; ++c) {
    if (!in[c]) continue;
    const int p = tree_.parent(c);
    if (p < 0 || !in[static_cast<std::size_t>(p)]) fs.push_back({tree_.cliques()[c], &marg_[c]});
    else if (cond_.size() == k) fs.push_back({tree_.cliques()[c], &cond_[c]});
    else fs.push_back({tree_.cliques()[c], &made.emplace_back(conditional(c))});
  }
  auto product_scope = [&](int v) {
    Clique u;
    for (const Table& f : fs)
      if (std::binary_search(f.attrs.begin(), f.attrs.end(), v)) u = set_union(u, f.attrs);
    return u;
  };
  auto multiply = [&](const std::vector<const Table*>& parts, const Clique& scope) {
    const double cells = clique_cells(scope, domain_);
    if (cells > kMaxEliminationCells)
      throw UsageError("private-pgm: the marginal over " + clique_text(attrs) + " needs an intermediate table of " +
                       std::to_string(cells) + " cells (at most 2^27)");
    std::vector<double> r(static_cast<std::size_t>(cells), 1.0);
    for (const Table* f : parts) {
      const std::vector<double>& v = *f->values;
      for_each_sub_index(scope, f->attrs, domain_, [&](std::size_t j, std::uint64_t idx) { r[j] *= v[idx]; });
    }
    return r;
  };
  // Variable elimination of everything else, cheapest product first.
  for (;;) {
    Clique all;
    for (const Table& f : fs) all = set_union(all, f.attrs);
    const Clique rest = set_difference(all, attrs);
    if (rest.empty()) break;
    int best = rest[0];
    double best_cells = std::numeric_limits<double>::infinity();
    for (const int v : rest) {
      const double cells = clique_cells(product_scope(v), domain_);
      if (cells < best_cells) best_cells = cells, best = v;
    }
    const Clique scope = product_scope(best);
    std::vector<const Table*> parts;
    std::vector<Table> keep;
    for (const Table& f : fs)
      if (std::binary_search(f.attrs.begin(), f.attrs.end(), best)) parts.push_back(&f);
    const std::vector<double> prod = multiply(parts, scope);
    const Clique reduced = set_difference(scope, Clique{best});
    std::vector<double> summed;
    marginalise_to(prod, scope, reduced, domain_, summed);
    for (Table& f : fs)
      if (!std::binary_search(f.attrs.begin(), f.attrs.end(), best)) keep.push_back(std::move(f));
    keep.push_back({reduced, &made.emplace_back(std::move(summed))});
    fs = std::move(keep);
  }
  std::vector<const Table*> parts;
  for (const Table& f : fs) parts.push_back(&f);
  out = multiply(parts, attrs);
  normalise(out);
  return out;
}

void GraphicalModel::for_each_marginal(const std::vector<Clique>& sets,
                                      const std::function<void(std::size_t, const std::vector<double>*)>& f) const {
  std::vector<std::size_t> order(sets.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sets[a].size() < sets[b].size(); });
  const std::size_t largest = sets.empty() ? 0 : sets[order.back()].size();
  std::map<Clique, std::vector<double>> known;  // the sets smaller than the largest: parts of larger ones
  for (std::size_t lo = 0; lo < order.size();) {
    std::size_t hi = lo;
    while (hi < order.size() && sets[order[hi]].size() == sets[order[lo]].size()) ++hi;
    const bool keep = sets[order[lo]].size() < largest;
    std::vector<std::vector<double>> kept(keep ? hi - lo : 0);
    std::vector<char> made(keep ? hi - lo : 0, 0);
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t i = lo; i < hi; ++i) {
      const std::size_t set = order[i];
      std::vector<double> m;
      bool ok = true;
      try {
        m = marginal(sets[set], &known);
      } catch (const std::exception&) {  // an intermediate table too large (or no memory for it)
        ok = false;
      }
      f(set, ok ? &m : nullptr);
      if (keep && ok) {
        kept[i - lo] = std::move(m);
        made[i - lo] = 1;
      }
    }
    for (std::size_t i = lo; keep && i < hi; ++i)
      if (made[i - lo]) known.emplace(sets[order[i]], std::move(kept[i - lo]));
    lo = hi;
  }
}

// Clique c's table divided by its separator marginal (0 where that is 0): c's conditional given
// its separator with the parent.
std::vector<double> GraphicalModel::conditional(std::size_t c) const {
  std::vector<double> sm, out;
  sep_map_[c].sum_to(marg_[c], sm, static_cast<std::size_t>(clique_cells(tree_.separator(c), domain_)));
  sep_map_[c].combine(marg_[c], sm, out, [](double x, double s) { return s > 0 ? x / s : 0.0; });
  return out;
}

void GraphicalModel::prepare_conditionals() {
  const std::size_t k = tree_.cliques().size();
  std::vector<std::vector<double>> cond(k);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t c = 0; c < k; ++c)
    if (tree_.parent(c) >= 0) cond[c] = conditional(c);
  cond_ = std::move(cond);
  std::vector<std::vector<double>> one_way(domain_.size());
#pragma omp parallel for schedule(dynamic)
  for (std::size_t a = 0; a < domain_.size(); ++a) one_way[a] = marginal({static_cast<int>(a)});
  one_way_ = std::move(one_way);
}

std::vector<std::uint16_t> GraphicalModel::sample(std::size_t rows, std::uint64_t seed) const {
  const std::size_t d = domain_.size(), k = tree_.cliques().size();
  // Per clique: the conditional of its new attributes given its separator, laid out
  // [separator cell][new cell], as running sums per separator cell.
  struct Cond {
    Clique fresh;                           // attributes not in the separator
    std::vector<std::uint64_t> sep_stride;  // separator attributes' strides (in separator order)
    std::size_t sep_cells = 1, fresh_cells = 1;
    std::vector<double> cum;
  };
  std::vector<Cond> conds(k);
  for (std::size_t c = 0; c < k; ++c) {
    Cond& cd = conds[c];
    const Clique& cl = tree_.cliques()[c];
    const Clique& sep = tree_.separator(c);
    cd.fresh = set_difference(cl, sep);
    cd.sep_cells = static_cast<std::size_t>(clique_cells(sep, domain_));
    cd.fresh_cells = static_cast<std::size_t>(clique_cells(cd.fresh, domain_));
    cd.sep_stride.assign(sep.size(), 1);
    for (std::size_t i = sep.size(); i-- > 1;)
      cd.sep_stride[i - 1] = cd.sep_stride[i] * static_cast<std::uint64_t>(domain_[static_cast<std::size_t>(sep[i])]);
    const auto fmap = index_map(cl, cd.fresh, domain_);
    cd.cum.assign(cd.sep_cells * cd.fresh_cells, 0.0);
    for (std::size_t j = 0; j < marg_[c].size(); ++j) cd.cum[sep_map_[c][j] * cd.fresh_cells + fmap[j]] = marg_[c][j];
    for (std::size_t s = 0; s < cd.sep_cells; ++s) {
      double run = 0;
      for (std::size_t f = 0; f < cd.fresh_cells; ++f)
        cd.cum[s * cd.fresh_cells + f] = (run += cd.cum[s * cd.fresh_cells + f]);
    }
  }
  std::vector<std::uint16_t> out(rows * d);
  const std::size_t blocks = (rows + kPgmSampleBlock - 1) / kPgmSampleBlock;
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
  for (std::ptrdiff_t blk = 0; blk < static_cast<std::ptrdiff_t>(blocks); ++blk) {
    SeededRandom rng(derive_seed(seed, static_cast<std::uint64_t>(blk)));
    const std::size_t r0 = static_cast<std::size_t>(blk) * kPgmSampleBlock, r1 = std::min(rows, r0 + kPgmSampleBlock);
    for (std::size_t r = r0; r < r1; ++r) {
      std::uint16_t* row = &out[r * d];
      for (const int ci : tree_.order()) {
        const auto c = static_cast<std::size_t>(ci);
        const Cond& cd = conds[c];
        const Clique& sep = tree_.separator(c);
        std::size_t s = 0;
        for (std::size_t i = 0; i < sep.size(); ++i) s += row[static_cast<std::size_t>(sep[i])] * cd.sep_stride[i];
        std::size_t f = draw_cumulative(&cd.cum[s * cd.fresh_cells], cd.fresh_cells, rng);
        for (std::size_t i = cd.fresh.size(); i-- > 0;) {
          const auto a = static_cast<std::size_t>(cd.fresh[i]);
          const auto sz = static_cast<std::size_t>(domain_[a]);
          row[a] = static_cast<std::uint16_t>(f % sz);
          f /= sz;
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- estimation

namespace {

struct Grouped {
  std::vector<Clique> cliques;                    // distinct, in map order
  std::vector<std::vector<std::size_t>> members;  // measurements of each
};

Grouped group_measurements(const std::vector<Measurement>& ms) {
  std::map<Clique, std::vector<std::size_t>> by;
  for (std::size_t i = 0; i < ms.size(); ++i) by[ms[i].clique].push_back(i);
  Grouped g;
  for (auto& [c, v] : by) {
    g.cliques.push_back(c);
    g.members.push_back(std::move(v));
  }
  return g;
}

// Model marginal (probabilities) of each distinct clique: the model's potentials are exactly
// these cliques, in the same (map) order.
void clique_marginals(const GraphicalModel& model, const Grouped& g, std::vector<std::vector<double>>& mu) {
  if (model.potentials().size() == g.cliques.size()) {
    model.potential_marginals(mu);
    return;
  }
  mu.resize(g.cliques.size());
  for (std::size_t i = 0; i < g.cliques.size(); ++i) mu[i] = model.marginal(g.cliques[i]);
}

double loss_and_gradient(const std::vector<Measurement>& ms, const Grouped& g,
                         const std::vector<std::vector<double>>& mu, double n, std::vector<std::vector<double>>* grad) {
  double loss = 0;
  if (grad) grad->resize(g.cliques.size());
  for (std::size_t i = 0; i < g.cliques.size(); ++i) {
    if (grad) (*grad)[i].assign(mu[i].size(), 0.0);
    for (const std::size_t m : g.members[i]) {
      const double w = 1.0 / (ms[m].sigma * ms[m].sigma);
      for (std::size_t j = 0; j < mu[i].size(); ++j) {
        const double diff = n * mu[i][j] - ms[m].y[j];
        loss += 0.5 * w * diff * diff;
        if (grad) (*grad)[i][j] += n * w * diff;
      }
    }
  }
  return loss;
}

}  // namespace

double estimation_loss(const GraphicalModel& model, const std::vector<Measurement>& measurements) {
  const Grouped g = group_measurements(measurements);
  std::vector<std::vector<double>> mu;
  clique_marginals(model, g, mu);
  return loss_and_gradient(measurements, g, mu, model.total(), nullptr);
}

constexpr double kNegligibleCount = 1e-6;  // records: a cell the scaled steps no longer push down

namespace {

// Every measurement: a clique of distinct attributes of the domain in ascending order, one value
// per cell, a finite sigma > 0.
void check_measurements(const std::vector<int>& domain, const std::vector<Measurement>& measurements) {
  if (measurements.empty()) throw UsageError("private-pgm: no measurements to estimate from");
  for (const Measurement& m : measurements) {
    if (!std::is_sorted(m.clique.begin(), m.clique.end()) ||
        std::adjacent_find(m.clique.begin(), m.clique.end()) != m.clique.end())
      throw UsageError("private-pgm: clique " + clique_text(m.clique) +
                       " must list distinct attributes in ascending order");
    for (const int a : m.clique)
      if (a < 0 || static_cast<std::size_t>(a) >= domain.size())
        throw UsageError("private-pgm: clique " + clique_text(m.clique) + " names attribute " + std::to_string(a) +
                         "; expected attributes 0.." + std::to_string(domain.size() - 1));
    if (static_cast<double>(m.y.size()) != clique_cells(m.clique, domain))
      throw UsageError("private-pgm: measurement of " + clique_text(m.clique) + " has " + std::to_string(m.y.size()) +
                       " values; expected " + std::to_string(clique_cells(m.clique, domain)));
    if (!(m.sigma > 0) || !std::isfinite(m.sigma))
      throw UsageError("private-pgm: measurement of " + clique_text(m.clique) + " has sigma " +
                       std::to_string(m.sigma) + "; expected a finite sigma > 0");
  }
}

// Total: inverse-variance weighted mean of the measurements' sums (Var(sum y) = cells sigma^2),
// at least 1.
double weighted_total(const std::vector<Measurement>& measurements) {
  double num = 0, den = 0;
  for (const Measurement& m : measurements) {
    double s = 0;
    for (const double v : m.y) s += v;
    const double w = 1.0 / (static_cast<double>(m.y.size()) * m.sigma * m.sigma);
    num += w * s;
    den += w;
  }
  return std::max(1.0, num / den);
}

// The descent on the model's potentials: the marginals, loss and gradient at the current point,
// the step's direction, and the Armijo line search along it from the saved potentials.
struct Descent {
  GraphicalModel& model;
  const std::vector<Measurement>& measurements;
  const Grouped& g;
  double n;
  int passes = 1;  // belief-propagation passes
  std::vector<std::vector<double>> mu, mu_new, grad, dir;
  std::map<Clique, std::vector<double>> saved;
  double loss = 0;

  Descent(GraphicalModel& m, const std::vector<Measurement>& ms, const Grouped& grouped, double total)
      : model(m), measurements(ms), g(grouped), n(total) {}

  // theta <- saved + step * direction, then the Armijo test on L; the new loss through *out.
  bool try_step(double step, double* out) {
    std::size_t i = 0;
    for (auto& [c, th] : model.potentials()) {
      const std::vector<double>& s = saved.at(c);
      for (std::size_t j = 0; j < th.size(); ++j) th[j] = s[j] + step * dir[i][j];
      ++i;
    }
    model.calibrate();
    ++passes;
    clique_marginals(model, g, mu_new);
    *out = loss_and_gradient(measurements, g, mu_new, n, nullptr);
    double expected = 0;
    for (std::size_t q = 0; q < mu.size(); ++q)
      for (std::size_t j = 0; j < mu[q].size(); ++j) expected += grad[q][j] * (mu[q][j] - mu_new[q][j]);
    return loss - *out >= 0.5 * expected && *out <= loss;
  }

  // At most `tries` steps, halving `step` after each failure; `grow`: the first was accepted.
  bool search(double& step, int tries, bool& grow, double& new_loss) {
    for (int t = 0; t < tries; ++t) {
      grow = t == 0;
      if (try_step(step, &new_loss)) return true;
      step *= 0.5;
    }
    return false;
  }

  // The scaled direction -(mu - ybar / N) / mu per cell (ybar: the clique's weighted mean
  // measurement), clipped to [-20, 20]: an iterative-proportional-fitting-like step that moves
  // small cells as fast as large ones. A cell whose expected count is already negligible is not
  // pushed further down: a measurement below 0 would drive its potential down by 20 a step for
  // ever, until precision is lost and the line search fails (docs/privacy-baselines.md,
  // "Private-PGM"). `wsum`: per distinct clique, the sum of its measurements' 1 / sigma^2.
  void scaled_direction(const std::vector<double>& wsum) {
    for (std::size_t i = 0; i < g.cliques.size(); ++i) {
      dir[i].resize(grad[i].size());
      for (std::size_t j = 0; j < grad[i].size(); ++j) {
        const double d = std::clamp(-grad[i][j] / (n * n * wsum[i] * std::max(mu[i][j], 1e-300)), -20.0, 20.0);
        dir[i][j] = d < 0 && n * mu[i][j] < kNegligibleCount ? 0.0 : d;
      }
    }
  }

  // Mirror descent: minus the gradient.
  void gradient_direction() {
    for (std::size_t i = 0; i < g.cliques.size(); ++i) {
      dir[i].resize(grad[i].size());
      for (std::size_t j = 0; j < grad[i].size(); ++j) dir[i][j] = -grad[i][j];
    }
  }
};

}  // namespace

GraphicalModel estimate(const std::vector<int>& domain, const std::vector<Measurement>& measurements,
                        const EstimationOptions& options, const GraphicalModel* warm) {
  check_measurements(domain, measurements);
  if (options.iterations < 0) throw UsageError("private-pgm: iterations must be at least 0");
  const Grouped g = group_measurements(measurements);
  GraphicalModel model(domain, g.cliques);
  const double n = weighted_total(measurements);
  model.set_total(n);
  double lip = 0;
  for (const Measurement& m : measurements) lip += n * n / (m.sigma * m.sigma);
  auto& theta = model.potentials();
  if (warm)
    for (auto& [c, th] : theta) {
      const auto it = warm->potentials().find(c);
      if (it != warm->potentials().end()) th = it->second;
    }
  model.calibrate();
  Descent d(model, measurements, g, n);
  clique_marginals(model, g, d.mu);
  d.loss = loss_and_gradient(measurements, g, d.mu, n, &d.grad);
  double eta = 1.0 / lip;
  // Per distinct clique: the sum of its measurements' weights 1 / sigma^2.
  std::vector<double> wsum(g.cliques.size(), 0.0);
  for (std::size_t i = 0; i < g.cliques.size(); ++i)
    for (const std::size_t m : g.members[i]) wsum[i] += 1.0 / (measurements[m].sigma * measurements[m].sigma);
  d.dir.resize(g.cliques.size());
  int it = 0;
  bool grow = true, pgrow = true;  // the last step was accepted at its first try: try a longer one
  bool scaled = options.scaled_steps;
  bool gradient_step_next = false;  // a stalled scaled step: the next step is mirror descent
  double pstep = 1.0;
  for (; it < options.iterations; ++it) {
    d.saved = theta;
    bool accepted = false;
    double new_loss = d.loss;
    if (scaled && !gradient_step_next) {
      // Scaled steps while they pass the same Armijo test; at their first failure the descent
      // continues with mirror-descent steps only.
      d.scaled_direction(wsum);
      if (pgrow) pstep = std::min(1.0, 2 * pstep);
      accepted = d.search(pstep, 6, pgrow, new_loss);
      if (!accepted) scaled = false;
    }
    const bool scaled_step = accepted;
    gradient_step_next = false;
    if (!accepted) {
      d.gradient_direction();
      if (grow) eta *= 2;
      accepted = d.search(eta, 40, grow, new_loss);
    }
    if (!accepted) {
      theta = d.saved;
      model.calibrate();
      ++d.passes;
      model.last_stop = "line search failed";
      break;
    }
    const double decrease = d.loss - new_loss;
    d.mu.swap(d.mu_new);
    d.loss = loss_and_gradient(measurements, g, d.mu, n, &d.grad);
    if (decrease <= options.tolerance * d.loss) {
      // The clipped scaled steps can stall short of the optimum (their direction is not the
      // gradient's): only a mirror-descent step that gains nothing ends the fit.
      if (scaled_step) {
        gradient_step_next = true;
        continue;
      }
      ++it;
      model.last_stop = "converged";
      break;
    }
  }
  model.last_iterations = it;
  model.last_bp_passes = d.passes;
  return model;
}

std::vector<double> data_marginal(const std::vector<std::uint16_t>& codes, std::size_t n, const Clique& c,
                                  const std::vector<int>& domain) {
  const auto cells = static_cast<std::size_t>(clique_cells(c, domain));
  std::vector<double> out(cells, 0.0);
  std::vector<std::uint32_t> key(n, 0u);
  for (const int a : c) {
    const auto b = static_cast<std::uint32_t>(domain[static_cast<std::size_t>(a)]);
    const std::uint16_t* col = &codes[static_cast<std::size_t>(a) * n];
    for (std::size_t i = 0; i < n; ++i) key[i] = key[i] * b + col[i];
  }
  for (const std::uint32_t k : key) out[k] += 1.0;
  return out;
}

// ---------------------------------------------------------------- measurement helpers

Measurement measure(const std::vector<std::uint16_t>& codes, std::size_t n, const Clique& c,
                    const std::vector<int>& domain, double sigma, RandomSource& rng) {
  const DiscreteGaussian noise(sigma);
  Measurement m{c, data_marginal(codes, n, c, domain), std::sqrt(noise.sigma2())};
  for (double& v : m.y) v += static_cast<double>(noise.sample(rng));
  return m;
}

std::vector<std::uint16_t> encode_table(const DenseRef& table, const TableBox& box, int bins) {
  const auto n = static_cast<std::size_t>(table.rows()), d = static_cast<std::size_t>(table.cols());
  std::vector<std::uint16_t> codes(n * d);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double t = box.to_unit(j, table(i, static_cast<Eigen::Index>(j)));
      codes[j * n + static_cast<std::size_t>(i)] =
          static_cast<std::uint16_t>(std::min(bins - 1, static_cast<int>(t * bins)));
    }
  return codes;
}

DoubleMatrix decode_rows(const std::vector<std::uint16_t>& bins, std::size_t rows, const TableBox& box, int bin_count,
                         std::uint64_t seed) {
  const std::size_t d = box.dim();
  DoubleMatrix out(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(d));
  const std::size_t blocks = (rows + kPgmSampleBlock - 1) / kPgmSampleBlock;
  const double b = static_cast<double>(bin_count);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::ptrdiff_t blk = 0; blk < static_cast<std::ptrdiff_t>(blocks); ++blk) {
    SeededRandom rng(derive_seed(seed, static_cast<std::uint64_t>(blk)));
    const std::size_t r0 = static_cast<std::size_t>(blk) * kPgmSampleBlock, r1 = std::min(rows, r0 + kPgmSampleBlock);
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t j = 0; j < d; ++j)
        out(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) =
            box.from_unit(j, (static_cast<double>(bins[r * d + j]) + rng.unit()) / b);
  }
  return out;
}

std::size_t exponential_mechanism(const std::vector<double>& scores, double epsilon, double sensitivity,
                                  RandomSource& rng) {
  if (scores.empty()) throw Error("exponential mechanism: no candidates");
  std::vector<double> w(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) w[i] = epsilon * scores[i] / (2.0 * sensitivity);
  const double mx = *std::max_element(w.begin(), w.end());
  double run = 0;
  for (double& x : w) x = (run += std::exp(x - mx));
  return draw_cumulative(w.data(), w.size(), rng);
}

}  // namespace privrace::baselines::pgm

namespace privrace::baselines {

std::pair<std::size_t, std::size_t> PgmSynthesizer::begin_fit(const DenseRef& table, const TableBox& box,
                                                               const SyntheticPrivacy& privacy, int bins) {
  check_synthetic_privacy(privacy, true, name());
  model_.reset();
  const auto n = static_cast<std::size_t>(table.rows());
  const auto d = static_cast<std::size_t>(table.cols());
  if (n == 0 || d == 0)
    throw UsageError(name() + ": the table is empty (" + std::to_string(n) + " x " + std::to_string(d) +
                     "); expected rows and columns");
  box.check(d);
  if (bins < 2 || bins > 65535)
    throw UsageError(name() + ": bins " + std::to_string(bins) + " is invalid; expected 2..65535");
  return {n, d};
}

const pgm::GraphicalModel& PgmSynthesizer::model() const {
  if (!model_) throw UsageError(name() + ": model() before fit()");
  return *model_;
}

DoubleMatrix PgmSynthesizer::sample(std::size_t rows, std::uint64_t seed) const {
  check_synthetic_rows(rows, name());
  if (!model_) throw UsageError(name() + ": sample() before fit()");
  const std::vector<std::uint16_t> bins = model_->sample(rows, derive_seed(seed, 1));
  return pgm::decode_rows(bins, rows, box_, bins_, derive_seed(seed, 2));
}

}  // namespace privrace::baselines
