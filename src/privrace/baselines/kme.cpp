#include "privrace/baselines/kme.hpp"

#include <algorithm>
#include <cmath>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {

PivotedCholesky pivoted_cholesky(const DoubleMatrix& points, const KernelSpec& spec, double tol, std::size_t max_rank) {
  const auto M = static_cast<std::size_t>(points.rows());
  const auto d = static_cast<std::size_t>(points.cols());
  const std::size_t cap = max_rank == 0 ? M : std::min(max_rank, M);  // 0 = no cap
  // Row i of `rows` holds L(i, 0..t): the dot product of step t reads two contiguous rows.
  DoubleMatrix rows(static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(cap));
  std::vector<double> resid(M);
  for (std::size_t i = 0; i < M; ++i) resid[i] = kernel_value(spec, points.row(static_cast<Eigen::Index>(i)).data(),
                                                              points.row(static_cast<Eigen::Index>(i)).data(), d);
  std::vector<char> used(M, 0);
  PivotedCholesky out;
  for (std::size_t t = 0; t < cap; ++t) {
    const auto p = static_cast<std::size_t>(std::max_element(resid.begin(), resid.end()) - resid.begin());
    if (resid[p] <= tol) break;
    out.pivots.push_back(p);
    used[p] = 1;
    const double piv = std::sqrt(resid[p]);
    const double* zp = points.row(static_cast<Eigen::Index>(p)).data();
    const double* lp = rows.row(static_cast<Eigen::Index>(p)).data();
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(M); ++i) {
      double* li = rows.row(i).data();
      if (used[static_cast<std::size_t>(i)] && static_cast<std::size_t>(i) != p) { li[t] = 0.0; continue; }
      // Eigen's dot keeps several accumulators (vectorised); a plain loop would not be.
      const double dot = Eigen::Map<const Eigen::VectorXd>(li, static_cast<Eigen::Index>(t))
                             .dot(Eigen::Map<const Eigen::VectorXd>(lp, static_cast<Eigen::Index>(t)));
      const double v = (kernel_value(spec, points.row(i).data(), zp, d) - dot) / piv;
      li[t] = v;
      resid[static_cast<std::size_t>(i)] = std::max(0.0, resid[static_cast<std::size_t>(i)] - v * v);
    }
    resid[p] = 0.0;
  }
  const std::size_t m = out.pivots.size();
  out.L.setZero(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(m));
  for (std::size_t a = 0; a < m; ++a)
    for (std::size_t b = 0; b <= a; ++b)
      out.L(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) =
          rows(static_cast<Eigen::Index>(out.pivots[a]), static_cast<Eigen::Index>(b));
  out.max_residual = m == 0 ? 1.0 : *std::max_element(resid.begin(), resid.end());
  return out;
}

std::size_t kme_rank_cap(std::size_t points, std::size_t max_rank, double max_bytes) {
  std::size_t cap = points;
  if (max_rank > 0) cap = std::min(cap, max_rank);
  const double by_memory = std::floor(max_bytes / (8.0 * static_cast<double>(std::max<std::size_t>(points, 1))));
  if (by_memory < static_cast<double>(cap)) cap = static_cast<std::size_t>(std::max(by_memory, 1.0));
  return std::max<std::size_t>(cap, 1);
}

double kme_sigma(double epsilon, double delta, double l2) {
  if (epsilon < 1.0) return l2 * std::sqrt(2.0 * std::log(1.25 / delta)) / epsilon;
  return analytic_gaussian_sigma(epsilon, delta, l2);
}

KmeRelease::KmeRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, const KmeOptions& opt)
    : n_(static_cast<double>(train.rows())) {
  if (opt.synthetic != "uniform" && opt.synthetic != "normal")
    throw UsageError("kme: synthetic must be uniform or normal");
  const auto d = train.cols();
  z_.resize(static_cast<Eigen::Index>(opt.points), d);
  SeededRandom rng(opt.seed);  // public points: data-independent, reproducible
  for (Eigen::Index i = 0; i < z_.rows(); ++i)
    for (Eigen::Index j = 0; j < d; ++j)
      z_(i, j) = opt.synthetic == "uniform" ? dom.from_unit(rng.unit())
                                            : std::clamp(dom.from_unit(0.5) + 0.25 * dom.span() * sample_normal(rng),
                                                         dom.lower, dom.upper);
  fit(train, spec, dom, opt);
}

KmeRelease::KmeRelease(const DenseRef& train, const KernelSpec& spec, const Domain& dom, DoubleMatrix points,
                       const KmeOptions& opt)
    : z_(std::move(points)), n_(static_cast<double>(train.rows())) {
  if (z_.cols() != train.cols())
    throw UsageError("kme: public points have " + std::to_string(z_.cols()) + " columns, the data " +
                     std::to_string(train.cols()));
  fit(train, spec, dom, opt);
}

void KmeRelease::fit(const DenseRef& train, const KernelSpec& spec, const Domain& dom, const KmeOptions& opt) {
  const auto d = train.cols();
  rank_cap_ = kme_rank_cap(static_cast<std::size_t>(z_.rows()), opt.max_rank, opt.max_bytes);
  chol_ = pivoted_cholesky(z_, spec, opt.tol, rank_cap_);
  const std::size_t m = chol_.pivots.size();
  DoubleMatrix zp(static_cast<Eigen::Index>(m), d);
  for (std::size_t a = 0; a < m; ++a) zp.row(static_cast<Eigen::Index>(a)) = z_.row(static_cast<Eigen::Index>(chol_.pivots[a]));
  const DenseMatrix clipped = clip_to_domain(train, dom).cast<Real>();
  const std::vector<double> s = kde_at(clipped, zp, spec);  // f_D at the pivots, parallel
  Eigen::VectorXd sv = Eigen::Map<const Eigen::VectorXd>(s.data(), static_cast<Eigen::Index>(m));
  Eigen::VectorXd a = chol_.L.triangularView<Eigen::Lower>().solve(sv);  // alpha = L^{-1} s_P
  alpha_.assign(a.data(), a.data() + a.size());
}

PrivateMoments private_moments(const DenseRef& train, const Domain& dom, double epsilon_summary, RandomSource& rng,
                               double min_sd) {
  if (!(epsilon_summary > 0)) throw UsageError("kme: the summary's epsilon must be positive");
  if (train.rows() == 0) throw UsageError("kme: no training rows");
  const auto d = static_cast<std::size_t>(train.cols());
  const double n = static_cast<double>(train.rows());
  std::vector<double> s1(d, 0.0), s2(d, 0.0);
  for (Eigen::Index i = 0; i < train.rows(); ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const double u = dom.to_unit(train(i, static_cast<Eigen::Index>(j)));  // clipped into [0, 1]
      s1[j] += u;
      s2[j] += u * u;
    }
  PrivateMoments m;
  m.epsilon = epsilon_summary;
  m.noise_scale = 2.0 * static_cast<double>(d) / epsilon_summary;  // L1 sensitivity 2d (see kme.hpp)
  m.mean.resize(d);
  m.sd.resize(d);
  for (std::size_t j = 0; j < d; ++j) {
    const double mean = std::clamp((s1[j] + sample_laplace(rng, m.noise_scale)) / n, 0.0, 1.0);
    const double second = (s2[j] + sample_laplace(rng, m.noise_scale)) / n;
    const double var = std::clamp(second - mean * mean, min_sd * min_sd, 0.25);
    m.mean[j] = mean;
    m.sd[j] = std::sqrt(var);
  }
  return m;
}

DoubleMatrix moment_points(const PrivateMoments& m, std::size_t count, const Domain& dom, std::uint64_t seed) {
  const auto d = static_cast<Eigen::Index>(m.mean.size());
  DoubleMatrix z(static_cast<Eigen::Index>(count), d);
  SeededRandom rng(seed);  // public randomness: the points are post-processing of the summary
  for (Eigen::Index i = 0; i < z.rows(); ++i)
    for (Eigen::Index j = 0; j < d; ++j) {
      const auto jj = static_cast<std::size_t>(j);
      z(i, j) = dom.from_unit(std::clamp(m.mean[jj] + m.sd[jj] * sample_normal(rng), 0.0, 1.0));
    }
  return z;
}

WeightedPoints KmeRelease::release(double epsilon, double delta, RandomSource* rng, double* sigma_out) const {
  const std::size_t m = alpha_.size();
  Eigen::VectorXd beta = Eigen::Map<const Eigen::VectorXd>(alpha_.data(), static_cast<Eigen::Index>(m));
  double sigma = 0;
  if (rng) {
    sigma = kme_sigma(epsilon, delta, 2.0 / n_);
    for (std::size_t i = 0; i < m; ++i) beta(static_cast<Eigen::Index>(i)) += sigma * sample_normal(*rng);
  }
  if (sigma_out) *sigma_out = sigma;
  // w = B beta with B = L^{-T}: weights on the pivot points.
  Eigen::VectorXd w = chol_.L.triangularView<Eigen::Lower>().transpose().solve(beta);
  WeightedPoints out;
  out.points.resize(static_cast<Eigen::Index>(m), z_.cols());
  out.weights.resize(m);
  for (std::size_t a = 0; a < m; ++a) {
    out.points.row(static_cast<Eigen::Index>(a)) = z_.row(static_cast<Eigen::Index>(chol_.pivots[a]));
    out.weights[a] = w(static_cast<Eigen::Index>(a));
  }
  return out;
}

}  // namespace privrace::baselines
