#pragma once
// Private feature-map sketches for M2M (Houssiau et al., sections 2-3): the release
// (Phi, z = (sum_i Phi(x_i) + xi) / (|D| + zeta), |D| + zeta) of eq. (2).
//
// One container serves every map: the RaceSketch's int64 R x W array, built by the one
// parallel SketchBuilder, noised once by privatize(), written by save_sketch.
//  - RACE: the engine's p-stable / SRP families; Phi(x) is the one-hot of the R x W buckets.
//  - HIST: one 1-D histogram per attribute (MarginalHistograms: row = attribute, code = bin,
//    width = bins, so Phi(x) is the one-hot of d x bins cells).
//  - RFF: RandomFourierFeatures, a value family: row 0 sums cos(omega_j . x), row 1 sin, each
//    record's features quantised to the grid 2^-20, so the sums are exact integers.
// The record count is released with epsilon_den = (1 - num_share) epsilon (privatize with
// count_share); a RACE sketch written for KDE has no count and is read with N-hat instead.
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release.hpp"

namespace privrace {

using IndexMatrix = Eigen::Matrix<std::uint32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Phi: R^d -> R^m, data-independent and seeded (the seed is published with the sketch).
class FeatureMap {
 public:
  virtual ~FeatureMap() = default;
  virtual std::string kind() const = 0;       // "rff" | "race" | "hist"
  virtual std::size_t input_dim() const = 0;  // d
  virtual std::size_t size() const = 0;       // m, the length of Phi(x)
  // One-hot maps (RACE: R rows x W buckets, HIST: d attributes x bins): Phi(x) has exactly
  // active_per_point() ones, one per block; 0 for dense maps (RFF).
  virtual std::size_t active_per_point() const = 0;
  // One-hot maps only: out is n x active_per_point(), the indices in [0, size()) of the ones.
  virtual void active_indices(const DenseRef& points, IndexMatrix& out) const;
  // Every map: out is n x size(), Phi(points) as real numbers (RFF: unquantised cos/sin).
  virtual void features(const DenseRef& points, DoubleMatrix& out) const;
  // max_x ||Phi(x)||_1 in feature units: the L1 sensitivity the noise was calibrated to
  // (RFF: m' (sqrt 2 + 1/G) on its grid; RACE: R; HIST: d).
  virtual double l1_sensitivity() const = 0;
  // max_x ||Phi(x)||_2 in feature units (RFF: sqrt(m') (1 + 1.5/G); RACE: sqrt(R); HIST: sqrt(d)).
  virtual double l2_sensitivity() const = 0;
  virtual nlohmann::json params() const = 0;
  // The engine's family behind the map (the sketch's hash family, or the RFF frequencies).
  virtual const LshFamily& family() const = 0;
};

// RACE and HIST: Phi(x) = [one_hot(column_r(l_r(x)))]_{r < R}, the cell a record increments in
// each row of a RaceSketch of width W (the column map is the sketch's own: identity when the
// codes fit, else the seeded column hash).
class OneHotMap final : public FeatureMap {
 public:
  OneHotMap(std::shared_ptr<const LshFamily> family, std::size_t width);
  std::string kind() const override;
  std::size_t input_dim() const override { return family_->dim(); }
  std::size_t size() const override { return family_->rows() * width_; }
  std::size_t active_per_point() const override { return family_->rows(); }
  void active_indices(const DenseRef& points, IndexMatrix& out) const override;
  double l1_sensitivity() const override { return static_cast<double>(family_->rows()); }
  double l2_sensitivity() const override { return std::sqrt(static_cast<double>(family_->rows())); }
  nlohmann::json params() const override;
  const LshFamily& family() const override { return *family_; }
  std::size_t width() const { return width_; }

 private:
  std::shared_ptr<const LshFamily> family_;
  std::size_t width_;
  bool direct_;
  std::vector<ColumnHash> columns_;
};

// RFF: Phi(x) = [cos(x^T Omega), sin(x^T Omega)] (m = 2 m'), in double precision.
class RffMap final : public FeatureMap {
 public:
  explicit RffMap(std::shared_ptr<const LshFamily> family);  // a RandomFourierFeatures family
  std::string kind() const override { return "rff"; }
  std::size_t input_dim() const override { return family_->dim(); }
  std::size_t size() const override { return 2 * half_; }
  std::size_t active_per_point() const override { return 0; }
  void features(const DenseRef& points, DoubleMatrix& out) const override;
  double l1_sensitivity() const override { return family_->record_l1() * family_->quantum(); }
  double l2_sensitivity() const override { return family_->record_l2() * family_->quantum(); }
  nlohmann::json params() const override { return family_->params(); }
  const LshFamily& family() const override { return *family_; }

 private:
  std::shared_ptr<const LshFamily> family_;
  std::size_t half_;
  Eigen::MatrixXd omega_t_;  // d x m'
};

// The feature map of a sketch's family at its width; throws InputError for families that are
// no feature map of dense rows (sets, the regression pair inserted as x and -x).
std::shared_ptr<const FeatureMap> make_feature_map(std::shared_ptr<const LshFamily> family, std::size_t width);

// The released triplet (Phi, z, n + zeta) as M2M reads it.
struct FeatureSketchRelease {
  std::shared_ptr<const FeatureMap> map;
  Eigen::VectorXd sums;  // sum_i Phi(x_i) + xi, in feature units (size m)
  double count = 0;      // |D| + zeta  (a KDE RACE sketch with no separate count: N-hat)
  double epsilon = std::numeric_limits<double>::infinity();      // inf when not private
  double epsilon_num = std::numeric_limits<double>::infinity();
  double epsilon_den = std::numeric_limits<double>::infinity();
  double noise_variance = 0;  // variance of each xi_j in feature units (0 when not private)
  bool is_private = false;
  PrivacyRecord privacy;  // the sketch's privacy record (budget split, noise, count)
  nlohmann::json header;  // everything recorded about the release, as a file header
};

struct FeatureSketchSpec {
  std::string kind = "rff";       // rff | race | hist
  std::size_t features = 200;     // rff: m = 2 m' (even, > 0)
  double sigma = 1.0;             // rff: Gaussian kernel bandwidth
  Kernel lsh_kernel = Kernel::L2;  // race: l2 | angular (the engine's families)
  std::size_t rows = 80, width = 80, power = 1;
  double bandwidth = 1.0;         // race l2: p-stable width
  std::size_t bins = 100;         // hist: bins per attribute
  std::vector<double> lo{}, hi{}; // hist: declared box domain (one interval, or one per attribute);
                                  // records outside it are refused (InputError), never clipped
  std::uint64_t seed = 0;         // feature-map seed (published)
};

struct FeatureSketchPrivacy {
  double epsilon = 1.0;     // total; +inf = no noise (never written to a file by accident)
  double num_share = 0.98;  // epsilon_num = num_share * epsilon, epsilon_den = the rest
  NoiseMechanism mechanism = NoiseMechanism::DiscreteLaplace;
  double delta = 0.0;
  NeighborRelation neighbors = NeighborRelation::AddRemove;
};

// A declared box domain as text: "LO:HI" (one interval for every attribute) or
// "LO1:HI1,LO2:HI2,..." (one per attribute, in column order). Throws UsageError quoting `what`
// and the interval when a bound is not a finite number or LO >= HI.
std::pair<std::vector<double>, std::vector<double>> parse_box_domain(const std::string& text,
                                                                     const std::string& what = "--domain");

// The family a spec describes, for data of `dim` attributes, and the container width.
std::shared_ptr<const LshFamily> make_feature_family(const FeatureSketchSpec& spec, std::size_t dim);
std::size_t feature_sketch_width(const FeatureSketchSpec& spec);

// Exact sums, in memory only (one parallel pass; thread-invariant).
class FeatureSums {
 public:
  explicit FeatureSums(ExactSketch exact);
  const RaceSketch& sketch() const { return exact_.counts(); }
  const ExactSketch& exact() const { return exact_; }
  const FeatureMap& map() const { return *map_; }
  std::shared_ptr<const FeatureMap> map_ptr() const { return map_; }
  std::int64_t records() const { return sketch().records(); }
  // The exact sums in feature units.
  Eigen::VectorXd sums() const;

 private:
  ExactSketch exact_;
  std::shared_ptr<const FeatureMap> map_;
};

// The exact feature sums of the records, built by the release API (spec.seed is the public hash
// seed, ReleaseParams::hash_seed); the spec is checked first, with the feature map's messages.
std::shared_ptr<const FeatureSums> build_feature_sums(const DenseRef& data, const FeatureSketchSpec& spec,
                                                      int threads = 0);
// The privatize() arguments for a feature sketch (count_share = 1 - num_share).
PrivacySpec feature_privacy_spec(const FeatureSketchPrivacy& privacy);
// Noise once through the release API (ExactSketch::release; seeded source -> reproducible,
// recorded as not fit for release). epsilon = inf gives the exact sums and count (is_private =
// false): the non-private reference, no release.
FeatureSketchRelease release_feature_sketch(const FeatureSums& sums, const FeatureSketchPrivacy& privacy,
                                            const NoiseSource& source);
// A sketch in memory (privatized or exact, with its count recorded) as M2M reads it.
FeatureSketchRelease feature_release_of(const RaceSketch& sketch, const nlohmann::json& header);
// Any sketch file the engine writes (rff, hist, and RACE sketches built for KDE) as M2M reads it.
FeatureSketchRelease load_feature_release(const std::string& path);  // InputError names missing fields

}  // namespace privrace
