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
  // The same sum as over the dense joint, in the same order (cell index ascending: parents-major,
  // x fastest), skipping the zero cells as the dense sum does: the marginals are integer counts
  // (exact in doubles), so the result is the dense computation's to the last bit.
  sparse_counts(x, parents, s);
  const auto b = static_cast<std::uint32_t>(opt_.bins);
  s.px.assign(b, 0.0);
  const std::size_t m = s.cell_key.size();
  for (std::size_t c = 0; c < m; ++c) s.px[s.cell_key[c] % b] += static_cast<double>(s.cell_count[c]);
  const double n = static_cast<double>(n_);
  double mi = 0;
  for (std::size_t c = 0; c < m;) {
    const std::uint32_t p = s.cell_key[c] / b;
    std::size_t e = c;
    double pp = 0;
    for (; e < m && s.cell_key[e] / b == p; ++e) pp += static_cast<double>(s.cell_count[e]);
    for (; c < e; ++c) {
      const double cnt = static_cast<double>(s.cell_count[c]);
      mi += cnt / n * std::log2(cnt * n / (s.px[s.cell_key[c] % b] * pp));
    }
  }
  return mi;
}

bool PrivBayes::cache_find(int x, const std::vector<int>& parents, double& mi) const {
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
  if (d_ < 1024 && parents.size() <= 5) {
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
  // Each score is a deterministic function of the table: computing them concurrently changes
  // no value. One thread per score (a few ms each on n = 10^5 rows).
#pragma omp parallel if (todo.size() > 1)
  {
    Scratch s;
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(todo.size()); ++t) {
      const std::size_t c = todo[static_cast<std::size_t>(t)];
      out[c] = compute_mi(cand[c].first, *cand[c].second, s);
    }
  }
  if (todo.empty()) return;
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
  std::vector<std::int64_t, ZeroedPageAllocator<std::int64_t>> c;
  auto noisy = [&](int x, const std::vector<int>& parents) {
    std::size_t len = b;
    for (std::size_t i = 0; i < parents.size(); ++i) len *= b;
    sparse_counts(x, parents, scratch);
    c.assign(len, 0);
    for (std::size_t i = 0; i < scratch.cell_key.size(); ++i) c[scratch.cell_key[i]] = scratch.cell_count[i];
    if (count_noise) count_noise->add_to(c, *rng, magnitude.get());
    PrivBayesModel::Table p(len);
    const double n = static_cast<double>(n_);
#pragma omp parallel for schedule(static) if (len >= (std::size_t{1} << 20))
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(len); ++i)
      p[static_cast<std::size_t>(i)] = static_cast<double>(std::max<std::int64_t>(c[static_cast<std::size_t>(i)], 0)) / n;
    return p;
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
  model.net_ = net;
  model.dist_parents_ = std::move(dist_parents);
  model.dist_ = std::move(dist);
  // The first distribution has bins^(k+1) cells: inversion by binary search on its running
  // sums (the same cell as the linear scan in `draw`, up to rounding at cell boundaries).
  const PrivBayesModel::Table& joint = model.dist_[i0];
  model.first_cdf_.resize(joint.size());
  double run = 0;
  for (std::size_t cell = 0; cell < joint.size(); ++cell) model.first_cdf_[cell] = (run += joint[cell]);
  return model;
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
  const double run = first_cdf_.empty() ? 0.0 : first_cdf_.back();
  const std::uint64_t base = sampler.next();
  const std::size_t blocks = (rows + kSampleBlock - 1) / kSampleBlock;
#pragma omp parallel if (blocks > 1)
  {
    std::vector<std::size_t> bin(d);
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t blk = 0; blk < static_cast<std::ptrdiff_t>(blocks); ++blk) {
      SeededRandom rng(derive_seed(base, static_cast<std::uint64_t>(blk)));
      const std::size_t s0 = static_cast<std::size_t>(blk) * kSampleBlock, s1 = std::min(rows, s0 + kSampleBlock);
      for (std::size_t s = s0; s < s1; ++s) {
        std::size_t cell;
        if (!(run > 0)) {
          cell = static_cast<std::size_t>(rng.below(joint.size()));
        } else {
          const double u = rng.unit() * run;
          cell = static_cast<std::size_t>(std::upper_bound(first_cdf_.begin(), first_cdf_.end(), u) - first_cdf_.begin());
          cell = std::min(cell, joint.size() - 1);
        }
        for (std::size_t i = i0 + 1; i-- > 0;) {
          bin[static_cast<std::size_t>(net_.order[i])] = cell % b;
          cell /= b;
        }
        for (std::size_t i = i0 + 1; i < d; ++i) {
          std::size_t idx = 0;
          for (int p : dist_parents_[i]) idx = idx * b + bin[static_cast<std::size_t>(p)];
          bin[static_cast<std::size_t>(net_.order[i])] = draw(&dist_[i][idx * b], b, rng);
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
