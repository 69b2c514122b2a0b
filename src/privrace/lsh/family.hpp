#pragma once
// Locality-sensitive hash families. Every family is seeded and data-independent, so the
// seed can be published with a sketch; `kernel` returns the exact collision probability
// k(x, q) = P[l(x) = l(q)] of one row's hash, which is what a RACE row estimates.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/lsh/column_hash.hpp"

namespace privrace {

enum class InputKind { Dense, Sets };

// The kernels a sketch can be built for: the LSH families (RACE) and the feature maps (M2M).
// A Kernel is an id in the kernel registry (lsh/kernel_registry.hpp): the built-ins below are
// its first entries, in this order; a kernel registered at run time gets the next value.
enum class Kernel {
  L2,              // p-stable (Datar et al.), bucket width w
  Angular,         // signed random projection
  AngularPair,     // the asymmetric SRP pair of the regression surrogate
  Jaccard,         // densified one-permutation MinHash (sets)
  JaccardClassic,  // R p independent MinHash permutations (sets; the reference)
  Rff,             // random Fourier features (a value family, M2M)
  Hist,            // one histogram per attribute (M2M)
};
// A registered kernel's name ("l2" | "angular" | "angular_pair" | "jaccard" | "jaccard_classic" |
// "rff" | "hist" | a kernel registered at run time); UsageError "unknown kernel 'NAME' (expected
// l2, angular, ..., rff or hist)" otherwise. These read the registry.
Kernel parse_kernel(const std::string& name);
std::string to_string(Kernel kernel);
bool is_set_kernel(Kernel k);  // its records are sets (jaccard, jaccard_classic)
// Feature-map sketches: their shape comes from the map (rff: features, hist: bins and the data)
// and they release the record count with a share of epsilon.
bool is_feature_kernel(Kernel k);

// angular_pair: which side is mirrored. Insert: each record is inserted as x and -x (2 cells a
// row change: sensitivity 2R); Query: each query reads l(q) and l(-q) (sensitivity R).
enum class PairMode { Query, Insert };
// "query" | "insert" (the one parse of a pair mode's name, at the front ends and the header
// readers); UsageError "pair mode must be 'insert' or 'query', got 'NAME'" otherwise.
PairMode parse_pair_mode(const std::string& name);
std::string to_string(PairMode mode);
NLOHMANN_JSON_SERIALIZE_ENUM(PairMode, {{PairMode::Query, "query"}, {PairMode::Insert, "insert"}})

class LshFamily {
 public:
  LshFamily(std::size_t rows, std::uint64_t seed) : rows_(rows), seed_(seed) {}
  virtual ~LshFamily() = default;

  virtual std::string kernel_name() const = 0;  // "l2", "angular", "angular_pair", "jaccard", "rff", "hist"
  virtual InputKind input_kind() const = 0;
  virtual std::size_t dim() const { return 0; }  // dense input dimension, 0 for sets
  std::size_t rows() const { return rows_; }
  std::uint64_t seed() const { return seed_; }

  // Hash a batch: `codes` is resized to rows() x batch, codes(r, i) = l_r(point i).
  // Dense batches go through one GEMM (projections = A * X^T).
  // Rows [row_begin, row_end) only (threads that split the sketch's rows hash their own share):
  // `codes` is then (row_end - row_begin) x batch.
  virtual void hash_dense(const DenseRef& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const;
  virtual void hash_sets(const SetBatch& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const;
  void hash_dense(const DenseRef& batch, CodeMatrix& codes) const { hash_dense(batch, codes, 0, rows_); }
  // A RACE sketch's columns of a dense batch for rows [row_begin, row_end): point i's code in
  // row r through hashes[r - row_begin], stored at cols[(r - row_begin) n + i]. Exactly
  // hash_dense followed by the column hashes (the default, with `codes` as scratch); a family
  // may fuse the two passes (PStableL2: one pass from its projections, no 64-bit code matrix).
  virtual void dense_columns(const DenseRef& batch, const ColumnHash* hashes, std::uint32_t* cols, std::size_t row_begin,
                             std::size_t row_end, CodeMatrix& codes) const;
  void hash_sets(const SetBatch& batch, CodeMatrix& codes) const { hash_sets(batch, codes, 0, rows_); }

  // Exact collision probability of one row's hash.
  virtual double kernel_dense(std::span<const double> x, std::span<const double> q) const;
  virtual double kernel_sets(std::span<const std::uint32_t> x, std::span<const std::uint32_t> q) const;

  // Asymmetric pairs (the regression surrogate): the code of -x, obtained from the code of x.
  // `mirrored_inserts`: each record is inserted as x and -x (2 cells a row change);
  // `mirrored_queries`: each query reads l(q) and l(-q) instead (1 cell a row changes).
  virtual bool mirrored_inserts() const { return false; }
  virtual bool mirrored_queries() const { return false; }
  virtual std::uint64_t mirror(std::uint64_t code) const { return code; }

  // Cells of one row that one record touches: the sketch's L1 sensitivity per row.
  std::size_t cells_per_record() const { return mirrored_inserts() ? 2 : 1; }

  // Value families (RFF) add integer feature values to every cell of a row instead of one
  // increment per row: accumulate_dense adds them for rows [row_begin, row_end) to `counts`
  // (row row_begin at counts[0], `width` cells a row). Their sketch is a sum of features.
  virtual bool accumulates_values() const { return false; }
  virtual void accumulate_dense(const DenseRef& batch, std::int64_t* counts, std::size_t width, std::size_t row_begin,
                                std::size_t row_end) const;
  // Value families: the largest L1 and L2 norm, in container units, of what one record adds
  // (the sensitivity under add/remove; derived next to each implementation).
  virtual double record_l1() const { return 0.0; }
  virtual double record_l2() const { return 0.0; }
  // Feature units per container unit: value families store sums on an integer grid.
  virtual double quantum() const { return 1.0; }
  // Throws InputError naming the record (first_record + i + 1, 1-based), attribute and value
  // when a family cannot take a record (HIST: outside its declared domain). Called serially
  // before a batch is hashed, so that no error is raised inside a parallel region.
  virtual void validate_dense(const DenseRef& batch, std::size_t first_record) const;

  // Everything needed to rebuild the identical family: {"kernel":..., "seed":..., ...}.
  virtual nlohmann::json params() const = 0;

  // Number of distinct codes when it is small (SRP with p bits: 2^p), else 0. A sketch whose
  // width holds every code maps codes to columns one-to-one instead of rehashing them.
  std::uint64_t code_space() const { return code_space_; }

 protected:
  void set_code_space(std::uint64_t n) { code_space_ = n; }

 private:
  std::uint64_t code_space_ = 0;
  std::size_t rows_;
  std::uint64_t seed_;
};

// Family settings as the user gives them (the CLI flags / a config's "sketch" object).
struct FamilySpec {
  Kernel kernel = Kernel::L2;
  double bandwidth = 1.0;          // p-stable bucket width w (l2 only)
  std::size_t power = 1;           // concatenation p
  std::size_t rows = 100;          // R: the one definition of the sketch's rows and their default
  std::size_t dim = 0;             // dense input dimension
  std::uint64_t seed = 0;
  PairMode pair_mode = PairMode::Query;  // angular_pair: Insert (x and -x) or Query (q and -q)
  std::size_t features = 0;         // rff: m = 2 m' features (rows = 2: cos, sin; m' columns)
  double sigma = 1.0;               // rff: Gaussian kernel bandwidth
  std::size_t bins = 0;             // hist: equal bins per attribute (rows = dim attributes)
  std::vector<double> lo{}, hi{};   // hist: declared box domain, one interval per attribute
};

// Bytes the family `spec` describes holds for its parameters (projections, frequencies, salts),
// and ResourceError (core/memory.hpp's bound) when they would not fit. make_family checks first.
double family_parameter_bytes(const FamilySpec& spec);
void check_family_fits(const FamilySpec& spec);
std::unique_ptr<LshFamily> make_family(const FamilySpec& spec);
// Rebuild from params() (a sketch file header); throws InputError naming the bad field.
std::unique_ptr<LshFamily> make_family(const nlohmann::json& params);

// Exact collision probability of one p-stable (Gaussian) projection with bucket width w at
// distance c (Datar et al. 2004): 1 - 2 Phi(-w/c) - 2/(sqrt(2 pi) w/c) (1 - exp(-w^2/(2c^2))).
double pstable_collision(double distance, double width);

}  // namespace privrace
