#include "privrace/baselines/privbayes.hpp"

#include <algorithm>
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

}  // namespace

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
  codes_.resize(n_ * d_);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n_); ++i)
    for (std::size_t j = 0; j < d_; ++j) {
      const double t = box.to_unit(j, train(i, static_cast<Eigen::Index>(j)));
      codes_[static_cast<std::size_t>(i) * d_ + j] = static_cast<std::uint16_t>(std::min(opt.bins - 1, static_cast<int>(t * opt.bins)));
    }
}

std::vector<double> PrivBayes::joint_counts(int x, const std::vector<int>& parents) const {
  const auto b = static_cast<std::size_t>(opt_.bins);
  std::size_t len = b;
  for (std::size_t i = 0; i < parents.size(); ++i) len *= b;
  std::vector<double> out(len, 0.0);
  // The greedy search calls this up to ~10^5-10^6 times (d C(d-1, k) pairs); below 64k rows a
  // serial pass beats a parallel region (per-thread tables + barrier, which stalls when the
  // cores are shared). Counts are integers in doubles: the sum is the same either way.
#pragma omp parallel if (n_ >= 65536)
  {
    std::vector<double> local(len, 0.0);
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n_); ++i) {
      const std::uint16_t* row = &codes_[static_cast<std::size_t>(i) * d_];
      std::size_t idx = 0;
      for (int p : parents) idx = idx * b + row[p];
      local[idx * b + row[x]] += 1.0;
    }
#pragma omp critical
    for (std::size_t c = 0; c < len; ++c) out[c] += local[c];
  }
  return out;
}

double PrivBayes::network_work(std::size_t n, std::size_t d, int degree, int bins) {
  if (d < 2) return 0;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(std::max(degree, 1)), d - 1);
  double combos = 1;  // C(d - 1, k)
  for (std::size_t i = 0; i < k; ++i) combos = combos * static_cast<double>(d - 1 - i) / static_cast<double>(i + 1);
  return static_cast<double>(d) * combos *
         (static_cast<double>(n) + std::pow(static_cast<double>(bins), static_cast<double>(k + 1)));
}

double PrivBayes::mutual_information(int x, const std::vector<int>& parents) const {
  const bool packable = d_ < 1024 && parents.size() <= 5;
  std::uint64_t packed = static_cast<std::uint64_t>(x);
  if (packable) {
    for (std::size_t i = 0; i < parents.size(); ++i)
      packed |= static_cast<std::uint64_t>(parents[i] + 1) << (10 * (i + 1));
    if (auto it = mi_cache_packed_.find(packed); it != mi_cache_packed_.end()) return it->second;
  }
  const auto key = std::make_pair(x, parents);
  if (!packable)
    if (auto it = mi_cache_.find(key); it != mi_cache_.end()) return it->second;
  ++mi_evaluations_;
  const auto b = static_cast<std::size_t>(opt_.bins);
  const std::vector<double> joint = joint_counts(x, parents);
  const std::size_t np = joint.size() / b;
  std::vector<double> px(b, 0.0), pp(np, 0.0);
  for (std::size_t p = 0; p < np; ++p)
    for (std::size_t v = 0; v < b; ++v) px[v] += joint[p * b + v], pp[p] += joint[p * b + v];
  const double n = static_cast<double>(n_);
  double mi = 0;
  for (std::size_t p = 0; p < np; ++p)
    for (std::size_t v = 0; v < b; ++v) {
      const double c = joint[p * b + v];
      if (c > 0) mi += c / n * std::log2(c * n / (px[v] * pp[p]));
    }
  if (packable)
    mi_cache_packed_[packed] = mi;
  else
    mi_cache_[key] = mi;
  return mi;
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
  const std::size_t d = d_;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(opt_.degree), d - 1);
  const auto b = static_cast<std::size_t>(opt_.bins);
  PrivBayesNetwork net;
  // --- network
  std::vector<int> rest(d);
  std::iota(rest.begin(), rest.end(), 0);
  const std::size_t first = rng ? static_cast<std::size_t>(rng->below(d)) : 0;
  net.order.push_back(static_cast<int>(first));
  net.parents.push_back({});
  rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(first));
  const double eps_step = d > 1 ? opt_.beta * epsilon / static_cast<double>(d - 1) : 0.0;
  const double dI = mi_sensitivity();
  while (!rest.empty()) {
    std::vector<int> V = net.order;
    std::sort(V.begin(), V.end());
    std::vector<std::vector<int>> psets;
    std::vector<int> cur;
    subsets(V, std::min(k, V.size()), 0, cur, psets);
    std::vector<std::pair<int, std::size_t>> cand;
    std::vector<double> score;
    for (int x : rest)
      for (std::size_t p = 0; p < psets.size(); ++p) {
        cand.emplace_back(x, p);
        score.push_back(mutual_information(x, psets[p]));
      }
    std::size_t pick;
    if (rng) {
      // Exponential mechanism: Pr ~ exp(eps_step * I / (2 S(I))), through log-sum-exp.
      std::vector<double> logits(score.size());
      for (std::size_t c = 0; c < score.size(); ++c) logits[c] = eps_step * score[c] / (2 * dI);
      const double mx = *std::max_element(logits.begin(), logits.end());
      for (auto& l : logits) l = std::exp(l - mx);
      pick = draw(logits.data(), logits.size(), *rng);
    } else {
      pick = static_cast<std::size_t>(std::max_element(score.begin(), score.end()) - score.begin());
    }
    net.order.push_back(cand[pick].first);
    net.parents.push_back(psets[cand[pick].second]);
    rest.erase(std::find(rest.begin(), rest.end(), cand[pick].first));
  }
  // --- noisy distributions: index i0 = k covers order[0..k] jointly; then one per attribute.
  const std::size_t i0 = k;  // (k <= d - 1)
  std::vector<std::vector<int>> dist_parents(d);
  std::vector<std::vector<double>> dist(d);
  for (std::size_t i = 0; i <= i0; ++i) {
    dist_parents[i].assign(net.order.begin(), net.order.begin() + static_cast<std::ptrdiff_t>(i));
  }
  // Noise on the integer counts: discrete Laplace of scale n * 4 (d - k) / (n eps2) counts,
  // i.e. conditional_noise_scale(epsilon) in frequency units (rounded up by the sampler).
  // Many cells (bins^(k+1) per distribution, d - k distributions): the table sampler, whose
  // set-up (tens of ms) then pays for itself.
  std::unique_ptr<DiscreteLaplace> count_noise;
  std::shared_ptr<const ExactGeometric> magnitude;
  if (rng) {
    count_noise = std::make_unique<DiscreteLaplace>(conditional_noise_scale(epsilon) * static_cast<double>(n_));
    const double cells = std::pow(static_cast<double>(b), static_cast<double>(k + 1)) * static_cast<double>(d - k);
    if (cells > 2e5) magnitude = count_noise->bulk_sampler();
  }
  auto noisy = [&](int x, const std::vector<int>& parents) {
    std::vector<double> p = joint_counts(x, parents);
    if (count_noise) {
      std::vector<std::int64_t> c(p.size());
      for (std::size_t i = 0; i < p.size(); ++i) c[i] = static_cast<std::int64_t>(p[i]);
      count_noise->add_to(c, *rng, magnitude.get());
      for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<double>(std::max<std::int64_t>(c[i], 0));
    }
    for (auto& v : p) v /= static_cast<double>(n_);
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
  const std::vector<double>& joint = model.dist_[i0];
  model.first_cdf_.resize(joint.size());
  double run = 0;
  for (std::size_t c = 0; c < joint.size(); ++c) model.first_cdf_[c] = (run += joint[c]);
  if (network_out) *network_out = net;
  return model;
}

DoubleMatrix PrivBayesModel::sample(std::size_t rows, RandomSource& sampler) const {
  check_synthetic_rows(rows, "privbayes");
  // Order[0..first_] jointly from dist_[first_], then each later attribute from its
  // conditional slice given its parents' sampled bins.
  const std::size_t d = net_.order.size(), b = bins_, i0 = first_;
  DoubleMatrix out(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(d));
  std::vector<std::size_t> bin(d);
  const std::vector<double>& joint = dist_[i0];
  const double run = first_cdf_.empty() ? 0.0 : first_cdf_.back();
  for (std::size_t s = 0; s < rows; ++s) {
    std::size_t cell;
    if (!(run > 0)) {
      cell = static_cast<std::size_t>(sampler.below(joint.size()));
    } else {
      const double u = sampler.unit() * run;
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
      bin[static_cast<std::size_t>(net_.order[i])] = draw(&dist_[i][idx * b], b, sampler);
    }
    for (std::size_t j = 0; j < d; ++j)
      out(static_cast<Eigen::Index>(s), static_cast<Eigen::Index>(j)) =
          box_.from_unit(j, (static_cast<double>(bin[j]) + sampler.unit()) / static_cast<double>(b));
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
