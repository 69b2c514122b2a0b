#include "privrace/tasks/m2m.hpp"

#include <omp.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlopt.hpp>
#include <sstream>

#include "privrace/core/limits.hpp"
#include "privrace/core/memory.hpp"
#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/number.hpp"
#include "privrace/core/random.hpp"
#include "privrace/lsh/families.hpp"

namespace privrace {
namespace {


std::size_t chunk_count(std::size_t n) { return (n + kM2mChunk - 1) / kM2mChunk; }

std::string number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// The shortest text that reads back as v ("255", not "255.00000000000000").
std::string short_number(double v) {
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// "LO:HI" when every attribute has the same interval, else "LO1:HI1,LO2:HI2,..." (as --domain reads it).
std::string domain_text(const BoxDomain& d) {
  bool same = true;
  for (std::size_t j = 1; j < d.dim(); ++j) same = same && d.lo[j] == d.lo[0] && d.hi[j] == d.hi[0];
  std::string s;
  for (std::size_t j = 0; j < (same ? std::min<std::size_t>(d.dim(), 1) : d.dim()); ++j) {
    if (j) s += ',';
    s += short_number(d.lo[j]);
    s += ':';
    s += short_number(d.hi[j]);
  }
  return s;
}

using ColumnIndexMatrix = Eigen::Matrix<std::uint32_t, Eigen::Dynamic, Eigen::Dynamic>;

}  // namespace

// --------------------------------------------------------------------------------------
// Domain and synthetic points

BoxDomain BoxDomain::uniform(std::size_t dim, double lo, double hi) {
  BoxDomain d;
  d.lo.assign(dim, lo);
  d.hi.assign(dim, hi);
  return d;
}

void BoxDomain::check() const {
  if (lo.size() != hi.size())
    throw UsageError("domain: " + std::to_string(lo.size()) + " lower bounds but " + std::to_string(hi.size()) +
                     " upper bounds");
  if (lo.empty()) throw UsageError("domain: no attributes");
  if (!binary.empty() && binary.size() != lo.size()) throw UsageError("domain: binary flags do not match the attributes");
  // The synthetic points are stored as Real (float32): a bound beyond its range would make them
  // infinite and every feature of them NaN.
  constexpr double kLargest = std::numeric_limits<Real>::max();
  for (std::size_t j = 0; j < lo.size(); ++j) {
    auto refuse = [&](const std::string& expected) {
      throw UsageError("domain: attribute " + std::to_string(j) + " has LO = " + number_text(lo[j]) + " and HI = " +
                       number_text(hi[j]) + "; " + expected);
    };
    if (!(std::isfinite(lo[j]) && std::isfinite(hi[j]) && lo[j] < hi[j])) refuse("expected finite LO < HI");
    if (std::abs(lo[j]) > kLargest || std::abs(hi[j]) > kLargest)
      refuse("the synthetic points are float32, so each bound must lie within +-" + number_text(kLargest));
  }
}

nlohmann::json BoxDomain::to_json() const {
  nlohmann::json j = {{"lo", lo}, {"hi", hi}};
  if (!binary.empty()) j["binary"] = binary;
  return j;
}

std::optional<BoxDomain> m2m_recorded_domain(const FeatureMap& map) {
  const auto* hist = dynamic_cast<const MarginalHistograms*>(&map.family());
  if (!hist) return std::nullopt;
  BoxDomain d;
  d.lo = hist->lo();
  d.hi = hist->hi();
  return d;
}

BoxDomain m2m_domain(const FeatureMap& map, const M2mOptions& options) {
  const std::optional<BoxDomain> recorded = m2m_recorded_domain(map);
  if (options.domain.dim() == 0 && options.domain.hi.empty()) {
    if (recorded) return *recorded;
    throw UsageError("the " + map.kind() + " sketch records no domain (its features are bounded for any " +
                     "record, so nothing in it bounds the data); M2M draws its synthetic points from a box the " +
                     "records lie in: give it with " + options.domain_option + " LO:HI");
  }
  options.domain.check();
  if (options.domain.dim() != map.input_dim())
    throw UsageError("m2m: the domain has " + std::to_string(options.domain.dim()) + " attributes but the sketch's " +
                     map.kind() + " map reads " + std::to_string(map.input_dim()));
  if (recorded && (options.domain.lo != recorded->lo || options.domain.hi != recorded->hi))
    throw UsageError(options.domain_option + " " + domain_text(options.domain) + " differs from the domain the " +
                     map.kind() + " sketch records, " + domain_text(*recorded) +
                     " (family.lo / family.hi): its bins partition that domain, and M2M's synthetic points must "
                     "cover them as the records did; leave " + options.domain_option + " out to use it");
  return options.domain;
}

void m2m_synthetic_chunk(const BoxDomain& domain, std::uint64_t seed, std::size_t chunk, std::size_t rows,
                         DenseMatrix& out) {
  const std::size_t d = domain.dim();
  out.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(d));
  SeededRandom rng(derive_seed(seed, chunk));
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      // min: lo + (hi - lo) u can round one ulp past hi.
      const double v = domain.is_binary(j) ? (rng.bit() ? domain.hi[j] : domain.lo[j])
                                           : std::min(domain.hi[j], domain.lo[j] + (domain.hi[j] - domain.lo[j]) * rng.unit());
      out(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = static_cast<Real>(v);
    }
}

// --------------------------------------------------------------------------------------
// Blocked Cholesky

bool parallel_cholesky_lower(Eigen::MatrixXd& a) {
  const Eigen::Index n = a.rows();
  constexpr Eigen::Index kPanel = 192, kTile = 192;
  for (Eigen::Index k0 = 0; k0 < n; k0 += kPanel) {
    const Eigen::Index kb = std::min(kPanel, n - k0);
    Eigen::Ref<Eigen::MatrixXd> akk = a.block(k0, k0, kb, kb);
    Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(akk);  // in place, lower triangle
    if (llt.info() != Eigen::Success) return false;
    const Eigen::Index rest = n - k0 - kb;
    if (rest == 0) break;
    const Eigen::Index row_tiles = (rest + kTile - 1) / kTile;
    // Panel: A21 <- A21 L11^{-T}.
#pragma omp parallel for schedule(dynamic)
    for (Eigen::Index t = 0; t < row_tiles; ++t) {
      const Eigen::Index r0 = k0 + kb + t * kTile, rb = std::min(kTile, n - r0);
      auto panel = a.block(r0, k0, rb, kb);
      a.block(k0, k0, kb, kb).triangularView<Eigen::Lower>().transpose().solveInPlace<Eigen::OnTheRight>(panel);
    }
    // Trailing update of the lower triangle: A22 <- A22 - A21 A21^T, one thread per tile.
    const Eigen::Index pairs = row_tiles * (row_tiles + 1) / 2;
#pragma omp parallel for schedule(dynamic)
    for (Eigen::Index p = 0; p < pairs; ++p) {
      Eigen::Index ti = static_cast<Eigen::Index>((std::sqrt(8.0 * static_cast<double>(p) + 1) - 1) / 2);
      while (ti * (ti + 1) / 2 > p) --ti;
      while ((ti + 1) * (ti + 2) / 2 <= p) ++ti;
      const Eigen::Index tj = p - ti * (ti + 1) / 2;
      const Eigen::Index i0 = k0 + kb + ti * kTile, ib = std::min(kTile, n - i0);
      const Eigen::Index j0 = k0 + kb + tj * kTile, jb = std::min(kTile, n - j0);
      a.block(i0, j0, ib, jb).noalias() -= a.block(i0, k0, ib, kb) * a.block(j0, k0, jb, kb).transpose();
    }
  }
  return true;
}

void cholesky_solve_lower(const Eigen::MatrixXd& l, Eigen::Ref<Eigen::MatrixXd> b) {
  l.triangularView<Eigen::Lower>().solveInPlace(b);
  l.triangularView<Eigen::Lower>().transpose().solveInPlace(b);
}

// --------------------------------------------------------------------------------------
// The model

M2mDesign::M2mDesign(std::shared_ptr<const FeatureMap> map, const M2mOptions& options)
    : map_(std::move(map)), options_(options) {
  if (!map_) throw UsageError("m2m: no feature map");
  options_.domain = m2m_domain(*map_, options_);  // checked, of the map's dimension
  if (options_.samples == 0) throw UsageError("m2m: the number of synthetic samples must be positive");
  check_threads(options_.threads, "m2m threads");
  if (options_.threads > 0) omp_set_num_threads(options_.threads);
  m_ = map_->size();
  {
    // Refused before allocating: the m x m Gram matrix and its Cholesky copy (M2mModel), the
    // synthetic points (a RACE sketch's m is R x W, so a KDE-sized sketch is far too big) and a
    // dense map's kept features.
    const double m = static_cast<double>(m_);
    const double features = static_cast<double>(options_.samples) * m * sizeof(double);
    const double need = 2.0 * m * m * sizeof(double) +
                        static_cast<double>(options_.samples) * static_cast<double>(options_.domain.dim()) * sizeof(Real) +
                        (map_->active_per_point() == 0 && features <= kM2mFeatureCacheBytes ? features : 0.0);
    const double memory = physical_memory_bytes();
    if (need > 0.8 * memory)
      throw ResourceError("m2m: the " + map_->kind() + " map has m = " + std::to_string(m_) +
                          " features; its m x m system needs about " +
                          std::to_string(static_cast<long long>(need / 1048576.0)) + " MiB, more than 80% of the " +
                          std::to_string(static_cast<long long>(memory / 1048576.0)) +
                          " MiB of memory; refused before allocating (use a sketch with fewer features)");
  }
  active_ = map_->active_per_point();
  if (active_ > 0 && m_ % active_ != 0) block_structured_ = false;

  // Synthetic points (public): chunk c from its own stream.
  const std::size_t ns = options_.samples, chunks = chunk_count(ns);
  synthetic_.resize(static_cast<Eigen::Index>(ns), static_cast<Eigen::Index>(options_.domain.dim()));
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t first = c * kM2mChunk, rows = std::min(kM2mChunk, ns - first);
    DenseMatrix block;
    m2m_synthetic_chunk(options_.domain, options_.seed, c, rows, block);
    synthetic_.middleRows(static_cast<Eigen::Index>(first), static_cast<Eigen::Index>(rows)) = block;
  }
  const auto t0 = std::chrono::steady_clock::now();
  gram_.setZero(static_cast<Eigen::Index>(m_), static_cast<Eigen::Index>(m_));
  if (active_ > 0) accumulate_one_hot(gram_);
  else accumulate_dense(gram_);
  gram_.triangularView<Eigen::Lower>() /= static_cast<double>(ns);
  if (options_.intercept) feature_mean_ = cross(Eigen::MatrixXd::Ones(static_cast<Eigen::Index>(ns), 1)).col(0);
  // Gershgorin's bound from the lower triangle: row i's sum is its stored part and column i's.
  Eigen::VectorXd row_sums = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(m_));
  for (Eigen::Index j = 0; j < static_cast<Eigen::Index>(m_); ++j) {
    const auto below = gram_.col(j).tail(static_cast<Eigen::Index>(m_) - j).cwiseAbs();
    row_sums.tail(static_cast<Eigen::Index>(m_) - j) += below;
    row_sums(j) += below.sum() - below(0);
  }
  norm_bound_ = m_ == 0 ? 0.0 : row_sums.maxCoeff();
  gram_seconds_ = seconds_since(t0);
}

Eigen::VectorXd M2mDesign::ridge_product(const Eigen::VectorXd& v, double lambda) const {
  Eigen::VectorXd out = gram_.selfadjointView<Eigen::Lower>() * v;
  if (options_.intercept) out -= feature_mean_ * feature_mean_.dot(v);
  out += lambda * v;
  return out;
}

int ridge_conjugate_gradient(const M2mDesign& design, double lambda, const Eigen::VectorXd& b, double tol,
                             int max_iterations, Eigen::VectorXd& x) {
  x = Eigen::VectorXd::Zero(b.size());
  const double target = tol * b.norm();
  if (b.norm() == 0) return 0;
  Eigen::VectorXd r = b, p = b;
  double rr = r.squaredNorm();
  for (int k = 1; k <= max_iterations; ++k) {
    const Eigen::VectorXd q = design.ridge_product(p, lambda);
    const double alpha = rr / p.dot(q);
    x += alpha * p;
    r -= alpha * q;
    const double next = r.squaredNorm();
    if (std::sqrt(next) <= target) return k;
    p = r + (next / rr) * p;
    rr = next;
  }
  return -1;
}

int cg_iteration_bound(double kappa, double reduction) {
  if (!(kappa >= 1) || !std::isfinite(kappa)) return std::numeric_limits<int>::max();
  const double s = std::sqrt(kappa);
  if (s - 1 <= 0) return 1;
  const double k = std::ceil(std::log(2.0 / reduction) / std::log((s + 1) / (s - 1)));
  return k > 1e9 ? std::numeric_limits<int>::max() : std::max(1, static_cast<int>(k));
}

namespace {
// The bound for a residual of kRidgeCgTolerance: ||r|| / ||b|| <= sqrt(kappa) times the energy
// norm's reduction, so the latter must reach tol / sqrt(kappa).
int ridge_cg_bound(const M2mDesign& design, double lambda) {
  if (!(lambda > 0)) return std::numeric_limits<int>::max();
  const double kappa = (design.gram_norm_bound() + lambda) / lambda;
  return cg_iteration_bound(kappa, kRidgeCgTolerance / std::sqrt(kappa));
}
}  // namespace

bool m2m_cg_affordable(const M2mDesign& design, double lambda, int* bound) {
  const int b = ridge_cg_bound(design, lambda);
  if (bound) *bound = b;
  return b != std::numeric_limits<int>::max() && static_cast<double>(b) * 64.0 <= static_cast<double>(design.features());
}

void M2mDesign::accumulate_dense(Eigen::MatrixXd& gram) {
  const std::size_t ns = options_.samples, chunks = chunk_count(ns);
  const auto m = static_cast<Eigen::Index>(m_);
  constexpr Eigen::Index kTile = 64;
  const Eigen::Index tiles = (m + kTile - 1) / kTile, pairs = tiles * (tiles + 1) / 2;
  const bool keep = static_cast<double>(ns) * static_cast<double>(m_) * sizeof(double) <= kM2mFeatureCacheBytes;
  if (keep) kept_features_.resize(chunks);
  for (std::size_t c = 0; c < chunks; ++c) {
    const auto first = static_cast<Eigen::Index>(c * kM2mChunk);
    const auto rows = static_cast<Eigen::Index>(std::min(kM2mChunk, ns - c * kM2mChunk));
    DoubleMatrix feat_rows;
    map_->features(synthetic_.middleRows(first, rows), feat_rows);
    const Eigen::MatrixXd feat = feat_rows;  // column-major: tiles read contiguous columns
    if (keep) kept_features_[c] = std::move(feat_rows);
    // Lower-triangle tiles of P_c^T P_c, one thread per tile, chunks in order.
#pragma omp parallel for schedule(dynamic)
    for (Eigen::Index p = 0; p < pairs; ++p) {
      Eigen::Index ti = 0;
      while ((ti + 1) * (ti + 2) / 2 <= p) ++ti;
      const Eigen::Index tj = p - ti * (ti + 1) / 2;
      const Eigen::Index i0 = ti * kTile, ib = std::min(kTile, m - i0), j0 = tj * kTile, jb = std::min(kTile, m - j0);
      gram.block(i0, j0, ib, jb).noalias() += feat.middleCols(i0, ib).transpose() * feat.middleCols(j0, jb);
    }
  }
}

void M2mDesign::accumulate_one_hot(Eigen::MatrixXd& gram) const {
  // One-hot features: P^T P = sum_i sum_{j, j'} e_{a_ij} e_{a_ij'}^T, counted pair of index
  // columns by pair (a co-occurrence table of two blocks). Counts are exact integers in
  // doubles, so the order of the additions does not matter.
  const std::size_t ns = options_.samples;
  const std::size_t k = active_, width = m_ / active_;
  const std::size_t pairs = k * (k + 1) / 2;
  for (std::size_t first = 0; first < ns; first += kGramChunk) {
    const std::size_t rows = std::min(kGramChunk, ns - first), subs = chunk_count(rows);
    ColumnIndexMatrix idx(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(k));
    bool blocks = block_structured_, in_range = true;
#pragma omp parallel for schedule(static) reduction(&& : blocks, in_range)
    for (std::size_t c = 0; c < subs; ++c) {
      const std::size_t r0 = c * kM2mChunk, rb = std::min(kM2mChunk, rows - r0);
      IndexMatrix sub;
      map_->active_indices(synthetic_.middleRows(static_cast<Eigen::Index>(first + r0), static_cast<Eigen::Index>(rb)), sub);
      for (std::size_t j = 0; j < k; ++j)
        for (std::size_t i = 0; i < rb; ++i) {
          const std::uint32_t a = sub(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
          idx(static_cast<Eigen::Index>(r0 + i), static_cast<Eigen::Index>(j)) = a;
          in_range = in_range && a < m_;
          blocks = blocks && a / width == j;
        }
    }
    if (!in_range) throw Error("m2m: the " + map_->kind() + " map returned an index outside [0, " + std::to_string(m_) + ")");
    if (blocks) {
      // Pair (j1 >= j2) touches only block (j1, j2) of the lower triangle: counts in a local
      // W x W table (in L1), then added to the block; no two threads touch one entry.
#pragma omp parallel
      {
        std::vector<std::uint32_t> local(width * width);
#pragma omp for schedule(dynamic, 4)
        for (std::size_t p = 0; p < pairs; ++p) {
          std::size_t j1 = 0;
          while ((j1 + 1) * (j1 + 2) / 2 <= p) ++j1;
          const std::size_t j2 = p - j1 * (j1 + 1) / 2;
          const std::uint32_t* c1 = idx.col(static_cast<Eigen::Index>(j1)).data();
          const std::uint32_t* c2 = idx.col(static_cast<Eigen::Index>(j2)).data();
          const std::uint32_t o1 = static_cast<std::uint32_t>(j1 * width), o2 = static_cast<std::uint32_t>(j2 * width);
          if (j1 == j2) {
            for (std::size_t i = 0; i < rows; ++i) gram(c1[i], c1[i]) += 1;
            continue;
          }
          std::fill(local.begin(), local.end(), 0u);
          for (std::size_t i = 0; i < rows; ++i) ++local[(c2[i] - o2) * width + (c1[i] - o1)];
          for (std::size_t v = 0; v < width; ++v) {
            double* col = &gram(o1, o2 + v);
            const std::uint32_t* counts = &local[v * width];
            for (std::size_t u = 0; u < width; ++u) col[u] += counts[u];
          }
        }
      }
      continue;
    }
    // Not block-structured: one thread, any index pattern.
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j1 = 0; j1 < k; ++j1) {
        const std::uint32_t a = idx(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j1));
        gram(a, a) += 1;
        for (std::size_t j2 = 0; j2 < j1; ++j2) {
          const std::uint32_t b = idx(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j2));
          if (a > b) gram(a, b) += 1;
          else if (a < b) gram(b, a) += 1;
          else gram(a, a) += 2;
        }
      }
  }
}

const DoubleMatrix& M2mDesign::chunk_features(std::size_t c, DoubleMatrix& scratch) const {
  if (c < kept_features_.size()) return kept_features_[c];
  const std::size_t ns = samples();
  const auto first = static_cast<Eigen::Index>(c * kM2mChunk);
  const auto rows = static_cast<Eigen::Index>(std::min(kM2mChunk, ns - c * kM2mChunk));
  map_->features(synthetic_.middleRows(first, rows), scratch);
  return scratch;
}

Eigen::VectorXd M2mDesign::apply(const Eigen::VectorXd& v) const {
  const std::size_t ns = samples(), chunks = chunk_count(ns);
  Eigen::VectorXd out(static_cast<Eigen::Index>(ns));
#pragma omp parallel for schedule(dynamic)
  for (std::size_t c = 0; c < chunks; ++c) {
    const auto first = static_cast<Eigen::Index>(c * kM2mChunk);
    const auto rows = static_cast<Eigen::Index>(std::min(kM2mChunk, ns - c * kM2mChunk));
    if (active_ == 0) {
      DoubleMatrix scratch;
      out.segment(first, rows).noalias() = chunk_features(c, scratch) * v;
    } else {
      IndexMatrix idx;
      map_->active_indices(synthetic_.middleRows(first, rows), idx);
      for (Eigen::Index i = 0; i < rows; ++i) {
        double s = 0;
        for (Eigen::Index j = 0; j < idx.cols(); ++j) s += v(idx(i, j));
        out(first + i) = s;
      }
    }
  }
  return out;
}

Eigen::MatrixXd M2mDesign::cross(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const {
  const std::size_t ns = samples(), chunks = chunk_count(ns);
  if (static_cast<std::size_t>(f_values.rows()) != ns) throw UsageError("m2m: one target value per synthetic point is needed");
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(m_), f_values.cols());
  for (std::size_t c = 0; c < chunks; ++c) {
    const auto first = static_cast<Eigen::Index>(c * kM2mChunk);
    const auto rows = static_cast<Eigen::Index>(std::min(kM2mChunk, ns - c * kM2mChunk));
    const auto f = f_values.middleRows(first, rows);
    if (active_ == 0) {
      DoubleMatrix scratch;
      out.noalias() += chunk_features(c, scratch).transpose() * f;
    } else {
      IndexMatrix idx;
      map_->active_indices(synthetic_.middleRows(first, rows), idx);
      for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < idx.cols(); ++j) out.row(idx(i, j)) += f.row(i);
    }
  }
  return out / static_cast<double>(ns);
}

M2mModel::M2mModel(const FeatureSketchRelease& release, const M2mOptions& options)
    : design_(std::make_shared<const M2mDesign>(release.map, options)) {
  fit(release);
}

M2mModel::M2mModel(std::shared_ptr<const M2mDesign> design, const FeatureSketchRelease& release)
    : design_(std::move(design)) {
  if (!design_) throw UsageError("m2m: no design");
  if (!release.map || release.map->kind() != design_->map().kind() || release.map->size() != design_->map().size() ||
      release.map->params() != design_->map().params())
    throw UsageError("m2m: the release's feature map is not the design's");
  fit(release);
}

void M2mModel::fit(const FeatureSketchRelease& release) {
  const std::size_t m = design_->features();
  if (static_cast<std::size_t>(release.sums.size()) != m)
    throw UsageError("m2m: the release has " + std::to_string(release.sums.size()) + " sums but its map has " +
                     std::to_string(m) + " features");
  if (!std::isfinite(release.count)) throw InputError("m2m: the release's count n + zeta is not finite");
  if (!(release.noise_variance >= 0) || !std::isfinite(release.noise_variance))
    throw InputError("m2m: the release's noise variance " + number_text(release.noise_variance) +
                     " is not a finite non-negative number");
  count_used_ = estimator_count(release);
  z_ = release.sums / count_used_;
  const M2mOptions& o = design_->options();
  noisy_ = release.is_private && release.noise_variance > 0;
  lambda_ = choose_lambda(*design_, release);

  auto t0 = std::chrono::steady_clock::now();
  const Eigen::VectorXd rhs = o.intercept ? Eigen::VectorXd(z_ - design_->feature_mean()) : z_;
  // Conjugate gradients where lambda keeps the system well conditioned (m2m_cg_affordable);
  // a run that misses its bound (rounding) falls back to the factorisation.
  const bool affordable = m2m_cg_affordable(*design_, lambda_, &cg_bound_);
  solver_ = "cholesky";
  cg_iterations_ = 0;
  if (o.ridge_solver == M2mRidgeSolver::ConjugateGradient ||
      (o.ridge_solver == M2mRidgeSolver::Automatic && affordable)) {
    const int limit = cg_bound_ == std::numeric_limits<int>::max() ? 10 * static_cast<int>(m) + 10 : cg_bound_ + 5;
    cg_iterations_ = ridge_conjugate_gradient(*design_, lambda_, rhs, kRidgeCgTolerance, limit, solved_);
    if (cg_iterations_ >= 0) solver_ = "cg";
  }
  if (solver_ == "cholesky") {
    factorise();
    solved_ = rhs;
    cholesky_solve_lower(factor_, solved_);
  }
  factor_seconds_ = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  weights_ = design_->apply(solved_);  // w_i = Phi(x~_i)^T S z-hat
  // With the intercept, w_i = 1 + (Phi(x~_i) - mu)^T S (z-hat - mu).
  if (o.intercept) weights_.array() += 1.0 - design_->feature_mean().dot(solved_);
  weight_seconds_ = seconds_since(t0);
}

void M2mModel::factorise() const {
  const M2mOptions& o = design_->options();
  factor_ = design_->gram();
  // The intercept: the centred design C = P^T P / n_s - mu mu^T (lower triangle).
  if (o.intercept) factor_.selfadjointView<Eigen::Lower>().rankUpdate(design_->feature_mean(), -1.0);
  factor_.diagonal().array() += lambda_;
  if (!parallel_cholesky_lower(factor_)) {
    factor_.resize(0, 0);
    throw Error(std::string("m2m: ") + (o.intercept ? "C" : "P^T P / n_s") +
                " + lambda I is not numerically positive definite (lambda = " + number_text(lambda_) +
                ", m = " + std::to_string(design_->features()) + "); raise the regularisation");
  }
}

const Eigen::MatrixXd& M2mModel::factor() const {
  if (factor_.size() == 0) factorise();
  return factor_;
}

std::string to_string(M2mLambdaRule rule) { return rule == M2mLambdaRule::AutoNoise ? "auto-noise" : "eq5"; }

M2mLambdaRule parse_m2m_lambda_rule(const std::string& text) {
  if (text == "eq5") return M2mLambdaRule::Eq5;
  if (text == "auto-noise") return M2mLambdaRule::AutoNoise;
  throw UsageError("lambda rule '" + text + "': expected eq5 or auto-noise");
}

// n + zeta can be small or negative at tiny epsilon, while z-hat estimates a mean of Phi and so
// has ||z|| <= max_x ||Phi(x)||_2: a count below ||sums|| / that bound contradicts the released
// sums themselves, and the estimator (post-processing) uses the least count consistent with
// them, and at least 1 record. Exact sums never move it (||sum_i Phi(x_i)|| <= n max ||Phi||).
double M2mModel::estimator_count(const FeatureSketchRelease& release) {
  const double implied = release.map ? release.sums.norm() / release.map->l2_sensitivity() : 0.0;
  return std::max({release.count, implied, 1.0});
}

double M2mModel::choose_lambda(const M2mDesign& design, const FeatureSketchRelease& release) {
  const M2mOptions& o = design.options();
  if (!(release.is_private && release.noise_variance > 0)) return o.nonprivate_lambda;
  const double count = estimator_count(release);
  // eq. (5): lambda = sigma_xi^2 / (n + zeta) * R.
  if (o.lambda_rule == M2mLambdaRule::Eq5) return release.noise_variance / count * o.extra_regularization;
  // Empirical-Bayes scale of the signal (docs/privacy-tasks.md): release and design only.
  const double m = static_cast<double>(design.features());
  const double noise = release.noise_variance / (count * count);  // per feature of z-hat
  const Eigen::VectorXd z = release.sums / count;
  double residual = 0, trace = 0;
  if (o.intercept) {
    const Eigen::VectorXd& mu = design.feature_mean();
    residual = (z - mu).squaredNorm();
    trace = design.gram().diagonal().sum() - mu.squaredNorm();
  } else {
    residual = z.squaredNorm();
    trace = design.gram().diagonal().sum();
  }
  double scale = 1.0 / count;  // the sampling spread of n draws from psi: the least signal
  if (trace > 0) scale = std::max(scale, (residual - m * noise) / trace);
  return noise / scale * o.extra_regularization;
}

Eigen::VectorXd M2mModel::estimate(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const {
  if (f_values.rows() != weights_.size()) throw UsageError("m2m: one target value per synthetic point is needed");
  return f_values.transpose() * weights_ / static_cast<double>(samples());
}

Eigen::MatrixXd M2mModel::coefficients(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const {
  Eigen::MatrixXd a = design_->cross(f_values);
  if (intercept()) a -= design_->feature_mean() * f_values.colwise().mean();
  cholesky_solve_lower(factor(), a);
  return a;
}

Eigen::VectorXd M2mModel::intercepts(const Eigen::Ref<const Eigen::MatrixXd>& f_values) const {
  if (!intercept()) return Eigen::VectorXd::Zero(f_values.cols());
  return f_values.colwise().mean().transpose() - coefficients(f_values).transpose() * design_->feature_mean();
}

std::size_t M2mModel::solve_bytes() const {
  const std::size_t m = features(), k = design_->map().active_per_point();
  const std::size_t chunk = k == 0 ? kM2mChunk * m * 2 * sizeof(double) : kGramChunk * k * 2 * sizeof(std::uint32_t);
  return m * m * sizeof(double) + chunk;
}

nlohmann::json M2mModel::describe() const {
  const M2mOptions& o = design_->options();
  return {{"map", design_->map().kind()},
          {"features", features()},
          {"active_per_point", design_->map().active_per_point()},
          {"samples", samples()},
          {"seed", o.seed},
          {"domain", o.domain.to_json()},
          {"lambda", lambda_},
          {"lambda_rule", !noisy_ ? "no noise: fixed"
                          : o.lambda_rule == M2mLambdaRule::AutoNoise
                              ? "auto-noise: sigma_e^2 / max(1 / (n + zeta), matched signal scale) * R"
                              : "eq. (5): noise variance / (n + zeta) * R"},
          {"intercept", o.intercept},
          {"extra_regularization", o.extra_regularization},
          {"count_used", count_used_},
          {"gram_seconds", design_->gram_seconds()},
          {"factor_seconds", factor_seconds_},
          {"solver", solver_},
          {"cg_iterations", cg_iterations_},
          {"cg_iteration_bound", cg_bound_ == std::numeric_limits<int>::max() ? nlohmann::json(nullptr) : nlohmann::json(cg_bound_)},
          {"weight_seconds", weight_seconds_},
          {"solve_bytes", solve_bytes()}};
}

// --------------------------------------------------------------------------------------
// Counting queries

std::string CountingQuery::text() const {
  std::string s;
  for (const auto& p : predicates) {
    if (!s.empty()) s += "; ";
    s += std::to_string(p.attribute) + (p.less ? " <= " : " >= ") + number_text(p.value);
  }
  return s;
}

std::vector<CountingQuery> random_counting_queries(const BoxDomain& domain, std::size_t count, std::uint64_t seed) {
  const std::size_t d = domain.dim();
  if (d < 3) throw UsageError("counting queries need 3 distinct attributes; the data has " + std::to_string(d));
  SeededRandom rng(seed);
  std::vector<CountingQuery> out(count);
  for (auto& q : out) {
    std::vector<std::size_t> chosen;
    while (chosen.size() < 3) {
      const std::size_t a = rng.below(d);
      if (std::find(chosen.begin(), chosen.end(), a) == chosen.end()) chosen.push_back(a);
    }
    for (const std::size_t a : chosen) {
      CountingPredicate p;
      p.attribute = a;
      p.less = rng.bit();
      p.value = domain.lo[a] + (domain.hi[a] - domain.lo[a]) * rng.unit();
      q.predicates.push_back(p);
    }
  }
  return out;
}

void check_counting_query(const CountingQuery& q, std::size_t dim, const std::string& where) {
  if (q.predicates.empty()) throw InputError(where + ": expected one or more predicates 'i op value' separated by ';'");
  for (std::size_t a = 0; a < q.predicates.size(); ++a) {
    if (q.predicates[a].attribute >= dim)
      throw InputError(where + ": attribute " + std::to_string(q.predicates[a].attribute) +
                       " does not exist (the sketch has attributes 0.." + std::to_string(dim - 1) + ")");
    for (std::size_t b = 0; b < a; ++b)
      if (q.predicates[a].attribute == q.predicates[b].attribute)
        throw InputError(where + ": attribute " + std::to_string(q.predicates[a].attribute) +
                         " appears twice; a query's predicates need distinct attributes");
  }
}

namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}
}  // namespace

std::pair<double, double> parse_domain_interval(const std::string& text, const std::string& what) {
  if (text.find(',') != std::string::npos) throw UsageError(what + " '" + text + "': expected one interval LO:HI");
  const auto [lo, hi] = parse_box_domain(text, what);
  return {lo.front(), hi.front()};
}

std::vector<CountingQuery> parse_counting_queries(const std::string& path, std::size_t dim) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the query file");
  std::vector<CountingQuery> out;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(number);
    CountingQuery q;
    std::stringstream parts(t);
    std::string part;
    while (std::getline(parts, part, ';')) {
      const std::string p = trim(part);
      std::istringstream tok(p);
      std::string attr, op, value, extra;
      tok >> attr >> op >> value;
      if (attr.empty() || op.empty() || value.empty() || (tok >> extra))
        throw InputError(where + ": predicate '" + p + "': expected 'attribute op value'");
      CountingPredicate pred;
      std::size_t used = 0;
      long long a = -1;
      try {
        a = std::stoll(attr, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != attr.size() || a < 0)
        throw InputError(where + ": attribute '" + attr + "' is not a non-negative integer");
      pred.attribute = static_cast<std::size_t>(a);
      if (op == "<=") pred.less = true;
      else if (op == ">=") pred.less = false;
      else throw InputError(where + ": operator '" + op + "': expected <= or >=");
      const std::optional<double> v = parse_finite_number(value);
      if (!v) throw InputError(where + ": value '" + value + "' is not a finite number");
      pred.value = *v;
      q.predicates.push_back(pred);
    }
    check_counting_query(q, dim, where);
    out.push_back(std::move(q));
  }
  if (out.empty()) throw InputError(path + ": no counting queries");
  return out;
}

// --------------------------------------------------------------------------------------
// Weighted statistics

Eigen::VectorXd weighted_means(const WeightedRows& x, const Eigen::VectorXd& omega) {
  return x.transpose() * omega;
}

Eigen::VectorXd weighted_second_moments(const WeightedRows& x, const Eigen::VectorXd& omega) {
  return x.array().square().matrix().transpose() * omega;
}

DoubleMatrix cdf_points(const BoxDomain& domain, std::size_t points) {
  DoubleMatrix s(static_cast<Eigen::Index>(domain.dim()), static_cast<Eigen::Index>(points));
  for (std::size_t j = 0; j < domain.dim(); ++j)
    for (std::size_t t = 1; t <= points; ++t)
      s(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(t - 1)) =
          domain.lo[j] + (domain.hi[j] - domain.lo[j]) * static_cast<double>(t) / static_cast<double>(points);
  return s;
}

DoubleMatrix weighted_cdfs(const WeightedRows& x, const Eigen::VectorXd& omega, const DoubleMatrix& points) {
  DoubleMatrix out = DoubleMatrix::Zero(points.rows(), points.cols());
  // Each point's sum runs over the rows in order, adding a row's weight or +0.0 (which leaves a
  // sum that started at +0.0 unchanged); the points of an attribute are summed side by side, so
  // their chains overlap, and the mask replaces a branch on the data.
  std::vector<double> s(static_cast<std::size_t>(points.cols())), acc(s.size());
  for (Eigen::Index j = 0; j < points.rows(); ++j) {
    for (std::size_t t = 0; t < s.size(); ++t) s[t] = points(j, static_cast<Eigen::Index>(t));
    std::fill(acc.begin(), acc.end(), 0.0);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const double xi = x(i, j);
      const std::uint64_t wi = std::bit_cast<std::uint64_t>(omega(i));
#pragma omp simd
      for (std::size_t t = 0; t < s.size(); ++t) acc[t] += std::bit_cast<double>(wi & (0 - static_cast<std::uint64_t>(xi <= s[t])));
    }
    for (std::size_t t = 0; t < s.size(); ++t) out(j, static_cast<Eigen::Index>(t)) = acc[t];
  }
  return out;
}

Eigen::MatrixXd weighted_covariance(const WeightedRows& x, const Eigen::VectorXd& omega, const Eigen::VectorXd& means) {
  const Eigen::MatrixXd centred = x.rowwise() - means.transpose();
  return centred.transpose() * omega.asDiagonal() * centred;
}

Eigen::VectorXd weighted_counts(const WeightedRows& x, const Eigen::VectorXd& omega,
                                const std::vector<CountingQuery>& queries) {
  return CountingMasks(x, queries).weighted_counts(omega);
}

CountingMasks::CountingMasks(const WeightedRows& x, const std::vector<CountingQuery>& queries)
    : n_(x.rows()), queries_(queries.size()), bits_((queries.size() + 7) / 8 * static_cast<std::size_t>(x.rows()), 0) {
  const Eigen::MatrixXd columns = x;  // column-major: each predicate reads one contiguous column
  const Eigen::Index n = n_;
  const auto blocks = static_cast<std::ptrdiff_t>((queries_ + 7) / 8);
#pragma omp parallel for schedule(dynamic, 2)
  for (std::ptrdiff_t blk = 0; blk < blocks; ++blk) {
    std::vector<unsigned char> in(static_cast<std::size_t>(n));
    std::uint8_t* out = bits_.data() + static_cast<std::size_t>(blk) * static_cast<std::size_t>(n);
    for (std::size_t k = 0; k < 8 && static_cast<std::size_t>(blk) * 8 + k < queries_; ++k) {
      const auto& preds = queries[static_cast<std::size_t>(blk) * 8 + k].predicates;
      if (preds.size() == 3) {
        // Three predicates (the generated queries): one pass. "c >= v" is "-c <= -v" (negation
        // is exact, and both are false for NaN), so each predicate is s c <= s v with s = +-1.
        const double* c0 = columns.col(static_cast<Eigen::Index>(preds[0].attribute)).data();
        const double* c1 = columns.col(static_cast<Eigen::Index>(preds[1].attribute)).data();
        const double* c2 = columns.col(static_cast<Eigen::Index>(preds[2].attribute)).data();
        const double s0 = preds[0].less ? 1.0 : -1.0, s1 = preds[1].less ? 1.0 : -1.0, s2 = preds[2].less ? 1.0 : -1.0;
        const double t0 = s0 * preds[0].value, t1 = s1 * preds[1].value, t2 = s2 * preds[2].value;
        Eigen::Index i = 0;
#if defined(__AVX2__)
        // Four rows a step, the same products and comparisons (ordered <=: false for NaN, as
        // in C++); the four results become bit k of four bytes (kSpread: bit r -> byte r).
        static constexpr std::uint32_t kSpread[16] = {
            0x00000000, 0x00000001, 0x00000100, 0x00000101, 0x00010000, 0x00010001, 0x00010100, 0x00010101,
            0x01000000, 0x01000001, 0x01000100, 0x01000101, 0x01010000, 0x01010001, 0x01010100, 0x01010101};
        const __m256d vs0 = _mm256_set1_pd(s0), vs1 = _mm256_set1_pd(s1), vs2 = _mm256_set1_pd(s2);
        const __m256d vt0 = _mm256_set1_pd(t0), vt1 = _mm256_set1_pd(t1), vt2 = _mm256_set1_pd(t2);
        for (; i + 4 <= n; i += 4) {
          const __m256d in0 = _mm256_cmp_pd(_mm256_mul_pd(vs0, _mm256_loadu_pd(c0 + i)), vt0, _CMP_LE_OQ);
          const __m256d in1 = _mm256_cmp_pd(_mm256_mul_pd(vs1, _mm256_loadu_pd(c1 + i)), vt1, _CMP_LE_OQ);
          const __m256d in2 = _mm256_cmp_pd(_mm256_mul_pd(vs2, _mm256_loadu_pd(c2 + i)), vt2, _CMP_LE_OQ);
          const int in = _mm256_movemask_pd(_mm256_and_pd(_mm256_and_pd(in0, in1), in2));
          std::uint32_t four;
          std::memcpy(&four, out + i, sizeof four);
          four |= kSpread[in] << k;
          std::memcpy(out + i, &four, sizeof four);
        }
#endif
        for (; i < n; ++i)
          out[i] |= static_cast<std::uint8_t>(((s0 * c0[i] <= t0) & (s1 * c1[i] <= t1) & (s2 * c2[i] <= t2)) << k);
        continue;
      }
      std::fill(in.begin(), in.end(), 1);
      for (const auto& p : preds) {
        const double* col = columns.col(static_cast<Eigen::Index>(p.attribute)).data();
        if (p.less)
          for (Eigen::Index i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] &= col[i] <= p.value;
        else
          for (Eigen::Index i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] &= col[i] >= p.value;
      }
      for (Eigen::Index i = 0; i < n; ++i) out[i] |= static_cast<std::uint8_t>(in[static_cast<std::size_t>(i)] << k);
    }
  }
}

Eigen::VectorXd CountingMasks::weighted_counts(const Eigen::VectorXd& omega) const {
  if (omega.size() != n_)
    throw UsageError("counting masks: " + std::to_string(omega.size()) + " weights for " + std::to_string(n_) + " rows");
  Eigen::VectorXd out(static_cast<Eigen::Index>(queries_));
  const auto blocks = static_cast<std::ptrdiff_t>((queries_ + 7) / 8);
  const double* w = omega.data();
#pragma omp parallel for schedule(dynamic, 2)
  for (std::ptrdiff_t blk = 0; blk < blocks; ++blk) {
    const std::uint8_t* bits = bits_.data() + static_cast<std::size_t>(blk) * static_cast<std::size_t>(n_);
    // Each query's sum: the rows in order, +0.0 for a row outside. The weight or +0.0 is chosen
    // by a mask, not a branch (the bits are data: a branch mispredicts half the time), and the
    // eight sums are two vectors of four.
    alignas(32) double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#if defined(__AVX2__)
    const __m256i lo_bits = _mm256_setr_epi64x(1, 2, 4, 8), hi_bits = _mm256_setr_epi64x(16, 32, 64, 128);
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    for (Eigen::Index i = 0; i < n_; ++i) {
      const __m256i b = _mm256_set1_epi64x(bits[i]);
      const __m256d wi = _mm256_set1_pd(w[i]);
      const __m256i in_lo = _mm256_cmpeq_epi64(_mm256_and_si256(b, lo_bits), lo_bits);
      const __m256i in_hi = _mm256_cmpeq_epi64(_mm256_and_si256(b, hi_bits), hi_bits);
      lo = _mm256_add_pd(lo, _mm256_and_pd(wi, _mm256_castsi256_pd(in_lo)));
      hi = _mm256_add_pd(hi, _mm256_and_pd(wi, _mm256_castsi256_pd(in_hi)));
    }
    _mm256_store_pd(acc, lo);
    _mm256_store_pd(acc + 4, hi);
#else
    for (Eigen::Index i = 0; i < n_; ++i) {
      const std::uint64_t b = bits[i], wi = std::bit_cast<std::uint64_t>(w[i]);
      for (int k = 0; k < 8; ++k) acc[k] += std::bit_cast<double>(wi & (0 - (b >> k & 1u)));
    }
#endif
    for (std::size_t k = 0; k < 8 && static_cast<std::size_t>(blk) * 8 + k < queries_; ++k)
      out(static_cast<Eigen::Index>(static_cast<std::size_t>(blk) * 8 + k)) = acc[k];
  }
  return out;
}

double mean_cdf_emd(const DoubleMatrix& estimate, const DoubleMatrix& truth) {
  if (estimate.rows() != truth.rows() || estimate.cols() != truth.cols() || truth.size() == 0)
    throw UsageError("mean_cdf_emd: shapes differ or empty");
  // Per attribute: (1/points) sum_t |F-hat(S_t) - F(S_t)|; then the mean over attributes.
  return (estimate - truth).cwiseAbs().rowwise().mean().mean();
}

double frobenius_distance(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) { return (a - b).norm(); }

double mean_absolute_error(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  if (a.size() != b.size() || a.size() == 0) throw UsageError("mean_absolute_error: sizes differ or empty");
  return (a - b).cwiseAbs().mean();
}

// --------------------------------------------------------------------------------------
// Implicit M2M: weighted logistic regression

namespace {
double log1pexp(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }
double sigmoid(double z) { return z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z)); }

struct LogisticProblem {
  const WeightedRows* rows = nullptr;
  const Eigen::VectorXd* omega = nullptr;
  double l2 = 0;
  int evaluations = 0;
  std::vector<Eigen::VectorXd> partial_grad;
  std::vector<double> partial_loss;
};

double logistic_objective(unsigned dim, const double* theta_ptr, double* grad, void* data) {
  auto* pr = static_cast<LogisticProblem*>(data);
  ++pr->evaluations;
  const WeightedRows& x = *pr->rows;
  const Eigen::VectorXd& w = *pr->omega;
  const Eigen::Index d = x.cols() - 1;  // features; the last column is the label
  const Eigen::Map<const Eigen::VectorXd> theta(theta_ptr, dim);
  const std::size_t n = static_cast<std::size_t>(x.rows()), chunks = chunk_count(n);
  pr->partial_grad.assign(chunks, Eigen::VectorXd::Zero(dim));
  pr->partial_loss.assign(chunks, 0.0);
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    const auto first = static_cast<Eigen::Index>(c * kM2mChunk);
    const auto rows = static_cast<Eigen::Index>(std::min(kM2mChunk, n - c * kM2mChunk));
    Eigen::VectorXd& g = pr->partial_grad[c];
    double loss = 0;
    for (Eigen::Index i = first; i < first + rows; ++i) {
      const double y = x(i, d) > 0.5 ? 1.0 : -1.0;
      const double s = x.row(i).head(d).dot(theta.head(d)) + theta(d);
      loss += w(i) * log1pexp(-y * s);
      const double coef = -w(i) * y * sigmoid(-y * s);
      g.head(d) += coef * x.row(i).head(d).transpose();
      g(d) += coef;
    }
    pr->partial_loss[c] = loss;
  }
  double f = 0;
  Eigen::VectorXd total = Eigen::VectorXd::Zero(dim);
  for (std::size_t c = 0; c < chunks; ++c) {
    f += pr->partial_loss[c];
    total += pr->partial_grad[c];
  }
  f += 0.5 * pr->l2 * theta.head(d).squaredNorm();
  total.head(d) += pr->l2 * theta.head(d);
  if (grad)
    for (unsigned j = 0; j < dim; ++j) grad[j] = total(j);
  return f;
}
}  // namespace

WeightedLogisticResult weighted_logistic_regression(const WeightedRows& rows, const Eigen::VectorXd& omega, double l2,
                                                    int max_evaluations) {
  if (rows.cols() < 2) throw UsageError("logistic regression needs at least one feature and the label column");
  if (omega.size() != rows.rows()) throw UsageError("logistic regression: one weight per row is needed");
  if (!(l2 > 0)) throw UsageError("logistic regression: the L2 regulariser must be positive");
  const auto dim = static_cast<unsigned>(rows.cols());  // d - 1 features + bias
  LogisticProblem problem;
  problem.rows = &rows;
  problem.omega = &omega;
  problem.l2 = l2;
  nlopt::opt opt(nlopt::LD_LBFGS, dim);
  opt.set_min_objective(logistic_objective, &problem);
  opt.set_ftol_rel(1e-12);
  opt.set_xtol_rel(1e-10);
  opt.set_maxeval(max_evaluations);
  std::vector<double> theta(dim, 0.0);
  double value = 0;
  WeightedLogisticResult res;
  try {
    const nlopt::result r = opt.optimize(theta, value);
    res.status = std::to_string(static_cast<int>(r));
  } catch (const nlopt::roundoff_limited&) {
    res.status = "roundoff_limited";
    value = logistic_objective(dim, theta.data(), nullptr, &problem);
  } catch (const std::runtime_error& e) {  // NLopt's generic failure: keep the last point
    res.status = std::string("failure: ") + e.what();
    value = logistic_objective(dim, theta.data(), nullptr, &problem);
  }
  res.theta = Eigen::Map<const Eigen::VectorXd>(theta.data(), dim);
  res.objective = value;
  res.evaluations = problem.evaluations;
  return res;
}

Eigen::VectorXd logistic_scores(const WeightedRows& features, const Eigen::VectorXd& theta) {
  const Eigen::Index d = features.cols();
  if (theta.size() != d + 1) throw UsageError("logistic_scores: the model does not match the features");
  return (features * theta.head(d)).array() + theta(d);
}

// --------------------------------------------------------------------------------------
// One task against a release

std::string to_string(M2mTask task) {
  switch (task) {
    case M2mTask::Mean: return "mean";
    case M2mTask::Moment2: return "moment2";
    case M2mTask::Cdf: return "cdf";
    case M2mTask::Cov: return "cov";
    case M2mTask::Count: return "count";
  }
  return "?";
}

std::size_t m2m_min_attributes(M2mTask task) { return task == M2mTask::Cov ? 2 : 1; }

namespace {
// HIST's limit, in the paper's words (section 4.3).
std::string marginals_only(const FeatureMap& map) {
  return "the " + map.kind() + " sketch holds one-dimensional marginals (one histogram per attribute), which "
         "\"cannot, by definition, be used to estimate correlations between attributes\" (Houssiau et al., M2M, "
         "section 4.3)";
}
}  // namespace

std::string m2m_unsupported_reason(const FeatureMap& map, M2mTask task, const std::vector<CountingQuery>& queries) {
  if (map.kind() != "hist") return "";  // RFF, RACE: features of all attributes together
  if (task == M2mTask::Cov && map.input_dim() > 1)
    return "cov's off-diagonal entries are joint, and " + marginals_only(map) +
           " (its diagonal, the variances, is marginal: moment2 - mean^2)";
  if (task == M2mTask::Count)
    for (std::size_t i = 0; i < queries.size(); ++i)
      if (queries[i].attributes() > 1)
        return "counting query " + std::to_string(i + 1) + " (" + queries[i].text() + ") involves " +
               std::to_string(queries[i].attributes()) + " attributes jointly, and " + marginals_only(map) +
               " (queries of one attribute are marginal)";
  return "";
}

std::string check_m2m_task(const FeatureMap& map, M2mTask task, const std::vector<CountingQuery>& queries,
                           const M2mOptions& options) {
  const std::string reason = m2m_unsupported_reason(map, task, queries);
  if (reason.empty()) return "";
  if (!options.allow_unsupported)
    throw UsageError("task " + to_string(task) + " is not supported by the " + map.kind() + " sketch: " + reason +
                     ". " + options.allow_option + " answers it anyway, with a warning");
  return options.allow_option + ": task " + to_string(task) + " answered although the " + map.kind() +
         " sketch cannot identify it: " + reason + ". M2M's weights on it are a sum of one function per attribute, "
         "so the joint answers follow from the marginals alone, not from the data's joint distribution";
}

M2mAnswer answer_m2m(const FeatureSketchRelease& release, M2mTask task, const M2mOptions& options,
                     const std::vector<CountingQuery>& queries, std::size_t cdf_points_per_attribute) {
  if (!release.map) throw InputError("the sketch has no feature map");
  const std::size_t d = release.map->input_dim();
  if (d < m2m_min_attributes(task))
    throw UsageError(to_string(task) + " needs at least " + std::to_string(m2m_min_attributes(task)) +
                     " attributes; the sketch has " + std::to_string(d));
  if (task == M2mTask::Count && queries.empty()) throw UsageError("count needs counting queries");
  for (std::size_t i = 0; i < queries.size(); ++i) check_counting_query(queries[i], d, "counting query " + std::to_string(i + 1));
  const std::string warning = check_m2m_task(*release.map, task, queries, options);
  const M2mModel model(release, options);
  const DoubleMatrix x = model.synthetic().cast<double>();
  const Eigen::VectorXd omega = model.average_weights();
  M2mAnswer a;
  a.task = task;
  a.count_used = model.count_used();
  a.warning = warning;
  switch (task) {
    case M2mTask::Mean: a.values = weighted_means(x, omega); break;
    case M2mTask::Moment2: a.values = weighted_second_moments(x, omega); break;
    case M2mTask::Cdf:
      a.cdf_points = cdf_points(model.domain(), cdf_points_per_attribute);
      a.cdf = weighted_cdfs(x, omega, a.cdf_points);
      break;
    case M2mTask::Cov: a.cov = weighted_covariance(x, omega, weighted_means(x, omega)); break;
    case M2mTask::Count: a.values = weighted_counts(x, omega, queries); break;
  }
  return a;
}

}  // namespace privrace
