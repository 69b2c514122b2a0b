#pragma once
// PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao, "PrivBayes: Private Data Release
// via Bayesian Networks", TODS 2017): a private degree-k Bayesian network and noisy
// conditionals, from which synthetic tables of any size are sampled. One generator serves
// every task: the KDE baseline (the KDE through M synthetic points), the regression baseline
// (least squares on them) and the M2M synthetic-data baseline (tasks on them), through
// PrivBayes::fit -> PrivBayesModel::sample, or the SyntheticGenerator interface
// (PrivBayesGenerator).
//
// * Discretisation: every continuous attribute is cut into `bins` equal-width bins over its
//   public interval (the paper discretises continuous attributes into equal-width bins before
//   learning; 16 is our default); synthetic values are drawn uniformly inside their bin.
// * Budget split (the paper's): eps1 = beta eps for the network, eps2 = (1 - beta) eps for the
//   conditionals, beta = 0.3. (With d = 1 there is no network; all of eps goes to the one
//   marginal.)
// * Network (greedy, Algorithm 2/4): the first attribute uniformly at random; then d - 1
//   steps, each choosing a pair (X, Pi), X not yet in V, Pi a subset of V of size min(k, |V|),
//   by the exponential mechanism with eps1 / (d - 1) per step and score the mutual
//   information I(X; Pi) (in bits; we use I, not the paper's F or R score, because F is
//   defined for binary attributes and R's cost grows with the domain). Its sensitivity for
//   non-binary attributes (the paper's Lemma): S(I) = (1/n) log2 n + ((n-1)/n) log2(n/(n-1)).
// * Conditionals (Algorithm 3): the d - k joint distributions Pr[X_i, Pi_i] (max(d - k, 1)
//   of them; the first one also gives the first k attributes) get Laplace noise of scale
//   4 (d - k) / (n eps2) on every cell, as the paper states; negatives are set to 0 and each
//   distribution is renormalised (post-processing). The cells are integer counts, so the noise
//   is added to the counts by the exact discrete Laplace sampler (mechanisms.hpp) at scale
//   4 (d - k) / eps2 in count units (rounded up, never less), then divided by n.
// * The network's exponential mechanism draws from exp(eps I / (2 S(I))) in floating point
//   (its scores are reals; the choice is one of d C(d-1, k) candidates).
// * Cost. A score is computed from the SPARSE joint (at most n non-zero cells: the rows' cell
//   indices counted directly for small joints, radix-sorted for large ones), summed in the
//   dense order, so it equals the dense computation bit for bit; the scores of one greedy step
//   are computed in parallel, grouped by parent set (the parents' cell index is formed once for
//   every X that needs it). Scores are cached in a flat array indexed by (X, rank of the sorted
//   parent set) when d * sum_{s<=k} C(d, s) is small (a hash map otherwise). The noisy
//   conditionals draw one noise value per cell of the full domain (zero cells included: the
//   mechanism's definition), serially from the caller's stream in cell order, into the count
//   table the model keeps: frequencies max(count, 0) / n are formed when read, so a fit
//   allocates and passes over each table once. Sampling runs in parallel over fixed blocks of
//   rows, each from its own stream derived from one word of the sampler: the rows do not depend
//   on the thread count. The first (joint) distribution is drawn by inversion of its running
//   sums through the sums at every 64th cell (the same running sums, so the same cell as a
//   binary search of all of them).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <unordered_map>
#include <shared_mutex>
#include <span>
#include <vector>

#include "privrace/baselines/function_release.hpp"
#include "privrace/baselines/synthetic.hpp"
#include "privrace/core/random.hpp"
#include "privrace/core/zeroed_pages.hpp"

namespace privrace::baselines {

struct PrivBayesOptions {
  int degree = 2;  // k (the paper's D)
  int bins = 16;
  double beta = 0.3;
};

struct PrivBayesNetwork {
  std::vector<int> order;                 // attributes in the order they joined V
  std::vector<std::vector<int>> parents;  // parents[i] of order[i]
};

// The released model: the network and its noisy distributions. Sampling is post-processing.
class PrivBayesModel {
 public:
  // `rows` synthetic records (rows > 0) drawn with `sampler`: the same stream, the same rows,
  // for any number of threads (one word of `sampler` seeds the per-block streams).
  DoubleMatrix sample(std::size_t rows, RandomSource& sampler) const;
  const PrivBayesNetwork& network() const { return net_; }
  // Distribution i (frequencies: noisy counts clipped at 0, over n) and the attributes it is
  // conditioned on; distribution first() is the joint of order[0..first()] (for tests).
  std::size_t first() const { return first_; }
  std::vector<double> distribution(std::size_t i) const;
  // Its noisy counts (before clipping at 0; frequency = max(count, 0) / n).
  std::span<const std::int64_t> noisy_counts(std::size_t i) const { return dist_.at(i); }
  const std::vector<int>& distribution_parents(std::size_t i) const { return dist_parents_.at(i); }

 private:
  friend class PrivBayes;
  static constexpr std::size_t kCdfBlock = 64;  // cells per stored running sum of the joint
  TableBox box_;
  std::size_t bins_ = 0, first_ = 0;  // dist_[first_] covers order[0..first_] jointly
  double n_ = 0;                       // rows of the table: frequency = max(count, 0) / n_
  PrivBayesNetwork net_;
  std::vector<std::vector<int>> dist_parents_;
  // The noisy counts, up to 16^6 cells a table: huge pages, no zeroing pass (zeroed_pages.hpp).
  using Table = std::vector<std::int64_t, ZeroedPageAllocator<std::int64_t>>;
  std::vector<Table> dist_;
  // block_cdf_[j]: the running sum of the joint's frequencies (in cell order, as one
  // sequential sum) through cell (j + 1) kCdfBlock - 1, the last one through the last cell.
  std::vector<double> block_cdf_;
};

// The binned table and the score cache: fit() releases a model per epsilon.
class PrivBayes {
 public:
  PrivBayes(const DenseRef& train, const TableBox& box, const PrivBayesOptions& opt);
  // rng == nullptr: the non-private limit (best-score network, exact conditionals).
  // `network_out` receives the network that was used.
  PrivBayesModel fit(double epsilon, RandomSource* rng, PrivBayesNetwork* network_out = nullptr) const;
  double mi_sensitivity() const;
  double conditional_noise_scale(double epsilon) const;  // 4 (d - k) / (n eps2), per probability
  double network_epsilon(double epsilon) const;          // eps1 (0 when d = 1)
  // Joint counts of (parents..., x) laid out parents-major, x fastest (dense; for tests).
  std::vector<double> joint_counts(int x, const std::vector<int>& parents) const;
  double mutual_information(int x, const std::vector<int>& parents) const;
  // Scores are cached across releases of one object (they do not depend on epsilon); a caller
  // that times one release from scratch clears them first.
  void clear_score_cache() const {
    std::unique_lock lock(cache_mutex_.m);
    mi_cache_.clear();
    mi_cache_packed_.clear();
    std::fill(mi_flat_.begin(), mi_flat_.end(), kNoScore);
  }
  std::size_t score_evaluations() const {
    std::shared_lock lock(cache_mutex_.m);
    return mi_evaluations_;
  }
  // Work of scoring every (X, Pi) pair the greedy network can meet: d C(d-1, k) mutual
  // informations, each k + 1 passes over the n rows plus a count over the bins^(k+1) cells
  // (small joints) or a radix sort of the n cell indices (large ones). One release computes
  // about 1/(k+1) of them (those whose parents joined before X), in parallel: an estimate,
  // not a bound.
  static double network_work(std::size_t n, std::size_t d, int degree, int bins);

 private:
  TableBox box_;
  PrivBayesOptions opt_;
  std::size_t n_ = 0, d_ = 0;
  struct Scratch;
  void cell_keys(int x, const std::vector<int>& parents, std::vector<std::uint32_t>& keys) const;
  void sparse_counts(int x, const std::vector<int>& parents, Scratch& s) const;
  double compute_mi(int x, const std::vector<int>& parents, Scratch& s) const;
  // The scores of every x in `xs` with one parent set (dense joints: the parents' cell index
  // formed once); out[j] is I(xs[j]; parents), equal to compute_mi's.
  void compute_mi_group(const std::vector<int>& parents, const std::vector<int>& xs, Scratch& s, double* out) const;
  double mi_of_cells(Scratch& s) const;  // I from s.cell_key / s.cell_count
  // Position in mi_flat_ of (x, parents), or -1 when the flat cache does not hold it (parents
  // not strictly ascending, or no flat cache).
  std::ptrdiff_t flat_index(int x, const std::vector<int>& parents) const;
  bool cache_find(int x, const std::vector<int>& parents, double& mi) const;
  void cache_store(int x, const std::vector<int>& parents, double mi) const;
  // The scores of the candidates (cached ones looked up, the rest computed in parallel).
  void score(const std::vector<std::pair<int, const std::vector<int>*>>& cand, std::vector<double>& out) const;
  // The network: a random first attribute, then greedily the (attribute, parent set) pair drawn by
  // the exponential mechanism on mutual information (the largest score without `rng`).
  PrivBayesNetwork learn_network(double epsilon, RandomSource* rng) const;
  // The noisy conditional distributions of `net`: index k covers order[0..k] jointly, then one
  // per attribute; Laplace noise on the counts when `rng` is given.
  PrivBayesModel noisy_model(const PrivBayesNetwork& net, double epsilon, RandomSource* rng) const;

  std::vector<std::uint16_t> codes_;  // bin indices, column-major: codes_[j * n + i]
  // Flat score cache: mi_flat_[x * subsets_ + rank(parents)], rank the combinatorial number of
  // the ascending parent set among all subsets of size <= k (those of size s after those of
  // smaller sizes); kNoScore marks a score not yet computed. Empty when too large.
  static constexpr double kNoScore = std::numeric_limits<double>::quiet_NaN();  // a score is never NaN
  std::size_t subsets_ = 0;
  std::vector<std::size_t> size_offset_;                 // first rank of each subset size
  std::vector<std::vector<std::size_t>> binom_;          // binom_[i][m] = C(m, i + 1)
  mutable std::vector<double> mi_flat_;
  mutable std::map<std::pair<int, std::vector<int>>, double> mi_cache_;
  // Same cache with (x, parents) packed into 64 bits when d < 1024 and k <= 5: the greedy
  // search looks scores up O(d^(k+2)) times (11M lookups for d = 129, k = 2).
  mutable std::unordered_map<std::uint64_t, double> mi_cache_packed_;
  mutable std::size_t mi_evaluations_ = 0;
  // One object serves the concurrent jobs of a run (experiments/shared_work.hpp): the caches
  // and the count are read under a shared lock and written under an exclusive one. A copy
  // gets its own mutex.
  struct CacheMutex {
    mutable std::shared_mutex m;
    CacheMutex() = default;
    CacheMutex(const CacheMutex&) {}
    CacheMutex& operator=(const CacheMutex&) { return *this; }
  };
  CacheMutex cache_mutex_;
};

// PrivBayes behind the generator interface (epsilon-DP; delta must be 0).
class PrivBayesGenerator final : public SyntheticGenerator {
 public:
  explicit PrivBayesGenerator(const PrivBayesOptions& options = {}) : opt_(options) {}
  std::string name() const override { return "privbayes"; }
  void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) override;
  DoubleMatrix sample(std::size_t rows, std::uint64_t seed) const override;
  nlohmann::json privacy_record() const override { return record_; }

 private:
  PrivBayesOptions opt_;
  std::unique_ptr<PrivBayesModel> model_;
  nlohmann::json record_;
};

}  // namespace privrace::baselines
