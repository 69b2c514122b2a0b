#include "privrace/baselines/privbayes.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {
namespace {

// All size-r subsets of `pool` (sorted).
void subsets(const std::vector<int>& pool, std::size_t r, std::size_t start, std::vector<int>& cur,
             std::vector<std::vector<int>>& out) {
  if (cur.size() == r) { out.push_back(cur); return; }
  for (std::size_t i = start; i < pool.size(); ++i) {
    cur.push_back(pool[i]);
    subsets(pool, r, i + 1, cur, out);
    cur.pop_back();
  }
}

// Index into a distribution drawn by inversion; uniform if it has no mass.
std::size_t draw(const double* p, std::size_t len, RandomSource& rng) {
  double total = 0;
  for (std::size_t i = 0; i < len; ++i) total += p[i];
  if (!(total > 0)) return static_cast<std::size_t>(rng.below(len));
  double u = rng.unit() * total;
  for (std::size_t i = 0; i < len; ++i) {
    if (u < p[i]) return i;
    u -= p[i];
  }
  return len - 1;
}

// Synthetic rows per sampling block: each block draws from its own stream, so the rows do not
// depend on the thread count.
constexpr std::size_t kSampleBlock = 4096;

}  // namespace

// Per-thread buffers of the sparse joint counts.
struct PrivBayes::Scratch {
  std::vector<std::uint32_t> keys, tmp;
  std::vector<std::uint32_t> cell_key, cell_count;  // the non-zero cells, ascending key
  std::vector<double> px;
};

PrivBayes::PrivBayes(const DenseRef& train, const TableBox& box, const PrivBayesOptions& opt)
    : box_(box), opt_(opt), n_(static_cast<std::size_t>(train.rows())), d_(static_cast<std::size_t>(train.cols())) {
  if (n_ < 2) throw UsageError("privbayes: the table needs at least 2 rows, got " + std::to_string(n_));
  box.check(d_);
  if (opt.degree < 1) throw UsageError("privbayes: degree must be at least 1");
  if (opt.bins < 2 || opt.bins > 65535) throw UsageError("privbayes: bins must be in 2..65535");
  if (!(opt.beta > 0 && opt.beta < 1)) throw UsageError("privbayes: beta must be in (0, 1)");
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(opt.degree), d_ - 1);
  const double cells = std::pow(static_cast<double>(opt.bins), static_cast<double>(k + 1));
  if (cells > double(1 << 24))
    throw UsageError("privbayes: bins^(k+1) = " + std::to_string(cells) + " cells per marginal is too many (at most 2^24)");
  if (n_ > 0xFFFFFFFFull) throw UsageError("privbayes: at most 2^32 - 1 rows");
  codes_.resize(n_ * d_);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n_); ++i)
    for (std::size_t j = 0; j < d_; ++j) {
      const double t = box.to_unit(j, train(i, static_cast<Eigen::Index>(j)));
      codes_[j * n_ + static_cast<std::size_t>(i)] =
          static_cast<std::uint16_t>(std::min(opt.bins - 1, static_cast<int>(t * opt.bins)));
    }
  // The flat score cache when d * sum_{s<=k} C(d, s) <= 2^22 (32 MiB of scores).
  double total = 0, c = 1;  // c = C(d, s)
  for (std::size_t sz = 0; sz <= k; ++sz) {
    total += c;
    c = c * static_cast<double>(d_ - sz) / static_cast<double>(sz + 1);
  }
  if (total * static_cast<double>(d_) <= double(1 << 22)) {
    binom_.assign(k, std::vector<std::size_t>(d_ + 1, 0));
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t m = i + 1; m <= d_; ++m) {  // C(m, i + 1) = C(m - 1, i + 1) + C(m - 1, i)
        const std::size_t below = i == 0 ? 1 : binom_[i - 1][m - 1];
        binom_[i][m] = binom_[i][m - 1] + below;
      }
    size_offset_.assign(k + 2, 0);
    for (std::size_t sz = 0; sz <= k; ++sz) size_offset_[sz + 1] = size_offset_[sz] + (sz == 0 ? 1 : binom_[sz - 1][d_]);
    subsets_ = size_offset_[k + 1];
    mi_flat_.assign(d_ * subsets_, kNoScore);
  }
}

std::ptrdiff_t PrivBayes::flat_index(int x, const std::vector<int>& parents) const {
  if (mi_flat_.empty() || parents.size() + 1 >= size_offset_.size()) return -1;
  std::size_t rank = size_offset_[parents.size()];
  for (std::size_t i = 0; i < parents.size(); ++i) {
    const int p = parents[i];
    if (p < 0 || static_cast<std::size_t>(p) >= d_ || (i > 0 && p <= parents[i - 1])) return -1;
    rank += binom_[i][static_cast<std::size_t>(p)];
  }
  return static_cast<std::ptrdiff_t>(static_cast<std::size_t>(x) * subsets_ + rank);
}

// keys[i] = (parents..., x) of row i in mixed radix `bins`, x fastest (the joint's cell index).
void PrivBayes::cell_keys(int x, const std::vector<int>& parents, std::vector<std::uint32_t>& keys) const {
  const auto b = static_cast<std::uint32_t>(opt_.bins);
  keys.assign(n_, 0u);
  std::uint32_t* k = keys.data();
  const std::size_t n = n_;
  for (int p : parents) {
    const std::uint16_t* col = &codes_[static_cast<std::size_t>(p) * n_];
    for (std::size_t i = 0; i < n; ++i) k[i] = k[i] * b + col[i];
  }
  const std::uint16_t* col = &codes_[static_cast<std::size_t>(x) * n_];
  for (std::size_t i = 0; i < n; ++i) k[i] = k[i] * b + col[i];
}

// The non-zero cells of the joint of (parents..., x), in ascending cell index, with their counts:
// at most n of them whatever bins^(k+1) is. Joints of at most 2^16 cells (or fewer than the rows)
// are counted directly; larger ones by an LSD radix sort of the rows' cell indices.
void PrivBayes::sparse_counts(int x, const std::vector<int>& parents, Scratch& s) const {
  std::size_t cells = static_cast<std::size_t>(opt_.bins);
  for (std::size_t i = 0; i < parents.size(); ++i) cells *= static_cast<std::size_t>(opt_.bins);
  cell_keys(x, parents, s.keys);
  s.cell_key.clear();
  s.cell_count.clear();
  if (cells <= std::max<std::size_t>(n_, std::size_t{1} << 16)) {
    s.tmp.assign(cells, 0u);
    for (const std::uint32_t key : s.keys) ++s.tmp[key];
    for (std::size_t c = 0; c < cells; ++c)
      if (s.tmp[c]) {
        s.cell_key.push_back(static_cast<std::uint32_t>(c));
        s.cell_count.push_back(s.tmp[c]);
      }
    return;
  }
  const int bits = std::bit_width(static_cast<std::uint64_t>(cells - 1));
  s.tmp.resize(n_);
  for (int shift = 0; shift < bits; shift += 8) {
    std::size_t hist[257] = {};
    for (const std::uint32_t key : s.keys) ++hist[((key >> shift) & 0xFFu) + 1];
    for (int r = 0; r < 256; ++r) hist[r + 1] += hist[r];
    for (const std::uint32_t key : s.keys) s.tmp[hist[(key >> shift) & 0xFFu]++] = key;
    s.keys.swap(s.tmp);
  }
  for (std::size_t i = 0; i < n_;) {
    std::size_t j = i + 1;
    while (j < n_ && s.keys[j] == s.keys[i]) ++j;
    s.cell_key.push_back(s.keys[i]);
    s.cell_count.push_back(static_cast<std::uint32_t>(j - i));
    i = j;
  }
}

std::vector<double> PrivBayes::joint_counts(int x, const std::vector<int>& parents) const {
  const auto b = static_cast<std::size_t>(opt_.bins);
  std::size_t len = b;
  for (std::size_t i = 0; i < parents.size(); ++i) len *= b;
  std::vector<double> out(len, 0.0);
  for (std::size_t i = 0; i < n_; ++i) {
    std::size_t idx = 0;
    for (int p : parents) idx = idx * b + codes_[static_cast<std::size_t>(p) * n_ + i];
    out[idx * b + codes_[static_cast<std::size_t>(x) * n_ + i]] += 1.0;
  }
  return out;
}

double PrivBayes::network_work(std::size_t n, std::size_t d, int degree, int bins) {
  if (d < 2) return 0;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(std::max(degree, 1)), d - 1);
  double combos = 1;  // C(d - 1, k)
  for (std::size_t i = 0; i < k; ++i) combos = combos * static_cast<double>(d - 1 - i) / static_cast<double>(i + 1);
  // One score: a pass over the n rows per attribute of the joint, then either a count over
  // bins^(k+1) cells (small joints) or a radix sort of the n cell indices (large ones).
  const double cells = std::pow(static_cast<double>(bins), static_cast<double>(k + 1));
  const double nd = static_cast<double>(n);
  const double per_score =
      nd * static_cast<double>(k + 1) + (cells <= std::max(nd, 65536.0) ? nd + cells : 3 * nd * std::ceil(std::log2(cells) / 8));
  return static_cast<double>(d) * combos * per_score;
}

double PrivBayes::compute_mi(int x, const std::vector<int>& parents, Scratch& s) const {
  sparse_counts(x, parents, s);
  return mi_of_cells(s);
}

double PrivBayes::mi_of_cells(Scratch& s) const {
  // The same sum as over the dense joint, in the same order (cell index ascending: parents-major,
  // x fastest), skipping the zero cells as the dense sum does: the marginals are integer counts
  // (exact in doubles), so the result is the dense computation's to the last bit.
  const auto b = static_cast<std::uint32_t>(opt_.bins);
  std::vector<double>& px = s.px;
  px.assign(b, 0.0);
  const std::size_t m = s.cell_key.size();
  for (std::size_t c = 0; c < m; ++c) px[s.cell_key[c] % b] += static_cast<double>(s.cell_count[c]);
  const double n = static_cast<double>(n_);
  double mi = 0;
  for (std::size_t c = 0; c < m;) {
    const std::uint32_t p = s.cell_key[c] / b;
    std::size_t e = c;
    double pp = 0;
    for (; e < m && s.cell_key[e] / b == p; ++e) pp += static_cast<double>(s.cell_count[e]);
    for (; c < e; ++c) {
      const double cnt = static_cast<double>(s.cell_count[c]);
      mi += cnt / n * std::log2(cnt * n / (px[s.cell_key[c] % b] * pp));
    }
  }
  return mi;
}

void PrivBayes::compute_mi_group(const std::vector<int>& parents, const std::vector<int>& xs, Scratch& s, double* out) const {
  const auto b = static_cast<std::uint32_t>(opt_.bins);
  std::size_t parent_cells = 1;
  for (std::size_t i = 0; i < parents.size(); ++i) parent_cells *= b;
  const std::size_t cells = parent_cells * b;
  if (cells > std::max<std::size_t>(n_, std::size_t{1} << 16)) {  // large joints: sorted, one by one
    for (std::size_t j = 0; j < xs.size(); ++j) out[j] = compute_mi(xs[j], parents, s);
    return;
  }
  // The parents' cell index of every row, once for the group.
  const std::size_t n = n_;
  s.keys.assign(n, 0u);
  std::uint32_t* key = s.keys.data();
  for (const int p : parents) {
    const std::uint16_t* col = &codes_[static_cast<std::size_t>(p) * n];
    for (std::size_t i = 0; i < n; ++i) key[i] = key[i] * b + col[i];
  }
  // Small joints are counted into four interleaved histograms (rows i, i + 1, i + 2, i + 3 in
  // different ones), so that neighbouring rows in the same cell do not wait on one counter;
  // integer counts, summed exactly.
  const std::size_t ways = cells <= 4096 ? 4 : 1;
  const double nd = static_cast<double>(n);
  std::vector<double>& px = s.px;
  for (std::size_t j = 0; j < xs.size(); ++j) {
    const std::uint16_t* col = &codes_[static_cast<std::size_t>(xs[j]) * n];
    s.tmp.assign(cells * ways, 0u);
    std::uint32_t* h = s.tmp.data();
    std::size_t i = 0;
    if (ways == 4) {
      std::uint32_t* h1 = h + cells;
      std::uint32_t* h2 = h1 + cells;
      std::uint32_t* h3 = h2 + cells;
      for (; i + 4 <= n; i += 4) {
        ++h[key[i] * b + col[i]];
        ++h1[key[i + 1] * b + col[i + 1]];
        ++h2[key[i + 2] * b + col[i + 2]];
        ++h3[key[i + 3] * b + col[i + 3]];
      }
      for (std::size_t c = 0; c < cells; ++c) h[c] += h1[c] + h2[c] + h3[c];
    }
    for (; i < n; ++i) ++h[key[i] * b + col[i]];
    // I from the dense counts: the sum of compute_mi (mi_of_cells) over the same non-zero cells
    // in the same order; px and the parents' counts are integer sums, exact in any order.
    px.assign(b, 0.0);
    for (std::size_t c = 0; c < cells; ++c) px[c % b] += static_cast<double>(h[c]);
    double mi = 0;
    for (std::size_t p = 0; p < parent_cells; ++p) {
      const std::uint32_t* row = h + p * b;
      double pp = 0;
      for (std::uint32_t v = 0; v < b; ++v) pp += static_cast<double>(row[v]);
      if (pp == 0) continue;
      for (std::uint32_t v = 0; v < b; ++v) {
        if (row[v] == 0) continue;
        const double cnt = static_cast<double>(row[v]);
        mi += cnt / nd * std::log2(cnt * nd / (px[v] * pp));
      }
    }
    out[j] = mi;
  }
}

bool PrivBayes::cache_find(int x, const std::vector<int>& parents, double& mi) const {
  if (const std::ptrdiff_t f = flat_index(x, parents); f >= 0) {
    mi = mi_flat_[static_cast<std::size_t>(f)];
    return !std::isnan(mi);
  }
  if (d_ < 1024 && parents.size() <= 5) {
    std::uint64_t packed = static_cast<std::uint64_t>(x);
    for (std::size_t i = 0; i < parents.size(); ++i) packed |= static_cast<std::uint64_t>(parents[i] + 1) << (10 * (i + 1));
    const auto it = mi_cache_packed_.find(packed);
    if (it == mi_cache_packed_.end()) return false;
    mi = it->second;
    return true;
  }
  const auto it = mi_cache_.find(std::make_pair(x, parents));
  if (it == mi_cache_.end()) return false;
  mi = it->second;
  return true;
}

void PrivBayes::cache_store(int x, const std::vector<int>& parents, double mi) const {
  if (const std::ptrdiff_t f = flat_index(x, parents); f >= 0) {
    mi_flat_[static_cast<std::size_t>(f)] = mi;
  } else if (d_ < 1024 && parents.size() <= 5) {
    std::uint64_t packed = static_cast<std::uint64_t>(x);
    for (std::size_t i = 0; i < parents.size(); ++i) packed |= static_cast<std::uint64_t>(parents[i] + 1) << (10 * (i + 1));
    mi_cache_packed_[packed] = mi;
  } else {
    mi_cache_[std::make_pair(x, parents)] = mi;
  }
}

double PrivBayes::mutual_information(int x, const std::vector<int>& parents) const {
  double mi;
  {
    std::shared_lock lock(cache_mutex_.m);
    if (cache_find(x, parents, mi)) return mi;
  }
  Scratch s;
  mi = compute_mi(x, parents, s);
  std::unique_lock lock(cache_mutex_.m);
  ++mi_evaluations_;
  cache_store(x, parents, mi);
  return mi;
}

void PrivBayes::score(const std::vector<std::pair<int, const std::vector<int>*>>& cand, std::vector<double>& out) const {
  out.assign(cand.size(), 0.0);
  std::vector<std::size_t> todo;
  {
    std::shared_lock lock(cache_mutex_.m);  // once for the batch: the greedy search makes millions of lookups
    for (std::size_t c = 0; c < cand.size(); ++c)
      if (!cache_find(cand[c].first, *cand[c].second, out[c])) todo.push_back(c);
  }
  if (todo.empty()) return;
  // The missing scores grouped by parent set (the same vector), in pieces of at most kPiece
  // attributes: one task forms its parents' cell indices once for all its attributes.
  constexpr std::size_t kPiece = 16;
  struct Task {
    const std::vector<int>* parents;
    std::vector<int> xs;
    std::vector<std::size_t> at;  // positions in cand
  };
  std::vector<Task> tasks;
  {
    std::unordered_map<const std::vector<int>*, std::size_t> open;  // parent set -> its task being filled
    for (const std::size_t c : todo) {
      const std::vector<int>* ps = cand[c].second;
      auto it = open.find(ps);
      if (it == open.end() || tasks[it->second].xs.size() == kPiece) {
        tasks.push_back({ps, {}, {}});
        it = open.insert_or_assign(ps, tasks.size() - 1).first;
      }
      tasks[it->second].xs.push_back(cand[c].first);
      tasks[it->second].at.push_back(c);
    }
  }
  // Each score is a deterministic function of the table: computing them concurrently changes
  // no value.
#pragma omp parallel if (tasks.size() > 1)
  {
    Scratch s;
    std::vector<double> mi;
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(tasks.size()); ++t) {
      const Task& task = tasks[static_cast<std::size_t>(t)];
      mi.resize(task.xs.size());
      compute_mi_group(*task.parents, task.xs, s, mi.data());
      for (std::size_t j = 0; j < task.xs.size(); ++j) out[task.at[j]] = mi[j];
    }
  }
  std::unique_lock lock(cache_mutex_.m);
  for (const std::size_t c : todo) cache_store(cand[c].first, *cand[c].second, out[c]);
  mi_evaluations_ += todo.size();
}

double PrivBayes::mi_sensitivity() const {
  const double n = static_cast<double>(n_);
  return std::log2(n) / n + (n - 1) / n * std::log2(n / (n - 1));
}

double PrivBayes::conditional_noise_scale(double epsilon) const {
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(opt_.degree), d_ - 1);
  const double marginals = static_cast<double>(d_ - k);  // >= 1
  const double eps2 = d_ == 1 ? epsilon : (1 - opt_.beta) * epsilon;
  return 4.0 * marginals / (static_cast<double>(n_) * eps2);
}

double PrivBayes::network_epsilon(double epsilon) const { return d_ > 1 ? opt_.beta * epsilon : 0.0; }

PrivBayesModel PrivBayes::fit(double epsilon, RandomSource* rng, PrivBayesNetwork* network_out) const {
  if (rng && (!(epsilon > 0) || !std::isfinite(epsilon)))
    throw UsageError("privbayes: epsilon " + std::to_string(epsilon) + " is invalid; expected a finite epsilon > 0");
  const PrivBayesNetwork net = learn_network(epsilon, rng);
  PrivBayesModel model = noisy_model(net, epsilon, rng);
  if (network_out) *network_out = net;
  return model;
}

PrivBayesNetwork PrivBayes::learn_network(double epsilon, RandomSource* rng) const {
  const std::size_t d = d_;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(opt_.degree), d - 1);
  PrivBayesNetwork net;
  std::vector<int> rest(d);
  std::iota(rest.begin(), rest.end(), 0);
  const std::size_t first = rng ? static_cast<std::size_t>(rng->below(d)) : 0;
  net.order.push_back(static_cast<int>(first));
  net.parents.push_back({});
  rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(first));
  const double eps_step = d > 1 ? opt_.beta * epsilon / static_cast<double>(d - 1) : 0.0;
  const double dI = mi_sensitivity();
  std::vector<std::pair<int, const std::vector<int>*>> cand;
  std::vector<double> score_of;
  while (!rest.empty()) {
    std::vector<int> V = net.order;
    std::sort(V.begin(), V.end());
    std::vector<std::vector<int>> psets;
    std::vector<int> cur;
    subsets(V, std::min(k, V.size()), 0, cur, psets);
    cand.clear();
    for (int x : rest)
      for (std::size_t p = 0; p < psets.size(); ++p) cand.emplace_back(x, &psets[p]);
    score(cand, score_of);
    std::size_t pick;
    if (rng) {
      // Exponential mechanism: Pr ~ exp(eps_step * I / (2 S(I))), through log-sum-exp.
      std::vector<double> logits(score_of.size());
      for (std::size_t c = 0; c < score_of.size(); ++c) logits[c] = eps_step * score_of[c] / (2 * dI);
      const double mx = *std::max_element(logits.begin(), logits.end());
      for (auto& l : logits) l = std::exp(l - mx);
      pick = draw(logits.data(), logits.size(), *rng);
    } else {
      pick = static_cast<std::size_t>(std::max_element(score_of.begin(), score_of.end()) - score_of.begin());
    }
    net.order.push_back(cand[pick].first);
    net.parents.push_back(*cand[pick].second);
    rest.erase(std::find(rest.begin(), rest.end(), cand[pick].first));
  }
  return net;
}

PrivBayesModel PrivBayes::noisy_model(const PrivBayesNetwork& net, double epsilon, RandomSource* rng) const {
  const std::size_t d = d_;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(opt_.degree), d - 1);
  const auto b = static_cast<std::size_t>(opt_.bins);
  // Index i0 = k covers order[0..k] jointly; then one per attribute.
  const std::size_t i0 = k;  // (k <= d - 1)
  std::vector<std::vector<int>> dist_parents(d);
  std::vector<PrivBayesModel::Table> dist(d);
  for (std::size_t i = 0; i <= i0; ++i) {
    dist_parents[i].assign(net.order.begin(), net.order.begin() + static_cast<std::ptrdiff_t>(i));
  }
  // Noise on the integer counts: discrete Laplace of scale n * 4 (d - k) / (n eps2) counts,
  // i.e. conditional_noise_scale(epsilon) in frequency units (rounded up by the sampler).
  // Many cells (bins^(k+1) per distribution, d - k distributions): the table sampler, whose
  // set-up (tens of ms) then pays for itself. Every cell, zero or not, gets its own draw, in
  // cell order, from `rng`.
  std::unique_ptr<DiscreteLaplace> count_noise;
  std::shared_ptr<const ExactGeometric> magnitude;
  if (rng) {
    count_noise = std::make_unique<DiscreteLaplace>(conditional_noise_scale(epsilon) * static_cast<double>(n_));
    const double cells = std::pow(static_cast<double>(b), static_cast<double>(k + 1)) * static_cast<double>(d - k);
    if (cells > 2e5) magnitude = count_noise->bulk_sampler();
  }
  Scratch scratch;
  // The noisy counts go straight into the model's tables (frequencies are formed when read).
  auto noisy = [&](int x, const std::vector<int>& parents) {
    std::size_t len = b;
    for (std::size_t i = 0; i < parents.size(); ++i) len *= b;
    sparse_counts(x, parents, scratch);
    PrivBayesModel::Table c(len);  // zeroed pages, untouched
    for (std::size_t i = 0; i < scratch.cell_key.size(); ++i) c[scratch.cell_key[i]] = scratch.cell_count[i];
    if (count_noise) count_noise->add_to(c, *rng, magnitude.get());
    return c;
  };
  dist[i0] = noisy(net.order[i0], dist_parents[i0]);
  for (std::size_t i = i0 + 1; i < d; ++i) {
    dist_parents[i] = net.parents[i];
    dist[i] = noisy(net.order[i], dist_parents[i]);
  }
  PrivBayesModel model;
  model.box_ = box_;
  model.bins_ = b;
  model.first_ = i0;
  model.n_ = static_cast<double>(n_);
  model.net_ = net;
  model.dist_parents_ = std::move(dist_parents);
  model.dist_ = std::move(dist);
  // The first distribution has bins^(k+1) cells: inversion on its running sums, kept at every
  // kCdfBlock-th cell (the sequential sum of every cell's frequency, as a full table of running
  // sums would hold them).
  const PrivBayesModel::Table& joint = model.dist_[i0];
  const std::size_t B = PrivBayesModel::kCdfBlock;
  model.block_cdf_.resize((joint.size() + B - 1) / B);
  double run = 0;
  const double n = model.n_;
  for (std::size_t j = 0, cell = 0; j < model.block_cdf_.size(); ++j) {
    const std::size_t end = std::min(joint.size(), cell + B);
    for (; cell < end; ++cell) run += static_cast<double>(std::max<std::int64_t>(joint[cell], 0)) / n;
    model.block_cdf_[j] = run;
  }
  return model;
}

std::vector<double> PrivBayesModel::distribution(std::size_t i) const {
  const Table& t = dist_.at(i);
  std::vector<double> p(t.size());
  for (std::size_t c = 0; c < t.size(); ++c) p[c] = static_cast<double>(std::max<std::int64_t>(t[c], 0)) / n_;
  return p;
}

DoubleMatrix PrivBayesModel::sample(std::size_t rows, RandomSource& sampler) const {
  check_synthetic_rows(rows, "privbayes");
  // Order[0..first_] jointly from dist_[first_], then each later attribute from its
  // conditional slice given its parents' sampled bins. Rows come in blocks of kSampleBlock, block
  // j from its own stream seeded derive_seed(base, j) with `base` one word of `sampler`: the
  // same sampler state gives the same rows for any number of threads.
  const std::size_t d = net_.order.size(), b = bins_, i0 = first_;
  DoubleMatrix out(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(d));
  const Table& joint = dist_[i0];
  const double run = block_cdf_.empty() ? 0.0 : block_cdf_.back();
  const double n = n_;
  const std::uint64_t base = sampler.next();
  const std::size_t blocks = (rows + kSampleBlock - 1) / kSampleBlock;
#pragma omp parallel if (blocks > 1)
  {
    std::vector<std::size_t> bin(d);
    std::vector<double> p(b);  // one conditional slice's frequencies
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t blk = 0; blk < static_cast<std::ptrdiff_t>(blocks); ++blk) {
      SeededRandom rng(derive_seed(base, static_cast<std::uint64_t>(blk)));
      const std::size_t s0 = static_cast<std::size_t>(blk) * kSampleBlock, s1 = std::min(rows, s0 + kSampleBlock);
      for (std::size_t s = s0; s < s1; ++s) {
        std::size_t cell;
        if (!(run > 0)) {
          cell = static_cast<std::size_t>(rng.below(joint.size()));
        } else {
          // The first cell whose running sum exceeds u (std::upper_bound over all running sums):
          // its block by the block sums, then the running sum continued inside the block.
          const double u = rng.unit() * run;
          const std::size_t j =
              static_cast<std::size_t>(std::upper_bound(block_cdf_.begin(), block_cdf_.end(), u) - block_cdf_.begin());
          if (j == block_cdf_.size()) {
            cell = joint.size() - 1;
          } else {
            double r = j > 0 ? block_cdf_[j - 1] : 0.0;
            cell = j * kCdfBlock;
            const std::size_t end = std::min(joint.size(), cell + kCdfBlock);
            for (; cell < end; ++cell) {
              r += static_cast<double>(std::max<std::int64_t>(joint[cell], 0)) / n;
              if (u < r) break;
            }
            cell = std::min(cell, joint.size() - 1);
          }
        }
        for (std::size_t i = i0 + 1; i-- > 0;) {
          bin[static_cast<std::size_t>(net_.order[i])] = cell % b;
          cell /= b;
        }
        for (std::size_t i = i0 + 1; i < d; ++i) {
          std::size_t idx = 0;
          for (int q : dist_parents_[i]) idx = idx * b + bin[static_cast<std::size_t>(q)];
          const std::int64_t* c = &dist_[i][idx * b];
          for (std::size_t v = 0; v < b; ++v) p[v] = static_cast<double>(std::max<std::int64_t>(c[v], 0)) / n;
          bin[static_cast<std::size_t>(net_.order[i])] = draw(p.data(), b, rng);
        }
        for (std::size_t j = 0; j < d; ++j)
          out(static_cast<Eigen::Index>(s), static_cast<Eigen::Index>(j)) =
              box_.from_unit(j, (static_cast<double>(bin[j]) + rng.unit()) / static_cast<double>(b));
      }
    }
  }
  return out;
}

void PrivBayesGenerator::fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) {
  check_synthetic_privacy(privacy, false, name());
  model_.reset();
  const PrivBayes pb(table, box, opt_);
  PrivBayesNetwork net;
  model_ = std::make_unique<PrivBayesModel>(pb.fit(privacy.epsilon, &noise, &net));
  const std::size_t d = static_cast<std::size_t>(table.cols());
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(opt_.degree), d - 1);
  const double eps1 = pb.network_epsilon(privacy.epsilon);
  record_ = {{"generator", name()},
             {"epsilon", privacy.epsilon},
             {"delta", 0.0},
             {"neighbors", "replace one record, n public"},
             {"budget_split",
              {{"network", eps1},
               {"per_network_step", d > 1 ? eps1 / static_cast<double>(d - 1) : 0.0},
               {"conditionals", privacy.epsilon - eps1},
               {"beta", opt_.beta}}},
             {"degree", opt_.degree},
             {"bins", opt_.bins},
             {"mi_sensitivity", pb.mi_sensitivity()},
             {"conditional_distributions", std::max<std::size_t>(d - k, 1)},
             {"conditional_noise", "discrete_laplace on counts"},
             {"conditional_noise_scale", pb.conditional_noise_scale(privacy.epsilon)},
             {"network_order", net.order},
             {"network_parents", net.parents},
             {"box", box.to_json()}};
}

DoubleMatrix PrivBayesGenerator::sample(std::size_t rows, std::uint64_t seed) const {
  check_synthetic_rows(rows, name());
  if (!model_) throw UsageError("privbayes: sample() before fit()");
  SeededRandom sampler(seed);
  return model_->sample(rows, sampler);
}

}  // namespace privrace::baselines
