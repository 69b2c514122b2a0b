#include "privrace/baselines/kme.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/privacy/mechanisms.hpp"

namespace privrace::baselines {

namespace {

// The factor's rows L(i, 0..t) as `Stored`, in panels of kPanel columns: panel k holds columns
// kPanel k .. kPanel k + kPanel - 1 of every row, row after row. Rows are kept in slots, the
// rows still to be factored in the first slots: a pivot's row is never read after its step (its
// later entries are 0), so it leaves the active stretch and step t streams each panel's active
// part front to back, contiguous. Panels are allocated as the rank grows.
template <typename Stored>
class PanelRows {
 public:
  static constexpr std::size_t kPanel = 32;
  explicit PanelRows(std::size_t rows) : rows_(rows) {}
  const Stored* row_in(std::size_t k, std::size_t slot) const { return panels_[k].data() + slot * kPanel; }
  Stored& at(std::size_t slot, std::size_t column) { return panels_[column / kPanel][slot * kPanel + column % kPanel]; }
  void make_room_for(std::size_t column) {
    if (column / kPanel >= panels_.size()) panels_.emplace_back(rows_ * kPanel, Stored(0));
  }
  void swap_slots(std::size_t a, std::size_t b) {
    for (auto& panel : panels_) std::swap_ranges(panel.begin() + static_cast<std::ptrdiff_t>(a * kPanel),
                                                 panel.begin() + static_cast<std::ptrdiff_t>((a + 1) * kPanel),
                                                 panel.begin() + static_cast<std::ptrdiff_t>(b * kPanel));
  }

 private:
  std::size_t rows_;
  std::vector<std::vector<Stored>> panels_;
};

// Greedy pivot selection: the pivot and residual recurrences of pivoted Cholesky with the rows
// held as `Stored`. Step t reads every active row's t entries, so the selection is bound by
// memory traffic; float rows halve the bytes (docs/architecture.md, "KME's pivoted Cholesky").
// A row's dot product is summed panel by panel in the same order on any number of threads;
// within a panel in `Stored`, across panels in double. With `pivot_rows`, each pivot's row of L
// (in double, as stored) is appended to it.
template <typename Stored>
PivotedCholesky select_pivots(const DoubleMatrix& points, const KernelSpec& spec, double tol, std::size_t cap,
                              std::vector<std::vector<double>>* pivot_rows) {
  constexpr std::size_t P = PanelRows<Stored>::kPanel;
  constexpr std::size_t kBlock = 256;  // rows a thread takes at once: 32 KB of a float panel
  using Segment = Eigen::Map<const Eigen::Matrix<Stored, Eigen::Dynamic, 1>>;
  const auto M = static_cast<std::size_t>(points.rows());
  const auto d = static_cast<std::size_t>(points.cols());
  PanelRows<Stored> rows(M);
  std::vector<std::size_t> point_of(M);  // slot -> point
  std::vector<double> resid(M);          // by slot
  for (std::size_t i = 0; i < M; ++i) {
    point_of[i] = i;
    const double* z = points.row(static_cast<Eigen::Index>(i)).data();
    resid[i] = kernel_value(spec, z, z, d);
  }
  std::size_t active = M;
  PivotedCholesky out;
  std::vector<Stored> lp;
  for (std::size_t t = 0; t < cap && active > 0; ++t) {
    std::size_t s = 0;  // the largest residual; a tie goes to the lower point index
    for (std::size_t j = 1; j < active; ++j)
      if (resid[j] > resid[s] || (resid[j] == resid[s] && point_of[j] < point_of[s])) s = j;
    if (resid[s] <= tol) break;
    const std::size_t p = point_of[s];
    const double piv = std::sqrt(resid[s]);
    out.pivots.push_back(p);
    lp.resize(t);
    for (std::size_t c = 0; c < t; ++c) lp[c] = rows.at(s, c);
    if (pivot_rows) {
      pivot_rows->emplace_back(lp.begin(), lp.end());
      pivot_rows->back().push_back(piv);  // L(p, t) = (k(p, p) - |L(p, 0..t)|^2) / piv = piv
    }
    --active;
    rows.swap_slots(s, active);
    std::swap(point_of[s], point_of[active]);
    std::swap(resid[s], resid[active]);
    resid[active] = 0.0;
    rows.make_room_for(t);
    const double* zp = points.row(static_cast<Eigen::Index>(p)).data();
    const std::size_t panels = (t + P - 1) / P;
    const auto blocks = static_cast<std::ptrdiff_t>((active + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t blk = 0; blk < blocks; ++blk) {
      const std::size_t i0 = static_cast<std::size_t>(blk) * kBlock, i1 = std::min(active, i0 + kBlock);
      std::array<double, kBlock> acc{};
      for (std::size_t k = 0; k < panels; ++k) {  // one contiguous stretch of each panel
        const auto len = static_cast<Eigen::Index>(std::min(P, t - k * P));
        const Segment lpk(lp.data() + k * P, len);
        for (std::size_t i = i0; i < i1; ++i) acc[i - i0] += static_cast<double>(Segment(rows.row_in(k, i), len).dot(lpk));
      }
      for (std::size_t i = i0; i < i1; ++i) {
        const double* zi = points.row(static_cast<Eigen::Index>(point_of[i])).data();
        const double v = (kernel_value(spec, zi, zp, d) - acc[i - i0]) / piv;
        rows.at(i, t) = static_cast<Stored>(v);
        resid[i] = std::max(0.0, resid[i] - v * v);
      }
    }
  }
  out.max_residual = out.pivots.empty() ? 1.0
                     : active == 0      ? 0.0
                                        : *std::max_element(resid.begin(), resid.begin() + static_cast<std::ptrdiff_t>(active));
  return out;
}

}  // namespace

PivotedCholesky pivoted_cholesky(const DoubleMatrix& points, const KernelSpec& spec, double tol, std::size_t max_rank,
                                 PivotRows precision) {
  const auto M = static_cast<std::size_t>(points.rows());
  const std::size_t cap = max_rank == 0 ? M : std::min(max_rank, M);  // 0 = no cap
  if (precision == PivotRows::Double || (precision == PivotRows::Automatic && tol < kFloatPivotTolerance)) {
    std::vector<std::vector<double>> pivot_rows;
    PivotedCholesky out = select_pivots<double>(points, spec, tol, cap, &pivot_rows);
    const auto m = static_cast<Eigen::Index>(pivot_rows.size());
    out.L.setZero(m, m);
    for (Eigen::Index a = 0; a < m; ++a)
      out.L.row(a).head(a + 1) = Eigen::Map<const Eigen::RowVectorXd>(pivot_rows[static_cast<std::size_t>(a)].data(), a + 1);
    return out;
  }
  PivotedCholesky out = select_pivots<float>(points, spec, tol, cap, nullptr);
  // The factor of the chosen pivots, in double: the Cholesky of their Gram matrix, in pivot order
  // (what the greedy recurrence computes, without the float rows' rounding).
  const auto m = static_cast<Eigen::Index>(out.pivots.size());
  const auto d = static_cast<std::size_t>(points.cols());
  Eigen::MatrixXd gram(m, m);
#pragma omp parallel for schedule(dynamic, 16)
  for (Eigen::Index a = 0; a < m; ++a) {
    const double* za = points.row(static_cast<Eigen::Index>(out.pivots[static_cast<std::size_t>(a)])).data();
    for (Eigen::Index b = 0; b <= a; ++b)
      gram(a, b) = kernel_value(spec, za, points.row(static_cast<Eigen::Index>(out.pivots[static_cast<std::size_t>(b)])).data(), d);
  }
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>, Eigen::Lower> llt(gram);  // in place: one m x m matrix
  // Pivots whose float residual was above tol but whose double one is not (tol near the float
  // rows' rounding): the exact recurrence decides instead.
  if (llt.info() != Eigen::Success) return pivoted_cholesky(points, spec, tol, max_rank, PivotRows::Double);
  gram.triangularView<Eigen::StrictlyUpper>().setZero();
  out.L = std::move(gram);
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
