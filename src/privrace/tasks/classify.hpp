#pragma once
// Private kernel-density classification with RACE (private-race paper, section 4, "Naive Bayes
// Classification"): one sketch per class estimates the class-conditional kernel sum
// S_c(q) = sum_{x in class c} k(x, q), and a query goes to the class with the largest
// likelihood S_c(q) / N_c (maximum likelihood) or posterior (N_c / N)(S_c(q) / N_c) (MAP).
//
// Privacy (add/remove one record (x, c)). The classes partition the training data, and a
// record changes only the sketch of its own class. Let M_c be the mechanism that releases the
// noisy sketch of class c; each M_c is eps-DP on its part D_c (Theorem 3: L1 sensitivity R,
// noise scale R / eps). For neighbours D, D' differing in one record of class c, the outputs of
// M_j, j != c, have the same distribution under D and D', so for every output set
// P[M(D) in A] / P[M(D') in A] = P[M_c(D_c) in A_c] / P[M_c(D'_c) in A_c] <= e^eps
// (parallel composition, McSherry 2009): the K sketches together are eps-DP, and each class
// spends the whole eps. The number of classes K is public (it is fixed by the schema).
// N_c enters the decision rules only through N-hat_c = total(S_c) / R of the NOISY sketch,
// which is post-processing and costs no budget.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace {

enum class DecisionRule { MaxLikelihood, Map };
DecisionRule parse_decision_rule(const std::string& name);  // "ml" | "map"

struct RaceClassifierSpec {
  std::size_t rows = 100;     // R
  std::size_t width = 100;    // W
  double bandwidth = 0.5;     // p-stable bucket width w
  std::size_t power = 1;      // concatenated hashes p
  std::uint64_t seed = 1;     // LSH seed, shared by every class (data-independent, public)
  int threads = 0;
};

class RaceClassifier {
 public:
  RaceClassifier(const RaceClassifierSpec& spec, std::size_t dim, std::size_t classes);

  // Exact counts of each class from labelled rows (labels in 0..classes-1), added to the counts
  // so far; built by the release API (ExactBuilder::build_parts: one family for every class).
  void fit(const DenseRef& x, std::span<const int> labels);
  // Releases every class sketch once (ExactSketch::release), each with the whole epsilon (see
  // above); UsageError when the sketches already carry noise.
  void privatize(const PrivacySpec& spec, const NoiseSource& source);

  // Q x K matrix of kernel-sum estimates S_c(q) (mean over rows; the queries are hashed once).
  DoubleMatrix kernel_sums(const DenseRef& queries) const;
  std::vector<int> predict(const DenseRef& queries, DecisionRule rule) const;
  // Predictions of several rules from one pass over the sketches.
  std::vector<std::vector<int>> predict(const DenseRef& queries, std::span<const DecisionRule> rules) const;

  std::vector<double> n_hat() const;
  std::size_t classes() const { return classes_; }
  // Class c's counts: exact until privatize, then the released ones.
  const RaceSketch& sketch(std::size_t c) const { return released_.empty() ? exact_[c].counts() : released_[c]; }
  double build_seconds() const { return build_seconds_; }

 private:
  std::size_t classes_;
  ExactBuilder builder_;              // the release parameters and the one LSH family (seed spec.seed)
  std::vector<ExactSketch> exact_;    // the exact class counts, until released
  std::vector<RaceSketch> released_;  // the released class sketches (after privatize)
  double build_seconds_ = 0;
};

// argmax per query of K scores; ties go to the lower class index.
std::vector<int> argmax_rows(const DoubleMatrix& scores);
double accuracy(std::span<const int> predicted, std::span<const int> truth);

// Bandwidth by binary search on [lo, hi] (the paper: [0, 1] on data in the unit cube).
// Each step scores the midpoints of the two halves of the current interval with a NON-PRIVATE
// (exact-count) max-likelihood classifier fitted on `fit_x` and evaluated on the validation rows,
// and keeps the better half. The choice uses no privacy budget only because it is made on
// exact counts: callers must say so (the experiment records "bandwidth_selection").
struct BandwidthSearchResult {
  double bandwidth = 0;
  double validation_accuracy = 0;
  std::vector<std::pair<double, double>> trace;  // (bandwidth, validation accuracy) evaluated
};
BandwidthSearchResult search_bandwidth(const DenseRef& fit_x, std::span<const int> fit_labels, const DenseRef& val_x,
                                       std::span<const int> val_labels, std::size_t classes,
                                       const RaceClassifierSpec& spec, int iterations, double lo = 0.0,
                                       double hi = 1.0);

}  // namespace privrace
