#include "privrace/tasks/kde.hpp"

#include <omp.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define PRIVRACE_KDE_AVX2 1
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numbers>
#include <numeric>

#include "privrace/core/error.hpp"
#include "privrace/lsh/family.hpp"

namespace privrace {
namespace {

// k(s) for s = c / w, written with erf and expm1 so the difference of two small terms keeps
// its digits when s is large: k = erf(r / sqrt 2) - sqrt(2/pi) (1 - e^{-r^2/2}) / r, r = 1/s.
double pstable_exact(double s) {
  if (s <= 0.0) return 1.0;
  const double r = 1.0 / s;
  const double k = std::erf(r / std::numbers::sqrt2) + std::sqrt(2.0 / std::numbers::pi) * std::expm1(-0.5 * r * r) / r;
  return std::max(0.0, k);
}

// dk/ds = -sqrt(2/pi) (1 - e^{-1/(2 s^2)}).
double pstable_derivative(double s) {
  if (s <= 0.0) return -std::sqrt(2.0 / std::numbers::pi);
  return std::sqrt(2.0 / std::numbers::pi) * std::expm1(-0.5 / (s * s));
}

// The cubic Hermite interpolant on [0, 1] between (v0, slope s0) and (v1, s1), every operation
// written out (this file is compiled with -ffp-contract=off), so that the AVX2 lanes below give
// the same values: error O(step^4 k'''') against the kernel.
inline double hermite(double t, double v0, double s0, double v1, double s1) {
  const double t2 = t * t, t3 = t2 * t;
  const double h00 = std::fma(2.0, t3, std::fma(-3.0, t2, 1.0)), h10 = std::fma(-2.0, t2, t3) + t;
  const double h01 = std::fma(-2.0, t3, 3.0 * t2), h11 = t3 - t2;
  return std::fma(h00, v0, std::fma(h10, s0, std::fma(h01, v1, h11 * s1)));
}

class PStableTable {
 public:
  static constexpr double kMax = 64.0;
  static constexpr double kInvStep = 256.0;

  PStableTable() {
    const std::size_t n = static_cast<std::size_t>(kMax * kInvStep) + 2;
    pairs_.resize(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      const double s = static_cast<double>(i) / kInvStep;
      pairs_[2 * i] = pstable_exact(s);
      pairs_[2 * i + 1] = pstable_derivative(s) / kInvStep;  // per unit of t in [0, 1]
    }
  }
  static const PStableTable& get() {
    static const PStableTable table;
    return table;
  }
  double operator()(double s) const {
    if (!(s < kMax)) return pstable_exact(s);
    const double x = s * kInvStep;
    const auto i = static_cast<std::size_t>(x);
    const double t = x - static_cast<double>(i);
    const double* at = &pairs_[2 * i];
    return hermite(t, at[0], at[1], at[2], at[3]);
  }
  // value, slope, value, slope, ...: one 32-byte read from 2i holds both ends of interval i.
  const double* pairs() const { return pairs_.data(); }

 private:
  std::vector<double> pairs_;
};

// Distinct rows with their multiplicities (as doubles, for the weighted sum).
void unique_rows(const DenseRef& data, DoubleMatrix& rows, std::vector<double>& weight) {
  const Eigen::Index n = data.rows(), d = data.cols();
  std::vector<Eigen::Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
    for (Eigen::Index j = 0; j < d; ++j)
      if (data(a, j) != data(b, j)) return data(a, j) < data(b, j);
    return false;
  });
  rows.resize(n, d);
  weight.clear();
  Eigen::Index u = -1;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Eigen::Index i = order[k];
    if (u >= 0 && (data.row(i).cast<double>() - rows.row(u)).cwiseAbs().maxCoeff() == 0.0) {
      weight.back() += 1.0;
      continue;
    }
    ++u;
    rows.row(u) = data.row(i).cast<double>();
    weight.push_back(1.0);
  }
  rows.conservativeResize(u + 1, d);
}

double int_power(double v, std::size_t p) {
  double r = 1.0;
  for (std::size_t i = 0; i < p; ++i) r *= v;
  return r;
}

constexpr Eigen::Index kLanes = 16;  // queries a block of the small-dimension L2 sums
constexpr Eigen::Index kDataBlock = 2048;  // data rows a block: each query's block sum, then added to its total

// The kernel sums' checks of the spec, shared by the point and lattice entries.
void check_kernel_spec(const KernelSpec& spec) {
  if (spec.kernel != Kernel::L2 && spec.kernel != Kernel::Angular)
    throw UsageError("exact kernel sums: unsupported kernel '" + to_string(spec.kernel) + "' (expected l2 or angular)");
  if (spec.kernel == Kernel::L2 && !(spec.bandwidth > 0.0)) throw UsageError("exact kernel sums: bandwidth must be positive");
  if (spec.power == 0) throw UsageError("exact kernel sums: power must be at least 1");
}

// PRIVRACE_KDE_SCALAR=1: the portable lane loops even where AVX2 is built in (the tests compare both).
bool portable_lanes_requested() {
  const char* env = std::getenv("PRIVRACE_KDE_SCALAR");
  return env && std::string(env) == "1";
}

// Small dimension (L2): sum[l] += w_i k(||x_i - q_l|| / w)^power over the rows i of x in order,
// for the 16 queries q_l of qt (coordinate c of query l at qt[c * kLanes + l]). Each query's sum
// runs in data order, one fused multiply-add a row; the distance is summed over the coordinates
// in order with fused multiply-adds. The AVX2 version takes four queries a vector with the same
// operations, so both give the same values.
void lane_kernel_sums_scalar(const double* x, Eigen::Index rows, Eigen::Index d, const double* w, const double* qt,
                             double inv_w, std::size_t power, const PStableTable& table, double* sum) {
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index l = 0; l < kLanes; ++l) {
      double acc = 0.0;
      for (Eigen::Index c = 0; c < d; ++c) {
        const double diff = x[i * d + c] - qt[c * kLanes + l];
        acc = std::fma(diff, diff, acc);
      }
      const double k = table(std::sqrt(acc) * inv_w);
      sum[l] = std::fma(w[i], power == 1 ? k : int_power(k, power), sum[l]);
    }
}

#ifdef PRIVRACE_KDE_AVX2
// w_i k(s)^power for the four distances squared in acc, added to sum: the table read, the
// Hermite interpolant and the power with the portable loop's operations in its order.
class TableTermAvx2 {
 public:
  TableTermAvx2(double inv_w, std::size_t power, const PStableTable& table)
      : inv_w_v_(_mm256_set1_pd(inv_w)), power_(power), table_(table), pairs_(table.pairs()) {}
  // Where four distances fall in the table: the interval k, the position t in it, and s itself
  // with a mask of the lanes beyond the table (whose k and t are 0).
  struct Located {
    __m256d t, s;
    __m128i k;
    int outside;
  };
  Located locate(__m256d acc) const { return locate_ratio(_mm256_mul_pd(_mm256_sqrt_pd(acc), inv_w_v_)); }
  // The same for four ratios s = c / w given (s >= 0 or NaN).
  Located locate_ratio(__m256d s) const {
    const __m256d inside = _mm256_cmp_pd(s, max_s_, _CMP_LT_OQ);
    const __m256d xs = _mm256_mul_pd(_mm256_and_pd(s, inside), inv_step_);  // outside the table: 0 for now
    const __m128i k = _mm256_cvttpd_epi32(xs);
    return {_mm256_sub_pd(xs, _mm256_cvtepi32_pd(k)), s, k, ~_mm256_movemask_pd(inside) & 0xF};
  }
  __m256d add(const Located& at_k, __m256d wi, __m256d sum) const { return _mm256_fmadd_pd(wi, term(at_k), sum); }
  // k(s)^power for a located vector.
  __m256d term(const Located& at_k) const {
    const __m256d t = at_k.t, s = at_k.s;
    const __m128i k = at_k.k;
    // Each lane's interval in one read (value, slope, value, slope at 2k), the four reads
    // transposed into the two ends' values and slopes: the same numbers as four gathers, a
    // quarter less time for the whole sum (bench_kde, docs/architecture.md).
    alignas(16) std::int32_t at[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(at), k);
    const __m256d r0 = _mm256_loadu_pd(pairs_ + 2 * at[0]), r1 = _mm256_loadu_pd(pairs_ + 2 * at[1]);
    const __m256d r2 = _mm256_loadu_pd(pairs_ + 2 * at[2]), r3 = _mm256_loadu_pd(pairs_ + 2 * at[3]);
    const __m256d lo01 = _mm256_unpacklo_pd(r0, r1), hi01 = _mm256_unpackhi_pd(r0, r1);
    const __m256d lo23 = _mm256_unpacklo_pd(r2, r3), hi23 = _mm256_unpackhi_pd(r2, r3);
    const __m256d v0 = _mm256_permute2f128_pd(lo01, lo23, 0x20), v1 = _mm256_permute2f128_pd(lo01, lo23, 0x31);
    const __m256d s0 = _mm256_permute2f128_pd(hi01, hi23, 0x20), s1 = _mm256_permute2f128_pd(hi01, hi23, 0x31);
    const __m256d t2 = _mm256_mul_pd(t, t), t3 = _mm256_mul_pd(t2, t);
    const __m256d h00 = _mm256_fmadd_pd(two_, t3, _mm256_fmadd_pd(minus_three_, t2, one_));
    const __m256d h10 = _mm256_add_pd(_mm256_fmadd_pd(minus_two_, t2, t3), t);
    const __m256d h01 = _mm256_fmadd_pd(minus_two_, t3, _mm256_mul_pd(three_, t2));
    const __m256d h11 = _mm256_sub_pd(t3, t2);
    __m256d kv = _mm256_fmadd_pd(h00, v0, _mm256_fmadd_pd(h10, s0, _mm256_fmadd_pd(h01, v1, _mm256_mul_pd(h11, s1))));
    const int outside = at_k.outside;
    if (outside) [[unlikely]] {  // beyond the table: the kernel itself
      alignas(32) double sv[4], kvs[4];
      _mm256_store_pd(sv, s);
      _mm256_store_pd(kvs, kv);
      for (int l = 0; l < 4; ++l)
        if (outside >> l & 1) kvs[l] = table_(sv[l]);
      kv = _mm256_load_pd(kvs);
    }
    __m256d term = kv;
    for (std::size_t r = 1; r < power_; ++r) term = _mm256_mul_pd(term, kv);  // as int_power: 1 * kv * ... * kv
    return term;
  }

 private:
  const __m256d inv_w_v_, inv_step_ = _mm256_set1_pd(PStableTable::kInvStep), max_s_ = _mm256_set1_pd(PStableTable::kMax);
  const __m256d two_ = _mm256_set1_pd(2.0), minus_two_ = _mm256_set1_pd(-2.0), three_ = _mm256_set1_pd(3.0),
                minus_three_ = _mm256_set1_pd(-3.0), one_ = _mm256_set1_pd(1.0);
  const std::size_t power_;
  const PStableTable& table_;
  const double* pairs_;
};

void lane_kernel_sums_avx2(const double* x, Eigen::Index rows, Eigen::Index d, const double* w, const double* qt,
                           double inv_w, std::size_t power, const PStableTable& table, double* sum) {
  constexpr int kVectors = kLanes / 4;
  const TableTermAvx2 term(inv_w, power, table);
  __m256d acc_sum[kVectors];
  for (int v = 0; v < kVectors; ++v) acc_sum[v] = _mm256_loadu_pd(sum + 4 * v);
  // Rows in batches, each in two passes: where every distance falls in the table, then the
  // reads, the interpolants and the sums in row order (the same operations as one pass, with
  // shorter dependency chains, so more pairs are in flight: lattice_tile_sums_avx2).
  constexpr Eigen::Index kBatch = 8;
  TableTermAvx2::Located located[kBatch * kVectors];
  for (Eigen::Index i0 = 0; i0 < rows; i0 += kBatch) {
    const Eigen::Index i1 = std::min(rows, i0 + kBatch);
    for (Eigen::Index i = i0; i < i1; ++i)
      for (int v = 0; v < kVectors; ++v) {
        __m256d acc = _mm256_setzero_pd();
        for (Eigen::Index c = 0; c < d; ++c) {
          const __m256d diff = _mm256_sub_pd(_mm256_set1_pd(x[i * d + c]), _mm256_loadu_pd(qt + c * kLanes + 4 * v));
          acc = _mm256_fmadd_pd(diff, diff, acc);
        }
        located[(i - i0) * kVectors + v] = term.locate(acc);
      }
    for (Eigen::Index i = i0; i < i1; ++i) {
      const __m256d wi = _mm256_set1_pd(w[i]);
      for (int v = 0; v < kVectors; ++v) acc_sum[v] = term.add(located[(i - i0) * kVectors + v], wi, acc_sum[v]);
    }
  }
  for (int v = 0; v < kVectors; ++v) _mm256_storeu_pd(sum + 4 * v, acc_sum[v]);
}
#endif

// scalar: the portable version even where AVX2 is built in (PRIVRACE_KDE_SCALAR=1; the tests
// compare both).
void lane_kernel_sums(const double* x, Eigen::Index rows, Eigen::Index d, const double* w, const double* qt, double inv_w,
                      std::size_t power, const PStableTable& table, bool scalar, double* sum) {
#ifdef PRIVRACE_KDE_AVX2
  if (!scalar) {
    lane_kernel_sums_avx2(x, rows, d, w, qt, inv_w, power, table, sum);
    return;
  }
#else
  (void)scalar;
#endif
  lane_kernel_sums_scalar(x, rows, d, w, qt, inv_w, power, table, sum);
}

// The lattice sums (lattice_kernel_sums): a tile of kLanes prefixes (every coordinate but the
// last) against every value of the last axis. Coordinate c of prefix t is at pt[c * kLanes + t];
// sum[a * kLanes + t] is the point (prefix t, last value a). A prefix's partial distance is
// the first d - 1 steps of the per-pair chain, so finishing it with the last coordinate's step
// gives each pair's distance with the operations, and so the value, of the lane loops above.
void lattice_tile_sums_scalar(const double* x, Eigen::Index rows, Eigen::Index d, const double* w, const double* pt,
                              const double* last, Eigen::Index K, double inv_w, std::size_t power,
                              const PStableTable& table, double* sum) {
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index t = 0; t < kLanes; ++t) {
      double prefix = 0.0;
      for (Eigen::Index c = 0; c + 1 < d; ++c) {
        const double diff = x[i * d + c] - pt[c * kLanes + t];
        prefix = std::fma(diff, diff, prefix);
      }
      for (Eigen::Index a = 0; a < K; ++a) {
        const double diff = x[i * d + d - 1] - last[a];
        const double k = table(std::sqrt(std::fma(diff, diff, prefix)) * inv_w);
        sum[a * kLanes + t] = std::fma(w[i], power == 1 ? k : int_power(k, power), sum[a * kLanes + t]);
      }
    }
}

#ifdef PRIVRACE_KDE_AVX2
void lattice_tile_sums_avx2(const double* x, Eigen::Index rows, Eigen::Index d, const double* w, const double* pt,
                            const double* last, Eigen::Index K, double inv_w, std::size_t power, const PStableTable& table,
                            double* sum) {
  constexpr int kVectors = kLanes / 4;
  const TableTermAvx2 term(inv_w, power, table);
  thread_local std::vector<TableTermAvx2::Located> located;
  located.resize(static_cast<std::size_t>(K * kVectors));

  for (Eigen::Index i = 0; i < rows; ++i) {
    const __m256d wi = _mm256_set1_pd(w[i]);
    __m256d prefix[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      prefix[v] = _mm256_setzero_pd();
      for (Eigen::Index c = 0; c + 1 < d; ++c) {
        const __m256d diff = _mm256_sub_pd(_mm256_set1_pd(x[i * d + c]), _mm256_loadu_pd(pt + c * kLanes + 4 * v));
        prefix[v] = _mm256_fmadd_pd(diff, diff, prefix[v]);
      }
    }
    // Two passes over the row's K x 16 pairs: where each distance falls in the table, then the
    // reads, the interpolants and the sums. The same operations as one pass (term.add), split
    // so that each pass's dependency chains are short and more pairs are in flight at once.
    for (Eigen::Index a = 0; a < K; ++a) {
      const __m256d diff = _mm256_set1_pd(x[i * d + d - 1] - last[a]);  // the same in every lane
      for (int v = 0; v < kVectors; ++v) located[static_cast<std::size_t>(a * kVectors + v)] = term.locate(_mm256_fmadd_pd(diff, diff, prefix[v]));
    }
    for (Eigen::Index a = 0; a < K; ++a) {
      double* row = sum + a * kLanes;
      for (int v = 0; v < kVectors; ++v)
        _mm256_storeu_pd(row + 4 * v, term.add(located[static_cast<std::size_t>(a * kVectors + v)], wi, _mm256_loadu_pd(row + 4 * v)));
    }
  }
}
#endif

void lattice_tile_sums(const double* x, Eigen::Index rows, Eigen::Index d, const double* w, const double* pt,
                       const double* last, Eigen::Index K, double inv_w, std::size_t power, const PStableTable& table,
                       bool scalar, double* sum) {
#ifdef PRIVRACE_KDE_AVX2
  if (!scalar) {
    lattice_tile_sums_avx2(x, rows, d, w, pt, last, K, inv_w, power, table, sum);
    return;
  }
#else
  (void)scalar;
#endif
  lattice_tile_sums_scalar(x, rows, d, w, pt, last, K, inv_w, power, table, sum);
}

}  // namespace

nlohmann::json KernelSpec::to_json() const {
  return {{"kernel", to_string(kernel)}, {"bandwidth", bandwidth}, {"power", power}};
}

double pstable_kernel_tabulated(double s) { return PStableTable::get()(s); }

void pstable_kernel_tabulated(const double* s, std::size_t n, double* out) {
  const PStableTable& table = PStableTable::get();
  std::size_t i = 0;
#ifdef PRIVRACE_KDE_AVX2
  if (!portable_lanes_requested()) {
    // Four ratios a vector: no chain runs from one to the next, so the table reads of several
    // vectors are in flight at once (one call a value waits for each read).
    const TableTermAvx2 term(1.0, 1, table);
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(out + i, term.term(term.locate_ratio(_mm256_loadu_pd(s + i))));
  }
#endif
  for (; i < n; ++i) out[i] = table(s[i]);
}

std::vector<double> exact_kernel_sums(const DenseRef& data, const DenseRef& queries, const KernelSpec& spec) {
  DoubleMatrix x;
  std::vector<double> w;
  unique_rows(data, x, w);
  return weighted_row_kernel_sums(x, w, queries, spec);
}

std::vector<double> weighted_row_kernel_sums(const DoubleMatrix& x, const std::vector<double>& w, const DenseRef& queries,
                                             const KernelSpec& spec) {
  check_kernel_spec(spec);
  if (x.cols() != queries.cols())
    throw InputError("queries have " + std::to_string(queries.cols()) + " columns, the data " + std::to_string(x.cols()));
  if (w.size() != static_cast<std::size_t>(x.rows()))
    throw UsageError("kernel sums: " + std::to_string(w.size()) + " weights for " + std::to_string(x.rows()) + " rows");
  const DoubleMatrix q = queries.cast<double>();
  const Eigen::Index n = x.rows(), m = q.rows(), d = x.cols();
  std::vector<double> out(static_cast<std::size_t>(m), 0.0);
  const PStableTable& table = PStableTable::get();
  const double inv_w = 1.0 / spec.bandwidth;
  const bool l2 = spec.kernel == Kernel::L2;
  Eigen::VectorXd x_norm2 = x.rowwise().squaredNorm();
  constexpr Eigen::Index kQueryBlock = kLanes;
  const Eigen::Index query_blocks = (m + kQueryBlock - 1) / kQueryBlock;
  // Small d (L2): differences per coordinate (no cancellation), the block's queries as lanes.
  // Large d: one small GEMM gives every inner product of a block pair.
  const bool gemm = !l2 || d > 8;
  const bool scalar = portable_lanes_requested();
#pragma omp parallel
  {
    std::vector<double> s(static_cast<std::size_t>(kDataBlock));
    DoubleMatrix dots;
    double qt[8 * kLanes], lane_sum[kLanes];
#pragma omp for schedule(dynamic, 1)
    for (Eigen::Index qb = 0; qb < query_blocks; ++qb) {
      const Eigen::Index q0 = qb * kQueryBlock, q1 = std::min(m, q0 + kQueryBlock);
      if (!gemm) {
        for (Eigen::Index c = 0; c < d; ++c)
          for (Eigen::Index l = 0; l < kLanes; ++l) qt[c * kLanes + l] = q(std::min(q0 + l, q1 - 1), c);  // spare lanes: the last query
        for (Eigen::Index b0 = 0; b0 < n; b0 += kDataBlock) {
          const Eigen::Index bn = std::min(kDataBlock, n - b0);
          std::fill_n(lane_sum, kLanes, 0.0);
          lane_kernel_sums(x.row(b0).data(), bn, d, w.data() + b0, qt, inv_w, spec.power, table, scalar, lane_sum);
          for (Eigen::Index j = q0; j < q1; ++j) out[static_cast<std::size_t>(j)] += lane_sum[j - q0];
        }
        continue;
      }
      for (Eigen::Index b0 = 0; b0 < n; b0 += kDataBlock) {
        const Eigen::Index bn = std::min(kDataBlock, n - b0);
        dots.noalias() = q.middleRows(q0, q1 - q0) * x.middleRows(b0, bn).transpose();
        for (Eigen::Index j = q0; j < q1; ++j) {
          const double qn2 = q.row(j).squaredNorm();
          if (l2) {
            for (Eigen::Index i = 0; i < bn; ++i)
              s[static_cast<std::size_t>(i)] =
                  std::sqrt(std::max(0.0, x_norm2(b0 + i) + qn2 - 2.0 * dots(j - q0, i))) * inv_w;
            double sum = 0.0;
            for (Eigen::Index i = 0; i < bn; ++i) {
              const double k = table(s[static_cast<std::size_t>(i)]);
              sum += w[static_cast<std::size_t>(b0 + i)] * (spec.power == 1 ? k : int_power(k, spec.power));
            }
            out[static_cast<std::size_t>(j)] += sum;
          } else {
            double sum = 0.0;
            const double qn = std::sqrt(qn2);
            for (Eigen::Index i = 0; i < bn; ++i) {
              const double denom = std::sqrt(x_norm2(b0 + i)) * qn;
              // A zero vector has no direction: its sign bits are all ties, counted as angle pi/2.
              const double c = denom > 0 ? std::clamp(dots(j - q0, i) / denom, -1.0, 1.0) : 0.0;
              const double k = 1.0 - std::acos(c) / std::numbers::pi;
              sum += w[static_cast<std::size_t>(b0 + i)] * int_power(k, spec.power);
            }
            out[static_cast<std::size_t>(j)] += sum;
          }
        }
      }
    }
  }
  return out;
}

std::vector<double> lattice_kernel_sums(const DenseRef& data, const std::vector<std::vector<double>>& axes,
                                        const KernelSpec& spec) {
  const auto d = static_cast<Eigen::Index>(axes.size());
  if (d != data.cols())
    throw InputError("lattice kernel sums: " + std::to_string(axes.size()) + " axes for data with " +
                     std::to_string(data.cols()) + " columns");
  double points = 1.0;
  for (const auto& axis : axes) {
    if (axis.empty()) throw UsageError("lattice kernel sums: an axis has no values");
    points *= static_cast<double>(axis.size());
  }
  if (points > 9.0e15) throw UsageError("lattice kernel sums: the lattice has too many points");
  const auto total = static_cast<std::size_t>(points);
  // The coordinates as queries hold them (Real), read back as doubles.
  std::vector<std::vector<double>> ax(axes.size());
  for (std::size_t j = 0; j < axes.size(); ++j)
    for (const double v : axes[j]) ax[j].push_back(static_cast<double>(static_cast<Real>(v)));
  const auto point = [&](std::size_t idx, std::size_t j_end, auto&& put) {  // coordinates 0..j_end-1 of point idx
    std::size_t rest = idx;
    for (std::size_t j = axes.size(); j-- > 0;) {
      const std::size_t digit = rest % ax[j].size();
      rest /= ax[j].size();
      if (j < j_end) put(j, ax[j][digit]);
    }
  };
  if (spec.kernel != Kernel::L2 || d > 8) {  // the other paths of weighted_row_kernel_sums: the points themselves
    DenseMatrix pts(static_cast<Eigen::Index>(total), d);
    for (std::size_t idx = 0; idx < total; ++idx)
      point(idx, axes.size(), [&](std::size_t j, double v) { pts(static_cast<Eigen::Index>(idx), static_cast<Eigen::Index>(j)) = static_cast<Real>(v); });
    return exact_kernel_sums(data, pts, spec);
  }
  check_kernel_spec(spec);
  DoubleMatrix x;
  std::vector<double> w;
  unique_rows(data, x, w);
  const Eigen::Index n = x.rows();
  const auto K = static_cast<Eigen::Index>(ax.back().size());
  const std::size_t prefixes = total / ax.back().size();
  const auto tiles = static_cast<std::ptrdiff_t>((prefixes + kLanes - 1) / kLanes);
  std::vector<double> out(total, 0.0);
  const PStableTable& table = PStableTable::get();
  const double inv_w = 1.0 / spec.bandwidth;
  const bool scalar = portable_lanes_requested();  // kDataBlock: weighted_row_kernel_sums' blocks, so the same sums
#pragma omp parallel
  {
    std::vector<double> pt(static_cast<std::size_t>(std::max<Eigen::Index>(1, d - 1) * kLanes), 0.0);
    std::vector<double> sum(static_cast<std::size_t>(K * kLanes));
#pragma omp for schedule(dynamic, 1)
    for (std::ptrdiff_t tile = 0; tile < tiles; ++tile) {
      const std::size_t p0 = static_cast<std::size_t>(tile) * kLanes, p1 = std::min(prefixes, p0 + kLanes);
      for (std::size_t t = 0; t < static_cast<std::size_t>(kLanes); ++t)  // spare lanes: the last prefix
        point(std::min(p0 + t, p1 - 1) * ax.back().size(), axes.size() - 1,
              [&](std::size_t j, double v) { pt[j * kLanes + t] = v; });
      for (Eigen::Index b0 = 0; b0 < n; b0 += kDataBlock) {
        const Eigen::Index bn = std::min(kDataBlock, n - b0);
        std::fill(sum.begin(), sum.end(), 0.0);
        lattice_tile_sums(x.row(b0).data(), bn, d, w.data() + b0, pt.data(), ax.back().data(), K, inv_w, spec.power,
                          table, scalar, sum.data());
        for (std::size_t t = 0; t < p1 - p0; ++t)
          for (Eigen::Index a = 0; a < K; ++a)
            out[(p0 + t) * static_cast<std::size_t>(K) + static_cast<std::size_t>(a)] += sum[static_cast<std::size_t>(a * kLanes) + t];
      }
    }
  }
  return out;
}

std::vector<std::vector<double>> race_densities(const RaceSketch& sketch, const DenseRef& queries,
                                                const std::vector<QueryOptions>& options) {
  // Built on query_dense (not on the row-estimate layout): one pass per distinct estimator,
  // and the 1/W debiasing applied here, since it is affine in the combined estimate.
  const double n_hat = sketch.n_hat();
  std::vector<std::vector<double>> out(options.size());
  std::vector<std::pair<QueryOptions, std::vector<double>>> done;
  for (std::size_t k = 0; k < options.size(); ++k) {
    QueryOptions base = options[k];
    base.debias = false;
    const std::vector<double>* sums = nullptr;
    for (const auto& [o, v] : done)
      if (o.estimator == base.estimator && o.mom_groups == base.mom_groups) sums = &v;
    if (!sums) {
      done.emplace_back(base, sketch.query_dense(queries, base));
      sums = &done.back().second;
    }
    out[k].resize(sums->size());
    for (std::size_t j = 0; j < sums->size(); ++j) {
      double e = (*sums)[j];
      if (options[k].debias) e = sketch.debiased(e, n_hat);
      out[k][j] = e / n_hat;
    }
  }
  return out;
}

double corollary1_rows(double n, double epsilon, double level) {
  if (!(n >= 1.0) || !std::isfinite(n)) throw UsageError("corollary1_rows: N must be at least 1");
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) throw UsageError("corollary1_rows: epsilon must be positive");
  if (!(level > 0.0 && level <= 1.0)) throw UsageError("corollary1_rows: level must be in (0, 1]");
  // R = ceil(f~ eps / sqrt 2) with f~ = level N (derivation in kde.hpp).
  return std::max(1.0, std::ceil(level * n * epsilon / std::numbers::sqrt2));
}

double l2_function_error(std::span<const double> estimate, std::span<const double> truth, double spacing) {
  if (estimate.size() != truth.size()) throw Error("l2_function_error: sizes differ");
  double sum = 0.0;
  for (std::size_t i = 0; i < truth.size(); ++i) sum += (estimate[i] - truth[i]) * (estimate[i] - truth[i]);
  return std::sqrt(sum * spacing);
}

}  // namespace privrace
