#pragma once
// The private RACE paper's section-4 applications beyond KDE, classification and regression:
// mode finding, anomaly detection, diversity sampling, and near-neighbour search (the
// abstract's claim), each written against a density function so that the private sketch, the
// exact KDE and other private densities are compared through the same code.
//
// Privacy. Every application here reads the private sketch only through its released counts
// and N-hat, plus public inputs (the search box, seeded starting points, public query points),
// so a mode, an anomaly score or a sampling weight costs no budget beyond the sketch's
// (post-processing). Two outputs are NOT private and are never written as results:
//  * the records that diversity sampling picks are records of the data set; only the
//    sampling probabilities come from the private density;
//  * near-neighbour candidates are records of the data set, and their LSH codes are computed
//    from the records themselves (the sketch stores no identities).
// The experiments write only aggregate metrics (coverage, recall, AUC) of these.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/tasks/kde.hpp"

namespace privrace {

// f(q) for each row of `points` (a normalised density: kernel sum / N).
using DensityFunction = std::function<std::vector<double>(const DenseRef& points)>;

// The exact LSH-kernel density f(q) = (1/N) sum_x k(x, q) for many single-point evaluations
// (mode search): duplicate rows are merged once at construction (skin: 51k distinct of 245k),
// then each evaluation is a weighted sum over the distinct rows (p-stable kernel from the
// cubic Hermite table of tasks/kde.hpp). Only the "l2" kernel. Thread-safe (const).
class ExactKde {
 public:
  ExactKde(const DenseRef& data, const KernelSpec& spec);
  double at(const double* q) const;
  std::vector<double> operator()(const DenseRef& points) const;
  std::size_t distinct_rows() const { return static_cast<std::size_t>(points_.rows()); }

 private:
  KernelSpec spec_;
  DoubleMatrix points_;
  std::vector<double> weights_;  // multiplicity / N
};

// f_hat(q) = (mean-over-rows kernel-sum estimate) / N-hat of a (private) sketch; N-hat is read
// from the counts once. Thread-safe (const). N-hat <= 0 (possible at tiny epsilon) gives
// f_hat = the estimate itself with a warning flag, so scores keep their order.
class RaceDensity {
 public:
  explicit RaceDensity(const RaceSketch& sketch);
  std::vector<double> operator()(const DenseRef& points) const;
  double n_hat() const { return n_hat_; }

 private:
  const RaceSketch* sketch_;
  double n_hat_, divisor_;
};

// ---------------------------------------------------------------------------------------
// Mode finding (section 4: "apply gradient-free optimization to KDE to recover the modes").

// The public box the search stays in (a declared domain, never the data's min/max).
struct SearchBox {
  std::vector<double> lower, upper;
  // UsageError naming the coordinate when the box is empty (lower >= upper, or not finite)
  // or its dimension is not `dim`.
  void validate(std::size_t dim) const;
};

struct ModeSearchOptions {
  std::size_t modes = 3;              // k: the top-k local maxima returned (k = 0 is refused)
  std::size_t starts = 32;            // multi-start: this many starting points
  // > 0: the starts are the `starts` highest-density points of a public grid with `grid`
  // points per coordinate (cell centres; one batch of grid^d evaluations, at most 2^22);
  // 0: seeded uniform points in the box.
  std::size_t grid = 0;
  std::size_t max_evaluations = 400;  // per start
  double initial_step = 1.0;          // NLopt's first simplex step (a bandwidth is a good scale)
  double x_tolerance = 1e-3;          // absolute, per coordinate
  double min_separation = 1.0;        // two maxima closer than this are one mode
  std::uint64_t seed = 1;             // starting points (data-independent)
  std::string algorithm = "sbplx";    // sbplx | neldermead (NLopt derivative-free, bound-constrained)
};

struct Mode {
  std::vector<double> point;
  double density = 0;
};

struct ModeSearchResult {
  std::vector<Mode> modes;  // at most options.modes, highest density first
  std::size_t evaluations = 0;
  std::size_t local_maxima = 0;  // distinct maxima found before the top-k cut
};

// Multi-start NLopt maximisation of f over the box (starts run in parallel; the result does
// not depend on the thread count: each start has its own seed and the merge is ordered).
// The local maxima are merged greedily by density (a maximum within min_separation of a
// higher one is dropped), and the top k are returned.
ModeSearchResult find_modes(const DensityFunction& f, const SearchBox& box, const ModeSearchOptions& options);

struct ModeMatch {
  double mean_distance = 0;  // mean over found modes of the distance to the nearest true mode
  double max_distance = 0;
  std::size_t recovered = 0;  // true modes with a found mode within `radius`
};
ModeMatch match_modes(const std::vector<Mode>& found, const DoubleMatrix& truth, double radius);

// ---------------------------------------------------------------------------------------
// Gaussian mixtures with known components (generated data for the applications).

struct MixtureSpec {
  std::size_t dim = 2;
  std::size_t components = 3;
  std::vector<double> weights;  // empty = equal; else one per component (normalised here)
  double sd = 1.0;              // isotropic standard deviation of every component
  double box = 10.0;            // means uniform in [0, box]^dim ...
  double min_separation = 4.0;  // ... at least this far apart (rejection; error if impossible)
  std::uint64_t seed = 1;
};

struct Mixture {
  DoubleMatrix means;       // components x dim
  DenseMatrix points;       // n x dim
  std::vector<int> labels;  // component of each point
};
Mixture sample_mixture(const MixtureSpec& spec, std::size_t n);

// ---------------------------------------------------------------------------------------
// Anomaly detection (section 4: a low density marks an outlier).

// The anomaly score is the negated density (low density = anomalous); the experiments rate it
// with the ROC AUC of experiments/metrics.hpp.

// ---------------------------------------------------------------------------------------
// Diversity sampling (section 4 "Sampling", after Coleman et al.'s diversified RACE sampling):
// k draws without replacement, P(pick i) proportional to 1 / max(f(x_i), floor) (a private f
// can be 0 or negative; the floor keeps weights finite). Efraimidis-Spirakis keys.
std::vector<std::size_t> inverse_density_sample(std::span<const double> density, std::size_t k, double floor,
                                                RandomSource& rng);
std::vector<std::size_t> uniform_sample(std::size_t n, std::size_t k, RandomSource& rng);
// Fraction of the `components` labels hit by the picked points.
double component_coverage(std::span<const std::size_t> picked, std::span<const int> labels, std::size_t components);

// ---------------------------------------------------------------------------------------
// Near-neighbour search. The sketch stores counts, not records, so it cannot return records;
// the scores below rank CANDIDATE records (read in the clear) for a query and are measured
// against the exact Euclidean neighbours.

// The k nearest rows of `data` to each query (Euclidean; ties by lower index).
std::vector<std::vector<std::size_t>> exact_neighbors(const DenseRef& data, const DenseRef& queries, std::size_t k);

// Per query, candidate scores from a sketch's hash functions and counts:
//   collisions(c)  = #{r : column_r(c) = column_r(q)}            (public hashes only)
//   weighted(c)    = sum_r [column_r(c) = column_r(q)] S[r, column_r(q)]   (the private kernel
//                    sum around the query, split over the candidates that share its cells)
// and returns the top-k candidates of each (ties by lower index).
struct SketchNeighbors {
  std::vector<std::vector<std::size_t>> by_collisions, by_weighted;
};
SketchNeighbors sketch_neighbors(const RaceSketch& sketch, const DenseRef& candidates, const DenseRef& queries,
                                 std::size_t k);
// Top-k of a fixed score vector (higher first; ties by lower index).
std::vector<std::size_t> top_k(std::span<const double> score, std::size_t k);
// Mean over queries of |found ∩ truth| / |truth|.
double recall_at_k(const std::vector<std::vector<std::size_t>>& found, const std::vector<std::vector<std::size_t>>& truth);

}  // namespace privrace
