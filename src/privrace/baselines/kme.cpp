#include "privrace/baselines/kme.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
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

// dots[c] += sum_j x[j] c[j * stride + c] for c < W, summed in `Stored` in the order of j: W
// sums at once, held in registers.
template <typename Stored, std::size_t W>
void add_dots(const Stored* x, const Stored* c, std::size_t len, std::size_t stride, double* dots) {
  std::array<Stored, W> acc{};
  for (std::size_t j = 0; j < len; ++j) {
    const Stored xj = x[j];
    const Stored* cj = c + j * stride;
    for (std::size_t w = 0; w < W; ++w) acc[w] += xj * cj[w];
  }
  for (std::size_t w = 0; w < W; ++w) dots[w] += static_cast<double>(acc[w]);
}
constexpr std::size_t kDotWidth = 16;

// The same sums for R consecutive rows of a panel at once (rows `xstride` apart, their dots
// `dstride` apart): each candidate column is loaded once for R rows and the R x W sums are
// independent chains, where one row's W sums wait on the latency of their own additions. Each
// sum is the same sequence of operations as add_dots's (acc += x[j] c[j] in the order of j,
// then added to dots in double), so the sums, and the pivots, are bit for bit the same.
template <typename Stored>
struct Vec32;
template <>
struct Vec32<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct Vec32<double> {
  typedef double type __attribute__((vector_size(32)));
};
template <typename V, typename S, std::size_t... L>
V splat(S s, std::index_sequence<L...>) {
  return V{((void)L, s)...};
}
template <typename Stored, std::size_t R, std::size_t W>
void add_dots_rows(const Stored* x, std::size_t xstride, const Stored* c, std::size_t len, std::size_t stride,
                   double* dots, std::size_t dstride) {
  // GCC / clang vector extensions, so that the R x W sums stay in registers (plain arrays left
  // a row's sums on the stack, a store and a load per step on their chain).
  using V = typename Vec32<Stored>::type;
  constexpr std::size_t kLanes = sizeof(V) / sizeof(Stored), kVectors = W / kLanes;
  static_assert(W % kLanes == 0);
  V acc[R][kVectors];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < kVectors; ++v) acc[r][v] = V{};
  for (std::size_t j = 0; j < len; ++j) {
    const Stored* cj = c + j * stride;
    V cv[kVectors];
    for (std::size_t v = 0; v < kVectors; ++v) std::memcpy(&cv[v], cj + v * kLanes, sizeof(V));
    for (std::size_t r = 0; r < R; ++r) {
      const V xr = splat<V>(x[r * xstride + j], std::make_index_sequence<kLanes>{});
      for (std::size_t v = 0; v < kVectors; ++v) acc[r][v] += xr * cv[v];
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t v = 0; v < kVectors; ++v)
      for (std::size_t l = 0; l < kLanes; ++l) dots[r * dstride + v * kLanes + l] += static_cast<double>(acc[r][v][l]);
}
// Rows per register block: 5 x kDotWidth float sums in 10 of the 16 AVX2 registers. Double
// rows (tol below kFloatPivotTolerance) keep one row at a time: GCC 12 left a block's double
// sums on the stack.
template <typename Stored>
inline constexpr std::size_t kDotRows = sizeof(Stored) == 4 ? 5 : 1;

// Greedy pivot selection: the pivot and residual recurrences of pivoted Cholesky with the rows
// held as `Stored`. Step t needs every active row's dot product with the pivot's row (t entries),
// so one step at a time the selection is bound by memory traffic; float rows halve the bytes, and
// batches read each entry once for `lookahead` candidates: at step t0 the candidates are the
// points with the largest residuals, and one pass computes every row's dots with them over
// columns 0..t0. A step whose argmax (still taken over every residual) is a candidate adds only
// the batch's own columns t0..t-1; any other argmax starts a new batch. So batches change where
// sums are made, not which pivot is chosen (docs/architecture.md, "KME's pivoted Cholesky").
// Sums: in a panel in `Stored`, across panels and over the batch's columns in double, the same
// on any number of threads. With `pivot_rows`, each pivot's row of L (as stored) is appended.
template <typename Stored>
class PivotSelection {
 public:
  static constexpr std::size_t P = PanelRows<Stored>::kPanel;
  static constexpr std::size_t kBlock = 256;  // rows a thread takes at once: 32 KB of a float panel

  PivotSelection(const DoubleMatrix& points, const KernelSpec& spec, std::size_t lookahead)
      : points_(points), spec_(spec), d_(static_cast<std::size_t>(points.cols())), b_(std::max<std::size_t>(lookahead, 1)),
        active_(static_cast<std::size_t>(points.rows())), rows_(active_), point_of_(active_), resid_(active_),
        candidate_of_(active_, -1), batch_dots_(active_ * b_, 0.0) {
    for (std::size_t i = 0; i < active_; ++i) {
      point_of_[i] = i;
      const double* z = points_.row(static_cast<Eigen::Index>(i)).data();
      resid_[i] = kernel_value(spec_, z, z, d_);
    }
  }
  std::size_t active() const { return active_; }

  // The active slot with the largest residual; a tie goes to the lower point index.
  std::size_t argmax() const {
    std::size_t s = 0;
    for (std::size_t j = 1; j < active_; ++j)
      if (resid_[j] > resid_[s] || (resid_[j] == resid_[s] && point_of_[j] < point_of_[s])) s = j;
    return s;
  }
  double residual(std::size_t slot) const { return resid_[slot]; }

  // Step t with pivot slot s: L(p, t) = piv; every other active row gains column t and loses
  // v^2 of its residual. Returns the pivot's point; with `pivot_rows`, appends its row of L.
  std::size_t step(std::size_t t, std::size_t s, std::vector<std::vector<double>>* pivot_rows) {
    const std::size_t p = point_of_[s];
    if (candidate_of_[p] < 0) start_batch(t);  // p has the largest residual: a candidate now
    const auto c = static_cast<std::size_t>(candidate_of_[p]);
    const double piv = std::sqrt(resid_[s]);
    lp_.resize(t);
    for (std::size_t col = 0; col < t; ++col) lp_[col] = static_cast<double>(rows_.at(s, col));
    if (pivot_rows) {
      pivot_rows->emplace_back(lp_.begin(), lp_.end());
      pivot_rows->back().push_back(piv);  // L(p, t) = (k(p, p) - |L(p, 0..t)|^2) / piv = piv
    }
    retire(s);
    rows_.make_room_for(t);
    update_rows(t, p, c, piv);
    return p;
  }

  double max_residual() const {
    return active_ == 0 ? 0.0 : *std::max_element(resid_.begin(), resid_.begin() + static_cast<std::ptrdiff_t>(active_));
  }

 private:
  // The batch: the `b_` active points with the largest residuals become candidates, and every
  // active slot's dot products with their rows over columns 0..t are summed (slot-major).
  void start_batch(std::size_t t) {
    for (const std::size_t p : candidates_) candidate_of_[p] = -1;
    std::vector<std::size_t> order(active_);
    for (std::size_t i = 0; i < active_; ++i) order[i] = i;
    const std::size_t count = std::min(b_, active_);
    const auto larger = [&](std::size_t x, std::size_t y) {  // the argmax's order: ties to the lower point
      return resid_[x] > resid_[y] || (resid_[x] == resid_[y] && point_of_[x] < point_of_[y]);
    };
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count - 1), order.end(), larger);
    std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), larger);
    candidates_.assign(count, 0);
    // cand[col * count + c] = L(candidate c, col): per column, the candidates side by side.
    std::vector<Stored> cand(t * count);
    for (std::size_t c = 0; c < count; ++c) {
      candidates_[c] = point_of_[order[c]];
      candidate_of_[candidates_[c]] = static_cast<int>(c);
      for (std::size_t col = 0; col < t; ++col) cand[col * count + c] = rows_.at(order[c], col);
    }
    t0_ = t;
    batch_dot_products(cand, t, count);
  }

  void batch_dot_products(const std::vector<Stored>& cand, std::size_t t, std::size_t count) {
    const std::size_t panels = (t + P - 1) / P;
    const auto blocks = static_cast<std::ptrdiff_t>((active_ + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t blk = 0; blk < blocks; ++blk) {
      const std::size_t i0 = static_cast<std::size_t>(blk) * kBlock, i1 = std::min(active_, i0 + kBlock);
      std::fill(batch_dots_.begin() + static_cast<std::ptrdiff_t>(i0 * b_), batch_dots_.begin() + static_cast<std::ptrdiff_t>(i1 * b_), 0.0);
      for (std::size_t k = 0; k < panels; ++k) {  // one contiguous stretch of each panel
        const std::size_t len = std::min(P, t - k * P);
        const Stored* ck = cand.data() + k * P * count;
        constexpr std::size_t R = kDotRows<Stored>;
        std::size_t i = i0;
        for (; R > 1 && i + R <= i1 && count >= kDotWidth; i += R) {  // rows_.row_in(k, i + r) = row_in(k, i) + r P
          const Stored* x = rows_.row_in(k, i);
          double* dots = batch_dots_.data() + i * b_;
          std::size_t c = 0;
          for (; c + kDotWidth <= count; c += kDotWidth)
            add_dots_rows<Stored, R, kDotWidth>(x, P, ck + c, len, count, dots + c, b_);
          for (std::size_t r = 0; r < R; ++r)
            for (std::size_t cc = c; cc < count; ++cc) add_dots<Stored, 1>(x + r * P, ck + cc, len, count, dots + r * b_ + cc);
        }
        for (; i < i1; ++i) {
          // The same arithmetic for every row, blocked or not, so equal rows get equal sums (ties stay ties).
          const Stored* x = rows_.row_in(k, i);
          double* dots = batch_dots_.data() + i * b_;
          std::size_t c = 0;
          for (; c + kDotWidth <= count; c += kDotWidth) add_dots<Stored, kDotWidth>(x, ck + c, len, count, dots + c);
          for (; c < count; ++c) add_dots<Stored, 1>(x, ck + c, len, count, dots + c);
        }
      }
    }
  }

  // Moves slot s past the active ones (its residual becomes 0).
  void retire(std::size_t s) {
    --active_;
    rows_.swap_slots(s, active_);
    std::swap(point_of_[s], point_of_[active_]);
    std::swap(resid_[s], resid_[active_]);
    std::swap_ranges(batch_dots_.begin() + static_cast<std::ptrdiff_t>(s * b_), batch_dots_.begin() + static_cast<std::ptrdiff_t>((s + 1) * b_),
                     batch_dots_.begin() + static_cast<std::ptrdiff_t>(active_ * b_));
    resid_[active_] = 0.0;
  }

  // Column t of every active row: (k(z_i, z_p) - <L_i, L_p>) / piv, the dot product from the
  // batch's sums over columns 0..t0 plus the columns t0..t-1 added since.
  void update_rows(std::size_t t, std::size_t p, std::size_t c, double piv) {
    const double* zp = points_.row(static_cast<Eigen::Index>(p)).data();
    const auto blocks = static_cast<std::ptrdiff_t>((active_ + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t blk = 0; blk < blocks; ++blk) {
      const std::size_t i0 = static_cast<std::size_t>(blk) * kBlock, i1 = std::min(active_, i0 + kBlock);
      double kv[kBlock];  // k(z_i, z_p) for the block's rows
      kernel_values(spec_, points_, point_of_.data() + i0, i1 - i0, zp, kv);
      for (std::size_t i = i0; i < i1; ++i) {
        double dot = batch_dots_[i * b_ + c];
        for (std::size_t col = t0_; col < t; ++col) dot += static_cast<double>(rows_.at(i, col)) * lp_[col];
        const double v = (kv[i - i0] - dot) / piv;
        rows_.at(i, t) = static_cast<Stored>(v);
        resid_[i] = std::max(0.0, resid_[i] - v * v);
      }
    }
  }

  const DoubleMatrix& points_;
  const KernelSpec& spec_;
  std::size_t d_, b_, active_, t0_ = 0;
  PanelRows<Stored> rows_;
  std::vector<std::size_t> point_of_;  // slot -> point
  std::vector<double> resid_;          // by slot
  std::vector<int> candidate_of_;      // candidate index of each point, -1: none
  std::vector<std::size_t> candidates_;
  std::vector<double> batch_dots_;     // every active slot's dots with the candidates over 0..t0
  std::vector<double> lp_;             // the pivot's row of L, columns 0..t-1
};

template <typename Stored>
PivotedCholesky select_pivots(const DoubleMatrix& points, const KernelSpec& spec, double tol, std::size_t cap,
                              std::size_t lookahead, std::vector<std::vector<double>>* pivot_rows) {
  PivotSelection<Stored> selection(points, spec, lookahead);
  PivotedCholesky out;
  for (std::size_t t = 0; t < cap && selection.active() > 0; ++t) {
    const std::size_t s = selection.argmax();
    if (selection.residual(s) <= tol) break;
    out.pivots.push_back(selection.step(t, s, pivot_rows));
  }
  out.max_residual = out.pivots.empty() ? 1.0 : selection.max_residual();
  return out;
}

}  // namespace

PivotedCholesky pivoted_cholesky(const DoubleMatrix& points, const KernelSpec& spec, double tol, std::size_t max_rank,
                                 PivotRows precision, std::size_t lookahead) {
  const auto M = static_cast<std::size_t>(points.rows());
  const std::size_t cap = max_rank == 0 ? M : std::min(max_rank, M);  // 0 = no cap
  if (precision == PivotRows::Double || (precision == PivotRows::Automatic && tol < kFloatPivotTolerance)) {
    std::vector<std::vector<double>> pivot_rows;
    PivotedCholesky out = select_pivots<double>(points, spec, tol, cap, lookahead, &pivot_rows);
    const auto m = static_cast<Eigen::Index>(pivot_rows.size());
    out.L.setZero(m, m);
    for (Eigen::Index a = 0; a < m; ++a)
      out.L.row(a).head(a + 1) = Eigen::Map<const Eigen::RowVectorXd>(pivot_rows[static_cast<std::size_t>(a)].data(), a + 1);
    return out;
  }
  PivotedCholesky out = select_pivots<float>(points, spec, tol, cap, lookahead, nullptr);
  // The factor of the chosen pivots, in double: the Cholesky of their Gram matrix, in pivot order
  // (what the greedy recurrence computes, without the float rows' rounding).
  const auto m = static_cast<Eigen::Index>(out.pivots.size());
  Eigen::MatrixXd gram(m, m);
  // Column b below the diagonal, k(z_a, z_b) for a >= b, straight into its contiguous storage.
#pragma omp parallel for schedule(dynamic, 16)
  for (Eigen::Index b = 0; b < m; ++b) {
    const double* zb = points.row(static_cast<Eigen::Index>(out.pivots[static_cast<std::size_t>(b)])).data();
    kernel_values(spec, points, out.pivots.data() + b, static_cast<std::size_t>(m - b), zb, gram.col(b).data() + b);
  }
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>, Eigen::Lower> llt(gram);  // in place: one m x m matrix
  // Pivots whose float residual was above tol but whose double one is not (tol near the float
  // rows' rounding): the exact recurrence decides instead.
  if (llt.info() != Eigen::Success) return pivoted_cholesky(points, spec, tol, max_rank, PivotRows::Double, lookahead);
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
