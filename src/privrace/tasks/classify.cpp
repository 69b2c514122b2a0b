#include "privrace/tasks/classify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "privrace/core/error.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace {

DecisionRule parse_decision_rule(const std::string& name) {
  if (name == "ml") return DecisionRule::MaxLikelihood;
  if (name == "map") return DecisionRule::Map;
  throw UsageError("unknown decision rule '" + name + "' (expected ml or map)");
}

RaceClassifier::RaceClassifier(const RaceClassifierSpec& spec, std::size_t dim, std::size_t classes) : spec_(spec) {
  if (classes < 2) throw UsageError("a classifier needs at least 2 classes");
  FamilySpec fs;
  fs.kernel = Kernel::L2;
  fs.bandwidth = spec.bandwidth;
  fs.power = spec.power;
  fs.rows = spec.rows;
  fs.dim = dim;
  fs.seed = spec.seed;
  family_ = make_family(fs);
  sketches_.reserve(classes);
  for (std::size_t c = 0; c < classes; ++c) sketches_.emplace_back(family_, spec.width);
}

void RaceClassifier::fit(const DenseRef& x, std::span<const int> labels) {
  if (static_cast<std::size_t>(x.rows()) != labels.size()) throw UsageError("fit: rows and labels differ in number");
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t k = sketches_.size();
  std::vector<std::vector<Eigen::Index>> members(k);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const int c = labels[i];
    if (c < 0 || static_cast<std::size_t>(c) >= k) throw UsageError("fit: label " + std::to_string(c) + " out of range");
    members[static_cast<std::size_t>(c)].push_back(static_cast<Eigen::Index>(i));
  }
  BuildOptions bo;
  bo.threads = spec_.threads;
  for (std::size_t c = 0; c < k; ++c) {
    if (members[c].empty()) continue;
    DenseMatrix part(static_cast<Eigen::Index>(members[c].size()), x.cols());
    for (std::size_t j = 0; j < members[c].size(); ++j) part.row(static_cast<Eigen::Index>(j)) = x.row(members[c][j]);
    build_dense(sketches_[c], part, bo);
  }
  build_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void RaceClassifier::privatize(const PrivacySpec& spec, const NoiseSource& source) {
  // Every class gets the whole epsilon (parallel composition, header), each class sketch
  // released once through the release API (a second call is refused: its counts carry noise).
  // Seeded runs give each class its own noise stream.
  for (std::size_t c = 0; c < sketches_.size(); ++c) {
    NoiseSource s = source;
    if (s.seeded) s.seed = derive_seed(source.seed, c);
    sketches_[c] = ExactSketch(std::move(sketches_[c]), BuildReport{}).release(spec, s).take_sketch();
  }
}

DoubleMatrix RaceClassifier::kernel_sums(const DenseRef& queries) const {
  const Eigen::Index n = queries.rows();
  DoubleMatrix out(n, static_cast<Eigen::Index>(sketches_.size()));
  constexpr Eigen::Index kBatch = 2048;
  CodeMatrix codes;
  for (Eigen::Index b = 0; b < n; b += kBatch) {
    const Eigen::Index m = std::min(kBatch, n - b);
    family_->hash_dense(queries.middleRows(b, m), codes);  // shared by every class sketch
    for (std::size_t c = 0; c < sketches_.size(); ++c) {
      const DoubleMatrix est = sketches_[c].row_estimates(codes);  // R x m
      out.block(b, static_cast<Eigen::Index>(c), m, 1) = est.colwise().mean().transpose();
    }
  }
  return out;
}

std::vector<double> RaceClassifier::n_hat() const {
  std::vector<double> n;
  for (const auto& s : sketches_) n.push_back(s.n_hat());
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
