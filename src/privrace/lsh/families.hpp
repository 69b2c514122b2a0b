#pragma once
// The concrete LSH families. Construct through make_family().
#include "privrace/lsh/family.hpp"

namespace privrace {

// p-stable L2 LSH (Datar et al. 2004): l(x) = floor((a.x + b) / w), a ~ N(0, I), b ~ U[0, w),
// p of them concatenated. Collision probability pstable_collision(|x - q|, w)^p.
class PStableL2 final : public LshFamily {
 public:
  PStableL2(std::size_t rows, std::size_t dim, double width, std::size_t power, std::uint64_t seed);
  std::string kernel_name() const override { return "l2"; }
  InputKind input_kind() const override { return InputKind::Dense; }
  std::size_t dim() const override { return dim_; }
  void hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const override;
  using LshFamily::hash_dense;
  void dense_columns(const DenseRef& batch, const ColumnHash* hashes, std::uint32_t* cols, std::size_t row_begin,
                     std::size_t row_end, CodeMatrix& codes) const override;
  double kernel_dense(std::span<const double> x, std::span<const double> q) const override;
  nlohmann::json params() const override;

 private:
  // (row_end - row_begin) p x n projections of the batch in units of w (a thread-local buffer).
  const DenseMatrix& project(const DenseRef& batch, std::size_t row_begin, std::size_t row_end) const;
  std::size_t dim_, power_;
  double width_;
  DenseMatrix projections_;    // (R p) x d, pre-divided by w
  DenseMatrix projections_t_;  // d x (R p): the same, laid out for single-point queries
  Eigen::VectorXf offsets_;  // (R p), b / w
};

// Signed random projection (Charikar 2002): p sign bits of Gaussian projections.
// Collision probability (1 - angle(x, q) / pi)^p.
class SignedRandomProjection : public LshFamily {
 public:
  SignedRandomProjection(std::size_t rows, std::size_t dim, std::size_t power, std::uint64_t seed);
  std::string kernel_name() const override { return "angular"; }
  InputKind input_kind() const override { return InputKind::Dense; }
  std::size_t dim() const override { return dim_; }
  void hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const override;
  using LshFamily::hash_dense;
  double kernel_dense(std::span<const double> x, std::span<const double> q) const override;
  nlohmann::json params() const override;

 protected:
  static double angle(std::span<const double> x, std::span<const double> q);
  std::size_t dim_, power_;
  DenseMatrix projections_;  // (R p) x d
};

// The asymmetric SRP pair of the regression surrogate loss: x is paired with -x, so one row
// estimates k(x, q) = (1 - t/pi)^p + (t/pi)^p with t = angle(x, q); it is smallest when
// x is orthogonal to q, i.e. when the residual <[x, y], [theta, -1]> is zero.
// Either every record is inserted as x and -x (sensitivity 2 per row) or the query reads
// the cells of q and -q (sensitivity 1 per row); both estimate the same kernel sum.
class SrpPair final : public SignedRandomProjection {
 public:
  SrpPair(std::size_t rows, std::size_t dim, std::size_t power, std::uint64_t seed, bool mirror_inserts);
  std::string kernel_name() const override { return "angular_pair"; }
  double kernel_dense(std::span<const double> x, std::span<const double> q) const override;
  bool mirrored_inserts() const override { return mirror_inserts_; }
  bool mirrored_queries() const override { return !mirror_inserts_; }
  // sign(a.(-x)) flips every bit (ties at exactly 0 have probability 0 under Gaussian a).
  std::uint64_t mirror(std::uint64_t code) const override { return code ^ mask_; }
  nlohmann::json params() const override;

 private:
  bool mirror_inserts_;
  std::uint64_t mask_;
};

// MinHash over sets of 32-bit ids (Broder 1997): per row and concatenation, the minimum of a
// seeded 64-bit mixing hash over the set. Collision probability J(x, q)^p.
// This is the classic O(R p |S|) form with independent rows: kernel "jaccard_classic" (and every
// "jaccard" header without a "scheme" field, as written before the densified family existed).
class MinHash final : public LshFamily {
 public:
  MinHash(std::size_t rows, std::size_t power, std::uint64_t seed);
  std::string kernel_name() const override { return "jaccard"; }
  InputKind input_kind() const override { return InputKind::Sets; }
  void hash_sets(const SetBatch& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const override;
  using LshFamily::hash_sets;
  double kernel_sets(std::span<const std::uint32_t> x, std::span<const std::uint32_t> q) const override;
  nlohmann::json params() const override;
  static double jaccard(std::span<const std::uint32_t> x, std::span<const std::uint32_t> q);

 private:
  std::size_t power_;
  std::vector<std::uint64_t> salts_;  // R p
};

// Densified one-permutation MinHash (Shrivastava & Li 2014; Shrivastava 2017): one hash per
// element picks a bin (row) and a value; row r keeps the smallest value of its bin. A row whose
// bin is empty borrows the value of the first occupied bin in ITS OWN fixed pseudo-random order
// of the bins (a seeded k-bit bijection G_r, 2^k >= R: bin b comes at position G_r(b)).
// The order depends only on the seed, so P[code_r(A) = code_r(B)] = J(A, B) exactly: the first
// bin in the order that is occupied in A u B holds the minimum of A u B inside it, which is a
// uniformly random element of A u B (elements are exchangeable), and both sets stop there with
// the same value iff that element is in A n B. Values are mix64 of the id, a bijection, so two
// different elements never give equal codes. p > 1 concatenates p independent instances.
//
// Two ways to compute the SAME codes, chosen per set (a cost decision only):
//  - large sets: fill the R bins (|S| hashes), then walk G_r^{-1}(0), G_r^{-1}(1), ... for
//    each empty row until an occupied bin (about 2^k / occupied probes);
//  - small sets (|S| << R, where those probes dominate): sort the few occupied bins and take,
//    for every row, the occupied bin of least rank G_r(b): a vectorised classic-MinHash-shaped
//    loop over (bin, row) pairs. Rows whose own bin is occupied keep it.
// The crossover (|S| ~ 160 at R = 2000) is a cost model fitted to bench/bench_minhash.cpp (doph.cpp).
class DensifiedMinHash final : public LshFamily {
 public:
  enum class Path { Auto, Small, Large };
  DensifiedMinHash(std::size_t rows, std::size_t power, std::uint64_t seed);
  std::string kernel_name() const override { return "jaccard"; }
  InputKind input_kind() const override { return InputKind::Sets; }
  void hash_sets(const SetBatch& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const override;
  using LshFamily::hash_sets;
  double kernel_sets(std::span<const std::uint32_t> x, std::span<const std::uint32_t> q) const override;
  nlohmann::json params() const override;

  // Codes of one sorted, duplicate-free set for rows [row_begin, row_end) into out[0 ..).
  // `path` forces a computation path (tests and benchmarks); every path gives identical codes.
  void hash_one(std::span<const std::uint32_t> set, std::uint64_t* out, std::size_t row_begin, std::size_t row_end,
                Path path = Path::Auto) const;
  // The path Auto takes for a set of this size.
  Path choose(std::size_t set_size, std::size_t rows_in_range) const;

 private:
  struct Instance {
    std::uint64_t salt;                              // element hash: mix64(salt ^ id)
    std::vector<std::uint32_t> c, m1, m2, m3;        // G_r parameters, one per row
    std::vector<std::uint32_t> m1i, m2i, m3i;        // their inverses mod 2^k (for G_r^{-1})
  };
  void instance_codes(const Instance& in, std::span<const std::uint32_t> set, std::uint64_t* out, std::size_t r0,
                      std::size_t r1, Path path) const;
  std::size_t power_;
  unsigned bits_, shift_;  // k and ceil(k / 2)
  std::uint32_t mask_;
  std::vector<Instance> inst_;
};

// Random Fourier features of the Gaussian kernel exp(-|x - q|^2 / (2 sigma^2)) (Rahimi & Recht
// 2007): Phi(x) = [cos(x^T Omega), sin(x^T Omega)] with the m' columns of Omega drawn from
// N(0, sigma^-2 I_d) by the published seed. A value family: the container has 2 rows (cos,
// sin) of m' cells, and each record adds its features quantised to the grid 2^-kGridBits, so
// the sums are exact integers (thread-invariant, mergeable) and get exact discrete noise.
class RandomFourierFeatures final : public LshFamily {
 public:
  static constexpr int kGridBits = 20;  // grid step 2^-20 ~ 9.5e-7, above float cos/sin error
  RandomFourierFeatures(std::size_t dim, std::size_t half_features, double sigma, std::uint64_t seed);
  std::string kernel_name() const override { return "rff"; }
  InputKind input_kind() const override { return InputKind::Dense; }
  std::size_t dim() const override { return dim_; }
  std::size_t half_features() const { return half_; }  // m'
  double sigma() const { return sigma_; }
  // Omega^T: m' x d (row j = frequency j), in float for the batch GEMM.
  const DenseMatrix& frequencies() const { return frequencies_; }
  void hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const override;
  using LshFamily::hash_dense;
  double kernel_dense(std::span<const double> x, std::span<const double> q) const override;
  bool accumulates_values() const override { return true; }
  void accumulate_dense(const DenseRef& batch, std::int64_t* counts, std::size_t width, std::size_t row_begin,
                        std::size_t row_end) const override;
  void validate_dense(const DenseRef& batch, std::size_t first_record) const override;
  double record_l1() const override;
  double record_l2() const override;
  double quantum() const override { return 1.0 / kGrid; }
  nlohmann::json params() const override;

  static constexpr double kGrid = static_cast<double>(std::int64_t{1} << kGridBits);  // G
  // Per (cos, sin) pair of one record, in grid units: |q_c| + |q_s| <= kPairL1 and
  // q_c^2 + q_s^2 <= kPairL2Squared (derived in rff.cpp, enforced there).
  static const std::int64_t kPairL1, kPairL2Squared;

 private:
  std::size_t dim_, half_;
  double sigma_;
  DenseMatrix frequencies_;
};

// HIST (one 1-D histogram per attribute): row r is attribute r, its code is the index of the
// equal-width bin of [lo_r, hi_r] that holds x_r (hi_r itself falls in the last bin); code
// space = bins, so a sketch of width = bins maps bins to columns one-to-one. Records outside
// the declared domain are refused (validate_dense), never clipped silently.
// Sensitivity: one record adds 1 to exactly one bin in each of the d rows, so adding or
// removing it changes the d x bins counts by L1 = d and L2 = sqrt(d) (race_sensitivity with
// R = d, cells_per_record = 1; replace: 2d and sqrt(2d)), the paper's "k for HIST".
class MarginalHistograms final : public LshFamily {
 public:
  MarginalHistograms(std::size_t dim, std::size_t bins, std::pair<std::vector<double>, std::vector<double>> domain,
                     std::uint64_t seed);
  std::string kernel_name() const override { return "hist"; }
  InputKind input_kind() const override { return InputKind::Dense; }
  std::size_t dim() const override { return rows(); }
  std::size_t bins() const { return bins_; }
  const std::vector<double>& lo() const { return lo_; }
  const std::vector<double>& hi() const { return hi_; }
  void hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const override;
  using LshFamily::hash_dense;
  // The fraction of attributes on which x and q share a bin (a uniformly drawn row collides).
  double kernel_dense(std::span<const double> x, std::span<const double> q) const override;
  void validate_dense(const DenseRef& batch, std::size_t first_record) const override;
  nlohmann::json params() const override;
  std::uint64_t bin_of(double value, std::size_t attribute) const;

 private:
  std::size_t bins_;
  std::vector<double> lo_, hi_, scale_;  // scale = bins / (hi - lo)
};

// One interval for every attribute (lo and hi of size 1 are repeated d times, or of size d).
// Throws UsageError naming the attribute and values when lo >= hi or a bound is not finite.
std::pair<std::vector<double>, std::vector<double>> expand_domain(const std::vector<double>& lo,
                                                                  const std::vector<double>& hi, std::size_t dim);

// murmur3 fmix64: a bijective 64-bit mixer.
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Concatenation of p sub-codes into one 64-bit code: acc_0 = c_0, acc_j = mix64(acc_{j-1}) + c_j.
// Tuples that first differ at j differ at acc_j; a later collision needs two mixer outputs to
// differ by exactly the difference of the next sub-codes (about 2^-64). A linear combination
// with fixed multipliers is NOT safe here: small bucket indices solve it with many tuples.
inline std::uint64_t combine_code(std::uint64_t acc, std::uint64_t sub) { return mix64(acc) + sub; }

}  // namespace privrace
