#include "privrace/sketch/race_sketch.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>

#include "privrace/core/memory.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"

namespace privrace {

Estimator parse_estimator(const std::string& name) {
  if (name == "mean") return Estimator::Mean;
  if (name == "mom" || name == "median-of-means") return Estimator::MedianOfMeans;
  throw UsageError("unknown estimator '" + name + "' (expected mean or mom)");
}

void check_sketch_fits(std::size_t rows, std::size_t width, std::size_t copies) {
  if (rows == 0) throw UsageError("rows (R) must be at least 1");
  if (width == 0) throw UsageError("width (W) must be at least 1");
  if (width > (std::size_t{1} << 32)) throw UsageError("width (W) must be at most 2^32");
  const double memory = physical_memory_bytes();
  const double need = static_cast<double>(rows) * static_cast<double>(width) * 8.0 * static_cast<double>(copies);
  if (!fits_in_memory(need))
    throw ResourceError("a " + std::to_string(rows) + " x " + std::to_string(width) + " sketch" +
                        (copies > 1 ? " (x" + std::to_string(copies) + " copies)" : std::string()) + " needs " +
                        std::to_string(static_cast<long long>(need / 1048576.0)) + " MiB, more than 80% of the " +
                        std::to_string(static_cast<long long>(memory / 1048576.0)) + " MiB of memory");
}

std::vector<ColumnHash> make_column_hashes(std::uint64_t seed, std::size_t rows, std::size_t width) {
  std::vector<ColumnHash> hashes(rows);
  std::uint64_t state = derive_seed(seed, 0xC011);
  for (auto& h : hashes) {
    h.a0 = splitmix64(state);
    h.a1 = splitmix64(state);
    h.b = splitmix64(state);
    h.width = width;
  }
  return hashes;
}

RaceSketch::RaceSketch(std::shared_ptr<const LshFamily> family, std::size_t width)
    : family_(std::move(family)), rows_(family_->rows()), width_(width) {
  check_sketch_fits(rows_, width_, 1);
  columns_ = make_column_hashes(family_->seed(), rows_, width_);
  direct_columns_ = family_->code_space() != 0 && family_->code_space() <= width_;
  counts_.resize(rows_ * width_);  // zero: the allocator hands out zeroed pages, populated in parallel
}

void RaceSketch::columns_of(const ColumnHash& h, const std::uint64_t* codes, std::uint32_t* cols, Eigen::Index n) const {
  // Branch outside the loops so each is a plain vector loop.
  if (direct_columns_) {
    for (Eigen::Index i = 0; i < n; ++i) cols[i] = static_cast<std::uint32_t>(codes[i]);
  } else {
    for (Eigen::Index i = 0; i < n; ++i) cols[i] = h(codes[i]);
  }
}

void RaceSketch::count_columns(const std::uint32_t* cols, std::size_t n, std::size_t row_begin, std::size_t row_end) {
  // Row-outer loop: one count row (W int64) stays in L1 while a whole batch lands in it.
  // Four rows are incremented together: clustered data sends consecutive points to the same
  // counter, and four independent load-add-store chains hide that store-forwarding latency.
  constexpr std::size_t kGroup = 4;
  std::size_t r = row_begin;
  for (; r + kGroup <= row_end; r += kGroup) {
    std::int64_t *c0 = row(r), *c1 = row(r + 1), *c2 = row(r + 2), *c3 = row(r + 3);
    const std::uint32_t *k0 = cols + (r - row_begin) * n, *k1 = k0 + n, *k2 = k1 + n, *k3 = k2 + n;
    for (std::size_t i = 0; i < n; ++i) {
      ++c0[k0[i]];
      ++c1[k1[i]];
      ++c2[k2[i]];
      ++c3[k3[i]];
    }
  }
  for (; r < row_end; ++r) {
    std::int64_t* counts = row(r);
    const std::uint32_t* k = cols + (r - row_begin) * n;
    for (std::size_t i = 0; i < n; ++i) ++counts[k[i]];
  }
}

void RaceSketch::add_codes(const CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) {
  const Eigen::Index n = codes.cols();
  const auto un = static_cast<std::size_t>(n);
  const bool mirrored = family_->mirrored_inserts();
  // Columns of four rows at a time (they stay in cache), then counted together.
  constexpr std::size_t kGroup = 4;
  thread_local std::vector<std::uint32_t> cols;
  thread_local std::vector<std::uint64_t> mirror_codes;
  cols.resize(kGroup * un);
  for (std::size_t r = row_begin; r < row_end; r += kGroup) {
    const std::size_t end = std::min(row_end, r + kGroup);
    for (std::size_t j = r; j < end; ++j)
      columns_of(columns_[j], codes.row(static_cast<Eigen::Index>(j - row_begin)).data(), cols.data() + (j - r) * un, n);
    count_columns(cols.data(), un, r, end);
  }
  if (mirrored) {
    // The regression sketch also inserts -x: its code is the mirror of x's code.
    mirror_codes.resize(un);
    for (std::size_t rr = row_begin; rr < row_end; ++rr) {
      const std::uint64_t* c = codes.row(static_cast<Eigen::Index>(rr - row_begin)).data();
      for (Eigen::Index i = 0; i < n; ++i) mirror_codes[static_cast<std::size_t>(i)] = family_->mirror(c[i]);
      columns_of(columns_[rr], mirror_codes.data(), cols.data(), n);
      count_columns(cols.data(), un, rr, rr + 1);
    }
  }
}

void RaceSketch::add_dense_rows(const DenseRef& batch, std::size_t row_begin, std::size_t row_end, CodeMatrix& codes) {
  if (family_->accumulates_values()) {
    family_->accumulate_dense(batch, row(row_begin), width_, row_begin, row_end);
    return;
  }
  if (direct_columns_ || family_->mirrored_inserts()) {
    family_->hash_dense(batch, codes, row_begin, row_end);
    add_codes(codes, row_begin, row_end);
    return;
  }
  // Columns straight from the family (PStableL2 fuses bucket and column hash), then counted.
  const auto n = static_cast<std::size_t>(batch.rows());
  thread_local std::vector<std::uint32_t> cols;
  cols.resize((row_end - row_begin) * n);
  family_->dense_columns(batch, columns_.data() + row_begin, cols.data(), row_begin, row_end, codes);
  count_columns(cols.data(), n, row_begin, row_end);
}

void RaceSketch::insert_dense(const DenseRef& batch) {
  family_->validate_dense(batch, static_cast<std::size_t>(records_));
  CodeMatrix codes;
  add_dense_rows(batch, 0, rows_, codes);
  records_ += batch.rows();
}

void RaceSketch::insert_sets(const SetBatch& batch) {
  CodeMatrix codes;
  family_->hash_sets(batch, codes);
  add_codes(codes, 0, rows_);
  records_ += static_cast<std::int64_t>(batch.size());
}

std::string RaceSketch::incompatibility(const RaceSketch& other) const {
  if (width_ != other.width_) return "width (" + std::to_string(width_) + " vs " + std::to_string(other.width_) + ")";
  const auto a = family_->params(), b = other.family_->params();
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b.at(key) != value)
      return key + " (" + value.dump() + " vs " + (b.contains(key) ? b.at(key).dump() : std::string("absent")) + ")";
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) return key + " (absent vs " + value.dump() + ")";
  return {};
}

void RaceSketch::merge(const RaceSketch& other) {
  const std::string diff = incompatibility(other);
  if (!diff.empty()) throw InputError("cannot merge sketches with different " + diff);
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  records_ += other.records_;
}

std::int64_t RaceSketch::total() const {
  std::int64_t t = 0;
  for (const auto c : counts_) t += c;
  return t;
}

double RaceSketch::n_hat() const { return n_hat_of(total()); }

double RaceSketch::n_hat_of(std::int64_t total) const {
  return static_cast<double>(total) / static_cast<double>(rows_ * family_->cells_per_record());
}

DoubleMatrix RaceSketch::row_estimates(const CodeMatrix& codes) const {
  // R x queries, filled row by row: a batch of lookups lands in one count row (cache-friendly).
  const Eigen::Index n = codes.cols();
  DoubleMatrix out(static_cast<Eigen::Index>(rows_), n);
  const bool mirrored = family_->mirrored_queries();
  thread_local std::vector<std::uint32_t> cols;
  cols.resize(static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < rows_; ++r) {
    const std::int64_t* counts = row(r);
    const std::uint64_t* c = codes.row(static_cast<Eigen::Index>(r)).data();
    double* dst = out.row(static_cast<Eigen::Index>(r)).data();
    columns_of(columns_[r], c, cols.data(), n);
    for (Eigen::Index i = 0; i < n; ++i) dst[i] = static_cast<double>(counts[cols[static_cast<std::size_t>(i)]]);
    if (mirrored)
      for (Eigen::Index i = 0; i < n; ++i) {
        const std::uint64_t m = family_->mirror(c[i]);
        dst[i] += static_cast<double>(counts[direct_columns_ ? m : columns_[r](m)]);
      }
  }
  return out;
}

std::vector<double> RaceSketch::row_estimates_single(const std::uint64_t* codes) const {
  // One query: the R column hashes are independent, so this loop is a vector of hash
  // computations followed by R independent loads the core overlaps.
  std::vector<double> out(rows_);
  const std::int64_t* counts = counts_.data();
  const ColumnHash* hashes = columns_.data();
  if (direct_columns_) {
    for (std::size_t r = 0; r < rows_; ++r) out[r] = static_cast<double>(counts[r * width_ + codes[r]]);
  } else {
    for (std::size_t r = 0; r < rows_; ++r) out[r] = static_cast<double>(counts[r * width_ + hashes[r](codes[r])]);
  }
  if (family_->mirrored_queries())
    for (std::size_t r = 0; r < rows_; ++r) {
      const std::uint64_t m = family_->mirror(codes[r]);
      out[r] += static_cast<double>(counts[r * width_ + (direct_columns_ ? m : hashes[r](m))]);
    }
  return out;
}

double RaceSketch::combine(std::span<const double> values, const QueryOptions& opts) const {
  return combine(values, opts, opts.debias ? n_hat() : 0.0);
}

double RaceSketch::combine(std::span<const double> values, const QueryOptions& opts, double n_hat) const {
  double estimate;
  if (opts.estimator == Estimator::Mean || opts.mom_groups <= 1 || values.size() < 2) {
    double s = 0;
    for (const double v : values) s += v;
    estimate = s / static_cast<double>(values.size());
  } else {
    // Median of means (Alon, Matias & Szegedy 1999): g groups of consecutive rows (the rows
    // are i.i.d., so consecutive is as good as random); trailing rows join the last group.
    const std::size_t g = std::min(opts.mom_groups, values.size());
    const std::size_t m = values.size() / g;
    std::vector<double> means(g);
    for (std::size_t k = 0; k < g; ++k) {
      const std::size_t lo = k * m, hi = (k + 1 == g) ? values.size() : lo + m;
      double s = 0;
      for (std::size_t i = lo; i < hi; ++i) s += values[i];
      means[k] = s / static_cast<double>(hi - lo);
    }
    std::sort(means.begin(), means.end());
    estimate = (g % 2) ? means[g / 2] : 0.5 * (means[g / 2 - 1] + means[g / 2]);
  }
  if (opts.debias) estimate = debiased(estimate, n_hat);
  return estimate;
}

double RaceSketch::debiased(double estimate, double n) const {
  if (direct_columns_ || width_ <= 1) return estimate;
  // E[X_r] = f (1 - 1/W) + m N / W: each of the m lookups of a record-query pair with unequal
  // codes lands in the query's column with probability 1/W.
  const double w = static_cast<double>(width_);
  const double m = (family_->mirrored_inserts() || family_->mirrored_queries()) ? 2.0 : 1.0;
  return (estimate * w - m * n) / (w - 1.0);
}

std::vector<double> RaceSketch::query_dense(const DenseRef& queries, const QueryOptions& opts) const {
  check_threads(opts.threads, "query threads");
  if (static_cast<std::size_t>(queries.cols()) != family_->dim())
    throw InputError("queries have " + std::to_string(queries.cols()) + " columns but the sketch was built on " +
                     std::to_string(family_->dim()) + "-dimensional data");
  std::vector<double> out(static_cast<std::size_t>(queries.rows()));
  const double nh = opts.debias ? n_hat() : 0.0;  // once, not per query: it sums R x W counts
  // Hashing runs in batches of 64 queries at fixed positions [b 64, (b + 1) 64): every query is
  // hashed by the same GEMM shape and position for any thread count, so the answers are
  // identical for any number of threads. The lookups then run over a block of kBlock queries
  // row by row, so each count row is read once per block rather than once per 64 queries (a
  // row estimate matrix per 64 queries read the whole sketch from memory every batch).
  // Block: up to 4096 queries, fewer when R is large, so the R x block columns stay within
  // 16 MiB a thread (100k queries, R = 1000: 4096 took 0.60 s, 1024 0.75 s, 256 1.07 s here).
  constexpr Eigen::Index kBatch = 64;
  const Eigen::Index kBlock = kBatch * std::clamp<Eigen::Index>(
      static_cast<Eigen::Index>((std::size_t{16} << 20) / (sizeof(std::uint32_t) * kBatch * std::max<std::size_t>(rows_, 1))),
      1, 64);
  const Eigen::Index blocks = (queries.rows() + kBlock - 1) / kBlock;
  // Row groups of the estimator: the mean is one group of all rows; the median of means
  // (Alon, Matias & Szegedy 1999) g groups of consecutive rows, trailing rows in the last.
  // Sums run over the rows in ascending order, as combine() adds them.
  const bool mom = !(opts.estimator == Estimator::Mean || opts.mom_groups <= 1 || rows_ < 2);
  const std::size_t groups = mom ? std::min(opts.mom_groups, rows_) : 1;
  const std::size_t per_group = rows_ / groups;
  const bool mirrored = family_->mirrored_queries();
#pragma omp parallel num_threads(opts.threads > 0 ? opts.threads : omp_get_max_threads()) if (blocks > 1)
  {
    CodeMatrix codes;
    std::vector<std::uint32_t> cols, mirror_cols;  // R x kBlock columns, row-major
    std::vector<double> sums, means(groups);       // groups x kBlock
#pragma omp for schedule(dynamic)
    for (Eigen::Index k = 0; k < blocks; ++k) {
      const Eigen::Index first = k * kBlock;
      const Eigen::Index n = std::min(kBlock, queries.rows() - first);
      const auto stride = static_cast<std::size_t>(n);
      cols.resize(rows_ * stride);
      if (mirrored) mirror_cols.resize(rows_ * stride);
      for (Eigen::Index b = 0; b < n; b += kBatch) {
        const Eigen::Index m = std::min(kBatch, n - b);
        family_->hash_dense(queries.middleRows(first + b, m), codes);
        for (std::size_t r = 0; r < rows_; ++r) {
          const std::uint64_t* c = codes.row(static_cast<Eigen::Index>(r)).data();
          columns_of(columns_[r], c, cols.data() + r * stride + static_cast<std::size_t>(b), m);
          if (mirrored)
            for (Eigen::Index i = 0; i < m; ++i) {
              const std::uint64_t mc = family_->mirror(c[i]);
              mirror_cols[r * stride + static_cast<std::size_t>(b + i)] =
                  static_cast<std::uint32_t>(direct_columns_ ? mc : columns_[r](mc));
            }
        }
      }
      sums.assign(groups * stride, 0.0);
      for (std::size_t r = 0; r < rows_; ++r) {
        const std::int64_t* counts = row(r);
        const std::uint32_t* rc = cols.data() + r * stride;
        double* acc = sums.data() + std::min(r / per_group, groups - 1) * stride;
        if (mirrored) {
          const std::uint32_t* mc = mirror_cols.data() + r * stride;
          for (std::size_t i = 0; i < stride; ++i)
            acc[i] += static_cast<double>(counts[rc[i]]) + static_cast<double>(counts[mc[i]]);
        } else {
          for (std::size_t i = 0; i < stride; ++i) acc[i] += static_cast<double>(counts[rc[i]]);
        }
      }
      for (std::size_t i = 0; i < stride; ++i) {
        double estimate;
        if (!mom) {
          estimate = sums[i] / static_cast<double>(rows_);
        } else {
          for (std::size_t g = 0; g < groups; ++g) {
            const std::size_t lo = g * per_group, hi = (g + 1 == groups) ? rows_ : lo + per_group;
            means[g] = sums[g * stride + i] / static_cast<double>(hi - lo);
          }
          std::sort(means.begin(), means.end());
          estimate = (groups % 2) ? means[groups / 2] : 0.5 * (means[groups / 2 - 1] + means[groups / 2]);
        }
        out[static_cast<std::size_t>(first) + i] = opts.debias ? debiased(estimate, nh) : estimate;
      }
    }
  }
  return out;
}

std::vector<double> RaceSketch::query_sets(const SetBatch& queries, const QueryOptions& opts) const {
  check_threads(opts.threads, "query threads");
  std::vector<double> out(queries.size());
  const double nh = opts.debias ? n_hat() : 0.0;
  constexpr std::size_t kBatch = 64;
  const std::size_t batches = (queries.size() + kBatch - 1) / kBatch;
  // Batches in parallel: each query is R random reads from a sketch far larger than the
  // caches, so threads add memory-level parallelism. Outputs are per query: thread-invariant.
#pragma omp parallel num_threads(opts.threads > 0 ? opts.threads : omp_get_max_threads()) if (batches > 1)
  {
    std::vector<double> values(rows_);
    CodeMatrix codes;
#pragma omp for schedule(dynamic)
    for (std::size_t k = 0; k < batches; ++k) {
      const std::size_t b = queries.begin + k * kBatch;
      const SetBatch part{queries.sets, b, std::min(queries.end, b + kBatch)};
      family_->hash_sets(part, codes);
      const DoubleMatrix est = row_estimates(codes);
      for (std::size_t i = 0; i < part.size(); ++i) {
        for (std::size_t r = 0; r < rows_; ++r) values[r] = est(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(i));
        out[b - queries.begin + i] = combine(values, opts, nh);
      }
    }
  }
  return out;
}

}  // namespace privrace
