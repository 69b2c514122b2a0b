#include "privrace/baselines/dp_copula.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {
namespace {

std::int64_t tied_pairs(std::int64_t run) { return run * (run - 1) / 2; }

// Number of pairs a < b with v[a] > v[b] (strict), sorting v ascending (bottom-up merge sort).
std::int64_t count_inversions(std::vector<double>& v) {
  const std::size_t n = v.size();
  std::vector<double> buf(n);
  std::int64_t inversions = 0;
  for (std::size_t width = 1; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      const std::size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      std::size_t a = lo, b = mid, k = lo;
      while (a < mid && b < hi) {
        if (v[b] < v[a]) {
          inversions += static_cast<std::int64_t>(mid - a);  // v[b] is below every rest of the left run
          buf[k++] = v[b++];
        } else {
          buf[k++] = v[a++];
        }
      }
      while (a < mid) buf[k++] = v[a++];
      while (b < hi) buf[k++] = v[b++];
    }
    v.swap(buf);
  }
  return inversions;
}

double std_normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

std::vector<std::pair<std::size_t, std::size_t>> column_pairs(std::size_t m) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = i + 1; j < m; ++j) pairs.emplace_back(i, j);
  return pairs;
}

// The table's columns in [0, 1] (clipped into the box: per record, free).
std::vector<std::vector<double>> unit_columns(const DenseRef& table, const TableBox& box) {
  const auto n = static_cast<std::size_t>(table.rows()), m = static_cast<std::size_t>(table.cols());
  std::vector<std::vector<double>> unit(m, std::vector<double>(n));
  for (std::size_t j = 0; j < m; ++j)
    for (std::size_t i = 0; i < n; ++i)
      unit[j][i] = box.to_unit(j, static_cast<double>(table(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))));
  return unit;
}

// S_ij of every column pair, in column_pairs' order (parallel over the pairs).
std::vector<std::int64_t> all_concordances(const std::vector<std::vector<double>>& unit) {
  const auto pairs = column_pairs(unit.size());
  std::vector<std::int64_t> s(pairs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (std::ptrdiff_t p = 0; p < static_cast<std::ptrdiff_t>(pairs.size()); ++p) {
    const auto [i, j] = pairs[static_cast<std::size_t>(p)];
    s[static_cast<std::size_t>(p)] = kendall_concordance(unit[i], unit[j]);
  }
  return s;
}

}  // namespace

ExactConcordances exact_concordances(const DenseRef& table, const TableBox& box) {
  box.check(static_cast<std::size_t>(table.cols()));
  ExactConcordances out;
  out.unit = unit_columns(table, box);
  out.s = all_concordances(out.unit);
  return out;
}

std::int64_t kendall_concordance(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size();
  if (y.size() != n) throw UsageError("kendall_concordance: columns of different lengths");
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b] || (x[a] == x[b] && y[a] < y[b]); });
  std::int64_t ties_x = 0, ties_xy = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && x[order[j]] == x[order[i]]) ++j;
    ties_x += tied_pairs(static_cast<std::int64_t>(j - i));
    for (std::size_t a = i; a < j;) {  // runs of equal y inside the x tie (y ascending there)
      std::size_t b = a;
      while (b < j && y[order[b]] == y[order[a]]) ++b;
      ties_xy += tied_pairs(static_cast<std::int64_t>(b - a));
      a = b;
    }
    i = j;
  }
  std::vector<double> ys(n);
  for (std::size_t i = 0; i < n; ++i) ys[i] = y[order[i]];
  // Inside an x tie y is ascending, so every inversion is a pair untied in x with opposite
  // order in y: a discordant pair.
  const std::int64_t discordant = count_inversions(ys);
  std::int64_t ties_y = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && ys[j] == ys[i]) ++j;
    ties_y += tied_pairs(static_cast<std::int64_t>(j - i));
    i = j;
  }
  // Pairs untied in both = concordant + discordant.
  const std::int64_t untied = tied_pairs(static_cast<std::int64_t>(n)) - ties_x - ties_y + ties_xy;
  return untied - 2 * discordant;
}

Eigen::MatrixXd nearest_correlation(const Eigen::MatrixXd& a, double min_eigenvalue) {
  const Eigen::Index m = a.rows();
  auto psd = [&](const Eigen::MatrixXd& r) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(r);
    const Eigen::VectorXd lam = es.eigenvalues().cwiseMax(min_eigenvalue);
    return Eigen::MatrixXd(es.eigenvectors() * lam.asDiagonal() * es.eigenvectors().transpose());
  };
  Eigen::MatrixXd y = 0.5 * (a + a.transpose()), ds = Eigen::MatrixXd::Zero(m, m);
  for (int iter = 0; iter < 200; ++iter) {
    const Eigen::MatrixXd r = y - ds;
    const Eigen::MatrixXd x = psd(r);
    ds = x - r;
    Eigen::MatrixXd next = x;
    next.diagonal().setOnes();
    const double change = (next - y).norm();
    y = next;
    if (change < 1e-10 * std::max(1.0, y.norm())) break;
  }
  // The unit-diagonal iterate can sit just outside the eigenvalue floor: floor once more and
  // rescale to a unit diagonal (a congruence, so it stays positive definite).
  Eigen::MatrixXd out = psd(y);
  const Eigen::VectorXd s = out.diagonal().cwiseSqrt().cwiseInverse();
  out = s.asDiagonal() * out * s.asDiagonal();
  return 0.5 * (out + out.transpose());
}

DpCopula::DpCopula(const DpCopulaOptions& options) : opt_(options) {
  if (opt_.bins < 1) throw UsageError("dp_copula: bins must be at least 1, got " + std::to_string(opt_.bins));
  if (!(opt_.marginal_ratio > 0) || !std::isfinite(opt_.marginal_ratio))
    throw UsageError("dp_copula: marginal_ratio (eps1 / eps2) must be positive, got " + std::to_string(opt_.marginal_ratio));
  if (!(opt_.min_eigenvalue > 0 && opt_.min_eigenvalue < 1))
    throw UsageError("dp_copula: min_eigenvalue must be in (0, 1)");
}

void DpCopula::fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) {
  check_synthetic_privacy(privacy, false, name());
  const auto n = static_cast<std::size_t>(table.rows()), m = static_cast<std::size_t>(table.cols());
  if (n < 2) throw UsageError("dp_copula: the table needs at least 2 rows, got " + std::to_string(n));
  box.check(m);
  fitted_ = false;
  box_ = box;
  n_ = n;
  m_ = m;
  epsilon_ = privacy.epsilon;
  const double k = opt_.marginal_ratio;
  eps1_ = m > 1 ? k / (1 + k) * epsilon_ : epsilon_;  // one column: no correlation to pay for
  eps2_ = epsilon_ - eps1_;
  const auto bins = static_cast<std::size_t>(opt_.bins);

  const std::vector<std::vector<double>> unit = unit_columns(table, box);
  if (opt_.concordances && opt_.concordances->unit != unit)
    throw UsageError("dp_copula: the concordances given in the options were counted on another table");

  // --- marginals: (eps1 / m)-DP each, L1 sensitivity 2 under replace-one.
  const DiscreteLaplace hist_noise(2.0 * static_cast<double>(m) / eps1_);
  histogram_scale_ = hist_noise.scale();
  noisy_counts_.assign(m, std::vector<std::int64_t>(bins, 0));
  cdf_.assign(m, std::vector<double>(bins + 1, 0.0));
  for (std::size_t j = 0; j < m; ++j) {
    auto& c = noisy_counts_[j];
    for (const double t : unit[j]) ++c[std::min(bins - 1, static_cast<std::size_t>(t * static_cast<double>(bins)))];
    for (auto& v : c) v += hist_noise.sample(noise);
    double total = 0;
    for (const auto v : c) total += static_cast<double>(std::max<std::int64_t>(v, 0));
    auto& f = cdf_[j];
    for (std::size_t b = 0; b < bins; ++b) {
      const double mass = total > 0 ? static_cast<double>(std::max<std::int64_t>(c[b], 0)) / total : 1.0 / static_cast<double>(bins);
      f[b + 1] = f[b] + mass;
    }
    f[bins] = 1.0;
  }

  // --- correlations: S_ij exactly (parallel over pairs), then noise in a fixed order.
  noisy_s_ = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(m));
  correlation_ = Eigen::MatrixXd::Identity(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(m));
  concordance_scale_ = 0;
  if (m > 1) {
    const std::vector<std::pair<std::size_t, std::size_t>> pairs = column_pairs(m);
    const std::vector<std::int64_t> s = opt_.concordances ? opt_.concordances->s : all_concordances(unit);
    const double n_pairs = static_cast<double>(n) * static_cast<double>(n - 1) / 2.0;
    const DiscreteLaplace tau_noise(2.0 * static_cast<double>(n - 1) * static_cast<double>(pairs.size()) / eps2_);
    concordance_scale_ = tau_noise.scale();
    Eigen::MatrixXd rho = Eigen::MatrixXd::Identity(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(m));
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const auto i = static_cast<Eigen::Index>(pairs[p].first), j = static_cast<Eigen::Index>(pairs[p].second);
      const double noisy = static_cast<double>(s[p] + tau_noise.sample(noise));
      noisy_s_(i, j) = noisy_s_(j, i) = noisy;
      const double tau = std::clamp(noisy / n_pairs, -1.0, 1.0);
      rho(i, j) = rho(j, i) = std::sin(std::numbers::pi * tau / 2.0);
    }
    correlation_ = nearest_correlation(rho, opt_.min_eigenvalue);
  }
  Eigen::LLT<Eigen::MatrixXd> llt(correlation_);
  if (llt.info() != Eigen::Success) throw Error("dp_copula: the repaired correlation matrix is not positive definite");
  cholesky_ = llt.matrixL();
  fitted_ = true;
}

DoubleMatrix DpCopula::sample(std::size_t rows, std::uint64_t seed) const {
  check_synthetic_rows(rows, name());
  if (!fitted_) throw UsageError("dp_copula: sample() before fit()");
  const auto m = static_cast<Eigen::Index>(m_);
  const auto bins = static_cast<std::size_t>(opt_.bins);
  DoubleMatrix out(static_cast<Eigen::Index>(rows), m);
  SeededRandom rng(seed);
  Eigen::VectorXd g(m), z(m);
  for (std::size_t r = 0; r < rows; ++r) {
    for (Eigen::Index j = 0; j < m; ++j) g(j) = sample_normal(rng);
    z.noalias() = cholesky_.triangularView<Eigen::Lower>() * g;
    for (Eigen::Index j = 0; j < m; ++j) {
      const auto& f = cdf_[static_cast<std::size_t>(j)];
      const double u = std::clamp(std_normal_cdf(z(j)), 0.0, 1.0);
      // Bin b with f[b] <= u < f[b + 1] (empty bins have zero width and are never chosen).
      std::size_t b = static_cast<std::size_t>(std::upper_bound(f.begin(), f.end(), u) - f.begin());
      b = std::clamp<std::size_t>(b, 1, bins) - 1;
      const double width = f[b + 1] - f[b];
      const double within = width > 0 ? std::clamp((u - f[b]) / width, 0.0, 1.0) : 0.5;
      out(static_cast<Eigen::Index>(r), j) = box_.from_unit(static_cast<std::size_t>(j), (static_cast<double>(b) + within) / static_cast<double>(bins));
    }
  }
  return out;
}

nlohmann::json DpCopula::privacy_record() const {
  if (!fitted_) throw UsageError("dp_copula: privacy_record() before fit()");
  const std::size_t pairs = m_ * (m_ - 1) / 2;
  return {{"generator", name()},
          {"epsilon", epsilon_},
          {"delta", 0.0},
          {"neighbors", "replace one record, n public"},
          {"budget_split",
           {{"marginals", eps1_},
            {"per_marginal", eps1_ / static_cast<double>(m_)},
            {"correlations", eps2_},
            {"per_coefficient", pairs ? eps2_ / static_cast<double>(pairs) : 0.0},
            {"marginal_ratio", opt_.marginal_ratio}}},
          {"histogram_bins", opt_.bins},
          {"histogram_sensitivity_l1", 2},
          {"histogram_noise", "discrete_laplace"},
          {"histogram_noise_scale", histogram_scale_},
          {"kendall_concordance_sensitivity", 2.0 * static_cast<double>(n_ - 1)},
          {"kendall_tau_sensitivity", 4.0 / static_cast<double>(n_)},
          {"kendall_noise", "discrete_laplace on concordant - discordant pairs"},
          {"kendall_noise_scale", concordance_scale_},
          {"min_eigenvalue", opt_.min_eigenvalue},
          {"box", box_.to_json()}};
}

}  // namespace privrace::baselines
