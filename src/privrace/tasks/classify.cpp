#include "privrace/tasks/classify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "privrace/core/error.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace {

DecisionRule parse_decision_rule(const std::string& name) {
  if (name == "ml") return DecisionRule::MaxLikelihood;
  if (name == "map") return DecisionRule::Map;
  throw UsageError("unknown decision rule '" + name + "' (expected ml or map)");
}

namespace {
// The release parameters of the class sketches: p-stable L2, R x W, the public LSH seed spec.seed.
ExactBuilder classifier_builder(const RaceClassifierSpec& spec, std::size_t dim, std::size_t classes) {
  if (classes < 2) throw UsageError("a classifier needs at least 2 classes");
  ReleaseParams params;
  params.family.kernel = Kernel::L2;
  params.family.bandwidth = spec.bandwidth;
  params.family.power = spec.power;
  params.family.rows = spec.rows;
  params.width = spec.width;
  params.threads = spec.threads;
  params.hash_seed = spec.seed;
  return ExactBuilder::dense(params, MasterSeed::of(spec.seed, true), dim);
}
}  // namespace

RaceClassifier::RaceClassifier(const RaceClassifierSpec& spec, std::size_t dim, std::size_t classes)
    : classes_(classes), builder_(classifier_builder(spec, dim, classes)) {
  // Every class's counts start at zero (a class without records keeps them).
  const DenseMatrix none(0, static_cast<Eigen::Index>(dim));
  exact_ = builder_.build_parts(none, {}, classes);
}

void RaceClassifier::fit(const DenseRef& x, std::span<const int> labels) {
  if (static_cast<std::size_t>(x.rows()) != labels.size()) throw UsageError("fit: rows and labels differ in number");
  if (!released_.empty()) throw UsageError("fit: the class sketches are already released");
  const auto t0 = std::chrono::steady_clock::now();
  for (const int c : labels)
    if (c < 0 || static_cast<std::size_t>(c) >= classes_) throw UsageError("fit: label " + std::to_string(c) + " out of range");
  std::vector<ExactSketch> parts = builder_.build_parts(x, labels, classes_);
  for (std::size_t c = 0; c < classes_; ++c) {
    if (exact_[c].report().points == 0) exact_[c] = std::move(parts[c]);  // nothing to add to
    else exact_[c].merge(parts[c]);
  }
  build_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void RaceClassifier::privatize(const PrivacySpec& spec, const NoiseSource& source) {
  // Every class gets the whole epsilon (parallel composition, header), each class sketch
  // released once through the release API (a second call is refused: its counts carry noise).
  // Seeded runs give each class its own noise stream.
  if (!released_.empty()) throw UsageError("an exact sketch holds counts without noise; this one already carries noise");
  std::vector<RaceSketch> released;
  released.reserve(classes_);
  for (std::size_t c = 0; c < classes_; ++c) {
    NoiseSource s = source;
    if (s.seeded) s.seed = derive_seed(source.seed, c);
    released.push_back(std::move(exact_[c]).release(spec, s).take_sketch());
  }
  released_ = std::move(released);
  exact_.clear();
}

DoubleMatrix RaceClassifier::kernel_sums(const DenseRef& queries) const {
  const Eigen::Index n = queries.rows();
  DoubleMatrix out(n, static_cast<Eigen::Index>(classes_));
  constexpr Eigen::Index kBatch = 2048;
  CodeMatrix codes;
  for (Eigen::Index b = 0; b < n; b += kBatch) {
    const Eigen::Index m = std::min(kBatch, n - b);
    builder_.family()->hash_dense(queries.middleRows(b, m), codes);  // shared by every class sketch
    for (std::size_t c = 0; c < classes_; ++c) {
      const DoubleMatrix est = sketch(c).row_estimates(codes);  // R x m
      out.block(b, static_cast<Eigen::Index>(c), m, 1) = est.colwise().mean().transpose();
    }
  }
  return out;
}

std::vector<double> RaceClassifier::n_hat() const {
  std::vector<double> n;
  for (std::size_t c = 0; c < classes_; ++c) n.push_back(sketch(c).n_hat());
  return n;
}

std::vector<std::vector<int>> RaceClassifier::predict(const DenseRef& queries, std::span<const DecisionRule> rules) const {
  const DoubleMatrix sums = kernel_sums(queries);
  std::vector<std::vector<int>> out;
  for (const DecisionRule rule : rules) {
    if (rule == DecisionRule::Map) {
      // (N_c / N) * (S_c / N_c) = S_c / N: the prior cancels the normaliser; N is common.
      out.push_back(argmax_rows(sums));
    } else {
      // Likelihood S_c / N-hat_c; a noisy N-hat below 1 is clamped (it is post-processing).
      DoubleMatrix lik = sums;
      const auto n = n_hat();
      for (Eigen::Index c = 0; c < lik.cols(); ++c) lik.col(c) /= std::max(1.0, n[static_cast<std::size_t>(c)]);
      out.push_back(argmax_rows(lik));
    }
  }
  return out;
}

std::vector<int> RaceClassifier::predict(const DenseRef& queries, DecisionRule rule) const {
  const DecisionRule rules[] = {rule};
  return predict(queries, rules).front();
}

std::vector<int> argmax_rows(const DoubleMatrix& scores) {
  std::vector<int> out(static_cast<std::size_t>(scores.rows()));
  for (Eigen::Index i = 0; i < scores.rows(); ++i) {
    Eigen::Index best = 0;
    for (Eigen::Index c = 1; c < scores.cols(); ++c)
      if (scores(i, c) > scores(i, best)) best = c;
    out[static_cast<std::size_t>(i)] = static_cast<int>(best);
  }
  return out;
}

double accuracy(std::span<const int> predicted, std::span<const int> truth) {
  if (predicted.size() != truth.size() || truth.empty()) throw UsageError("accuracy: sizes differ or are empty");
  std::size_t hits = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) hits += predicted[i] == truth[i];
  return static_cast<double>(hits) / static_cast<double>(truth.size());
}

BandwidthSearchResult search_bandwidth(const DenseRef& fit_x, std::span<const int> fit_labels, const DenseRef& val_x,
                                       std::span<const int> val_labels, std::size_t classes,
                                       const RaceClassifierSpec& spec, int iterations, double lo, double hi) {
  BandwidthSearchResult res;
  auto score = [&](double w) {
    RaceClassifierSpec s = spec;
    s.bandwidth = w;
    RaceClassifier clf(s, static_cast<std::size_t>(fit_x.cols()), classes);
    clf.fit(fit_x, fit_labels);
    const double acc = accuracy(clf.predict(val_x, DecisionRule::MaxLikelihood), val_labels);
    res.trace.emplace_back(w, acc);
    return acc;
  };
  double best_w = 0.5 * (lo + hi), best_acc = -1;
  for (int it = 0; it < iterations; ++it) {
    // Midpoints of the two halves: never 0, where the p-stable bucket width is undefined.
    const double left = lo + 0.25 * (hi - lo), right = lo + 0.75 * (hi - lo);
    const double a = score(left), b = score(right);
    if (a > best_acc) best_acc = a, best_w = left;
    if (b > best_acc) best_acc = b, best_w = right;
    if (b > a)
      lo = 0.5 * (lo + hi);
    else
      hi = 0.5 * (lo + hi);
  }
  res.bandwidth = best_w;
  res.validation_accuracy = best_acc;
  return res;
}

}  // namespace privrace
