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
  double kernel_dense(std::span<const double> x, std::span<const double> q) const override;
  nlohmann::json params() const override;

 private:
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
// This is the classic O(R p |S|) form; sets of the same size share one pass per row.
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
