#pragma once
// Adds the release noise to a finished (merged) sketch, once.
#include <functional>
#include <span>
#include <string>

#include "privrace/core/random.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace {

struct NoiseSource {
  bool seeded = false;     // true: reproducible noise, recorded as not fit for release
  std::uint64_t seed = 0;  // used only when seeded
};

// Theorem 3 of the private RACE paper: each count of a row sees a disjoint part of the data
// (parallel composition), the R rows compose sequentially, so noise calibrated to the L1
// sensitivity R (see race_sensitivity) on every count makes the whole array epsilon-DP.
// Throws UsageError if the sketch is already private (noise is added once).
// Value families (RFF) use their own per-record bounds instead (see sketch_sensitivity).
// With spec.count_share > 0 the record count is released too: |D| + zeta with zeta discrete
// Laplace of scale 1 / epsilon_den, epsilon_den = count_share epsilon, and the counts get
// epsilon_num = epsilon - epsilon_den (both recorded, with the noise variances).
// The noise is drawn in blocks of kNoiseBlockCounts counters, in parallel; a seeded run draws
// block b from the stream derive_seed(seed, b), so its output does not depend on the thread
// count (privatize.cpp explains why the release path, on the CSPRNG, is unaffected).
inline constexpr std::size_t kNoiseBlockCounts = std::size_t{1} << 16;
struct NoiseReport {
  double setup_seconds = 0.0;  // parameters and the exact sampler's tables
  double draw_seconds = 0.0;   // the parallel draws
  std::size_t blocks = 0;
};
NoiseReport privatize(RaceSketch& sketch, const PrivacySpec& spec, const NoiseSource& source);

// privatize in its three steps, for counts that lie in shares (privrace sketch under mpirun:
// share k of the summed array on rank k). The plan fixes the mechanism, scale and sampler from
// the whole sketch (validating as privatize does); perturb noises counts [first, first + n) of
// the array in place, block b from the stream privatize gives block b (first a multiple of
// kNoiseBlockCounts, n too unless the share ends the array); mark_private sets the privacy
// record, the noisy record count included, on the sketch whose counts are then all noisy.
class NoisePlan {
 public:
  NoisePlan(const RaceSketch& sketch, const PrivacySpec& spec);
  NoiseReport perturb(std::span<std::int64_t> share, std::size_t first, const NoiseSource& source) const;
  void mark_private(RaceSketch& sketch, const NoiseSource& source) const;

 private:
  PrivacySpec spec_;
  std::size_t cells_ = 0;
  Sensitivity sens_;
  double quantum_ = 1.0;
  bool release_count_ = false;
  double count_sens_ = 0.0, epsilon_num_ = 0.0, epsilon_den_ = 0.0, realised_epsilon_ = 0.0;
  double noise_scale_ = 0.0, noise_variance_ = 0.0, setup_seconds_ = 0.0;
  std::string sampler_ = "inversion";
  std::function<void(std::span<std::int64_t>, RandomSource&)> perturb_;  // one block of counts
};

// L1/L2 sensitivity of the count array: race_sensitivity for hash families (one increment a
// row per record), value_sum_sensitivity of the family's per-record bounds for value families.
// Edge units (graphs) are defined for hash families only (UsageError otherwise).
Sensitivity sketch_sensitivity(const LshFamily& family, NeighborRelation neighbors, NeighborUnit unit = NeighborUnit::Record);

// The privacy record of exact counts released by request (--no-privacy): not private, not fit
// for release, with a warning.
void mark_exact(RaceSketch& sketch);
// A sketch written without noise (--no-privacy) records its exact record count.
void record_exact_count(RaceSketch& sketch);

}  // namespace privrace

namespace privrace {
// Privacy record of a sum of sketches. Private sketches of DISJOINT data merge under parallel
// composition (each record is in one part, so the sum is max-epsilon DP); the record keeps
// every part's settings and says that disjointness was assumed. Mixing a private with a
// non-private sketch is refused (the result would release exact counts of part of the data), and
// so are parts that share their noise (one noise_id twice: the record's variance would be wrong).
PrivacyRecord merged_privacy(const std::vector<PrivacyRecord>& parts);
}  // namespace privrace
