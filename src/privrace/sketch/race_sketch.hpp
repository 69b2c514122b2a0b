#pragma once
// The RACE sketch (Coleman & Shrivastava): R x W int64 counters; row r counts how many
// records landed in each bucket of its LSH function l_r, so S[r, l_r(q)] is an unbiased
// estimate of sum_x k(x, q) (plus the 1/W rehash collisions, removed by `debias`).
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "privrace/core/limits.hpp"
#include "privrace/core/zeroed_pages.hpp"
#include "privrace/core/types.hpp"
#include "privrace/lsh/column_hash.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/record.hpp"

namespace privrace {

enum class Estimator { Mean, MedianOfMeans };
Estimator parse_estimator(const std::string& name);  // "mean" | "mom"

struct QueryOptions {
  Estimator estimator = Estimator::Mean;
  std::size_t mom_groups = 5;  // median-of-means: rows split into this many equal groups
  bool debias = false;         // remove the 1/W collisions of the column hash
  int threads = 0;             // batches of queries answered in parallel; 0 = OpenMP default
};

// Refuses (ResourceError) before allocating when R x W counters would not fit in memory.
void check_sketch_fits(std::size_t rows, std::size_t width, std::size_t copies);

class RaceSketch {
 public:
  RaceSketch(std::shared_ptr<const LshFamily> family, std::size_t width);

  const LshFamily& family() const { return *family_; }
  std::shared_ptr<const LshFamily> family_ptr() const { return family_; }
  std::size_t rows() const { return rows_; }
  std::size_t width() const { return width_; }
  std::int64_t* row(std::size_t r) { return counts_.data() + r * width_; }
  const std::int64_t* row(std::size_t r) const { return counts_.data() + r * width_; }
  std::span<const std::int64_t> counts() const { return counts_; }
  std::span<std::int64_t> mutable_counts() { return counts_; }
  const ColumnHash& column_hash(std::size_t r) const { return columns_[r]; }

  // Serial inserts (the parallel builder calls these on per-thread sub-sketches).
  // insert_dense validates the records (validate_dense) and counts them.
  void insert_dense(const DenseRef& batch);
  // Rows [row_begin, row_end) of a batch: hash + increment, or add the values of a value
  // family (RFF). No validation, no record count (the builder does both). `codes` is scratch.
  void add_dense_rows(const DenseRef& batch, std::size_t row_begin, std::size_t row_end, CodeMatrix& codes);
  void insert_sets(const SetBatch& batch);
  // Increment rows [row_begin, row_end) with codes (rows x batch, row 0 of `codes` = row_begin).
  void add_codes(const CodeMatrix& codes, std::size_t row_begin, std::size_t row_end);
  // counts(r, cols[(r - row_begin) n + i]) += 1 for every row r in [row_begin, row_end), i < n.
  void count_columns(const std::uint32_t* cols, std::size_t n, std::size_t row_begin, std::size_t row_end);

  // Adds other's counts. Throws InputError naming the first differing field (kernel, seed, ...).
  void merge(const RaceSketch& other);
  // Empty string when compatible, else which field differs.
  std::string incompatibility(const RaceSketch& other) const;

  // Codes map to columns one-to-one when the family's codes all fit (e.g. SRP with 2^p <= W):
  // then unequal codes never share a column and there is nothing to debias.
  bool direct_columns() const { return direct_columns_; }
  // Removes the 1/W rehash collisions from a combined estimate E (affine, so it commutes
  // with the mean and the median of means): f = (E W - m N-hat) / (W - 1), m lookups per
  // record-query pair (2 for the SRP pair).
  // O(R W): sums the counts for N-hat. Loops over queries pass N-hat in instead.
  double debiased(double estimate) const { return debiased(estimate, n_hat()); }
  double debiased(double estimate, double n_hat) const;

  // N-hat = total count / (R x cells per record).
  double n_hat() const;
  double n_hat_of(std::int64_t total) const;  // the same from a given sum of the counts
  // Exact number of records inserted (in memory only: a file carries it only through the
  // privacy record, noisy unless the sketch was written with --no-privacy).
  std::int64_t records() const { return records_; }
  void add_records(std::int64_t n) { records_ += n; }
  std::int64_t total() const;

  // Kernel-sum estimates sum_x k(x, q) for each query (not divided by N-hat).
  std::vector<double> query_dense(const DenseRef& queries, const QueryOptions& opts = {}) const;
  std::vector<double> query_sets(const SetBatch& queries, const QueryOptions& opts = {}) const;
  // Per-row estimates X_r for one batch: out is R x queries.
  DoubleMatrix row_estimates(const CodeMatrix& codes) const;
  std::vector<double> row_estimates_single(const std::uint64_t* codes) const;  // codes of one query
  double combine(std::span<const double> row_values, const QueryOptions& opts) const;
  double combine(std::span<const double> row_values, const QueryOptions& opts, double n_hat) const;

  // Privacy state, set by privatize(); a fresh sketch holds exact counts.
  const PrivacyRecord& privacy() const { return privacy_; }
  bool is_private() const { return privacy_.is_private; }
  void set_privacy(PrivacyRecord p) { privacy_ = std::move(p); }

 private:
  void columns_of(const ColumnHash& h, const std::uint64_t* codes, std::uint32_t* cols, Eigen::Index n) const;

  std::shared_ptr<const LshFamily> family_;
  std::size_t rows_, width_;
  std::vector<ColumnHash> columns_;
  bool direct_columns_ = false;
  std::vector<std::int64_t, ZeroedPageAllocator<std::int64_t>> counts_;
  PrivacyRecord privacy_;  // {"private": false}
  std::int64_t records_ = 0;
};

// Column hashes are derived from the LSH seed, so the published seed rebuilds them too.
std::vector<ColumnHash> make_column_hashes(std::uint64_t seed, std::size_t rows, std::size_t width);

}  // namespace privrace
