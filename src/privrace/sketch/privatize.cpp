#include "privrace/sketch/privatize.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <variant>

#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/release_record.hpp"

namespace privrace {

Sensitivity sketch_sensitivity(const LshFamily& family, NeighborRelation neighbors, NeighborUnit unit) {
  if (family.accumulates_values()) {
    if (unit != NeighborUnit::Record) throw UsageError("edge neighbours apply to set sketches of graphs, not to " + family.kernel_name());
    return value_sum_sensitivity(family.record_l1(), family.record_l2(), neighbors);
  }
  return race_sensitivity(family.rows(), family.cells_per_record(), neighbors, unit);
}

namespace {
// Arrays of at least this many counts draw from a table sampler (set up once per scale).
constexpr std::size_t kBulkCounts = std::size_t{1} << 18;
}  // namespace

NoisePlan::NoisePlan(const RaceSketch& sketch, const PrivacySpec& spec) : spec_(spec), cells_(sketch.counts().size()) {
  const double t_setup = now_seconds();
  spec.validate();
  if (sketch.is_private()) throw UsageError("the sketch already carries noise; it is privatized once, after the merge");
  sens_ = sketch_sensitivity(sketch.family(), spec.neighbors, spec.unit);
  quantum_ = sketch.family().quantum();
  // Budget split (sequential composition of the counts and the record count): epsilon_num for
  // the counts, epsilon_den for |D|. Under replace the count has sensitivity 0 and is released
  // exactly, so the whole budget goes to the counts.
  release_count_ = spec.count_share > 0.0;
  count_sens_ = count_sensitivity(spec.neighbors);
  epsilon_den_ = release_count_ && count_sens_ > 0.0 ? spec.count_share * spec.epsilon : 0.0;
  epsilon_num_ = spec.epsilon - epsilon_den_;
  realised_epsilon_ = epsilon_num_;
  switch (spec.mechanism) {
    case NoiseMechanism::DiscreteLaplace: {
      // P(Z = z) ~ exp(-eps |z| / L1): the geometric mechanism (Ghosh et al. 2009) is eps-DP for
      // integer queries with L1 sensitivity L1; the scale is rounded up, so eps only shrinks.
      const DiscreteLaplace noise(sens_.l1 / epsilon_num_);
      noise_scale_ = noise.scale();
      noise_variance_ = noise.variance();
      realised_epsilon_ = sens_.l1 / noise.scale();
      // Both samplers are exact; the table one pays its set-up only for large sketches. The
      // choice follows the whole array's size, so every share of it draws as the whole would.
      std::shared_ptr<const ExactGeometric> bulk = cells_ >= kBulkCounts ? noise.bulk_sampler() : nullptr;
      sampler_ = bulk ? "exact_geometric_table" : "bernoulli_exp";
      perturb_ = [noise, bulk](std::span<std::int64_t> row, RandomSource& rng) { noise.add_to(row, rng, bulk.get()); };
      break;
    }
    case NoiseMechanism::FlooredLaplace: {
      // Algorithm 1 as printed: floor(S + Lap(L1 / eps)); the floor is post-processing.
      noise_scale_ = sens_.l1 / epsilon_num_;
      noise_variance_ = floored_laplace_variance(noise_scale_);
      perturb_ = [scale = noise_scale_](std::span<std::int64_t> row, RandomSource& rng) {
        for (auto& c : row) c = static_cast<std::int64_t>(std::floor(static_cast<double>(c) + sample_laplace(rng, scale)));
      };
      break;
    }
    case NoiseMechanism::Gaussian: {
      // Analytic Gaussian mechanism at L2 sensitivity; rounding to integers is post-processing.
      noise_scale_ = analytic_gaussian_sigma(epsilon_num_, spec.delta, sens_.l2);
      noise_variance_ = noise_scale_ * noise_scale_ + 1.0 / 12.0;  // normal + the rounding (approx.)
      sampler_ = "box_muller";
      perturb_ = [sigma = noise_scale_](std::span<std::int64_t> row, RandomSource& rng) {
        for (auto& c : row) c += static_cast<std::int64_t>(std::llround(sigma * sample_normal(rng)));
      };
      break;
    }
    case NoiseMechanism::DiscreteGaussian: {
      // Independent N_Z(0, sigma^2) on every count: (l2^2 / (2 sigma^2))-zCDP for integer counts
      // whose neighbouring change has L2 norm at most l2 (one coordinate: Canonne, Kamath &
      // Steinke 2020, Theorem 4; Renyi divergences of independent coordinates add), so
      // sigma = l2 / sqrt(2 rho) with rho the zCDP budget whose (epsilon, delta) conversion
      // (Bun & Steinke 2016, Proposition 1.3) is (epsilon_num, delta): docs/privacy.md.
      const double rho = zcdp_rho(epsilon_num_, spec.delta);
      // sigma^2 is rounded up to a rational (never less noise); beyond the sampler's 10^7 its
      // constructor refuses, naming the range.
      const DiscreteGaussian noise(sens_.l2 / std::sqrt(2.0 * rho));
      noise_scale_ = std::sqrt(noise.sigma2());
      noise_variance_ = noise.sigma2();  // Var N_Z(0, s^2) < s^2, by a relative e^(-2 pi^2 s^2) or less
      realised_epsilon_ = zcdp_epsilon(sens_.l2 * sens_.l2 / (2.0 * noise.sigma2()), spec.delta);
      std::shared_ptr<const DiscreteGaussianTable> bulk = cells_ >= kBulkCounts ? noise.bulk_sampler() : nullptr;
      sampler_ = bulk ? "discrete_gaussian_table" : "discrete_gaussian_rejection";
      perturb_ = [noise, bulk](std::span<std::int64_t> row, RandomSource& rng) { noise.add_to(row, rng, bulk.get()); };
      break;
    }
  }
  setup_seconds_ = now_seconds() - t_setup;
}

NoiseReport NoisePlan::perturb(std::span<std::int64_t> share, std::size_t first, const NoiseSource& source) const {
  if (share.empty()) return NoiseReport{setup_seconds_, 0.0, 0};  // a rank whose slice is empty
  if (first % kNoiseBlockCounts != 0 || first + share.size() > cells_ ||
      (first + share.size() != cells_ && share.size() % kNoiseBlockCounts != 0))
    throw UsageError("a share of the counts to noise must cover whole noise blocks of " + std::to_string(kNoiseBlockCounts) +
                     " counts: [" + std::to_string(first) + ", " + std::to_string(first + share.size()) + ") of " +
                     std::to_string(cells_));
  NoiseReport report;
  report.setup_seconds = setup_seconds_;
  // Noise blocks: the counts, row-major, are cut into blocks of kNoiseBlockCounts counters
  // whatever the shape (a sketch with fewer rows than threads, or one very wide row, still
  // spreads over every thread), and the blocks are perturbed in parallel.
  //
  // Which random stream a block draws from:
  // - Seeded (experiments only, recorded as NOT fit for release): block b of the whole array
  //   draws from its own SeededRandom seeded with derive_seed(seed, b). The stream is a
  //   function of the block index alone, never of the thread (or the process holding the
  //   share) that happens to run the block, so a seeded run writes the same bytes for any
  //   thread or rank count. The record count uses derive_seed(seed ^ "count", 2^40), a stream
  //   no block index reaches (2^40 blocks would be 2^56 counters).
  // - Release: every thread draws its blocks from the CSPRNG (CryptoRandom: OpenSSL's
  //   per-thread public CTR_DRBG, seeded from the OS). Nothing about the release noise is
  //   derived from the block index, a seed or anything else an analyst could know: the
  //   block-to-thread assignment only decides which DRBG output lands in which counter, and
  //   every output is computationally indistinguishable from independent uniform bits, so the
  //   noise of every counter is an independent exact draw of the mechanism as before. The
  //   block index matters only for reproducibility, which a release must not have.
  const std::size_t cells = share.size();
  const std::size_t first_block = first / kNoiseBlockCounts;
  const std::size_t blocks = (cells + kNoiseBlockCounts - 1) / kNoiseBlockCounts;
  const double t_draw = now_seconds();
  // Small sketches (M2M's m = 200) stay on one thread: a parallel region costs more than their noise.
  std::exception_ptr failure;  // a CSPRNG failure inside the region is rethrown after it
#pragma omp parallel if (cells >= 16384)
  {
    std::unique_ptr<RandomSource> os_rng;
    if (!source.seeded) os_rng = std::make_unique<CryptoRandom>();
    // One block at a time: a 1000 x 1000 sketch has 16 blocks, which chunks of 4 left to 4
    // threads (docs/scaling.md); a block is 2^16 draws, far more than the scheduling costs.
#pragma omp for schedule(dynamic, 1)
    for (std::size_t b = 0; b < blocks; ++b) {
      try {
        std::unique_ptr<RandomSource> block_rng;
        if (source.seeded) block_rng = std::make_unique<SeededRandom>(derive_seed(source.seed, first_block + b));
        RandomSource& rng = source.seeded ? *block_rng : *os_rng;
        const std::size_t at = b * kNoiseBlockCounts;
        perturb_(share.subspan(at, std::min(kNoiseBlockCounts, cells - at)), rng);
      } catch (...) {
#pragma omp critical(privrace_noise_error)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  // The caller gets the error; the partly noised counts are not marked private: discard them.
  if (failure) std::rethrow_exception(failure);
  report.draw_seconds = now_seconds() - t_draw;
  report.blocks = blocks;
  return report;
}

void NoisePlan::mark_private(RaceSketch& sketch, const NoiseSource& source) const {
  if (sketch.is_private()) throw UsageError("the sketch already carries noise; it is privatized once, after the merge");
  PrivacyRecord record;
  record.is_private = true;
  record.epsilon = spec_.epsilon;
  record.delta = spec_.delta;
  record.realised_epsilon = realised_epsilon_;
  record.mechanism = spec_.mechanism;
  record.neighbors = spec_.neighbors;
  record.sensitivity_l1 = sens_.l1;
  record.sensitivity_l2 = sens_.l2;
  record.noise_scale = noise_scale_;
  record.noise_variance = noise_variance_;
  record.noise_source = source.seeded ? "seeded" : CryptoRandom::name();
  record.noise_sampler = sampler_;
  record.fit_for_release = !source.seeded;
  if (spec_.unit != NeighborUnit::Record) record.neighbor_unit = spec_.unit;
  // Which noise this is, so that a merge can refuse parts that share it (a file and itself, two
  // files of one seed): random for a release, a fingerprint of the seed (never the seed) else.
  record.noise_id = source.seeded ? seeded_noise_id(source.seed) : fresh_noise_id();
  if (quantum_ != 1.0) {
    // Value families: counts are on a grid of `quantum` feature units; so are the noise figures.
    record.quantum = quantum_;
    record.noise_variance_feature_units = noise_variance_ * quantum_ * quantum_;
    record.sensitivity_note = "sensitivity and noise in grid units; multiply by quantum for feature units";
  }
  if (release_count_) {
    // |D| + zeta: one exact discrete Laplace draw of scale 1 / epsilon_den (sensitivity 1), from
    // a stream of its own (the count blocks use streams 0 .. blocks - 1).
    record.epsilon_num = epsilon_num_;
    record.epsilon_den = epsilon_den_;
    record.count_sensitivity = count_sens_;
    std::int64_t count = sketch.records();
    if (count_sens_ > 0.0) {
      const DiscreteLaplace count_noise(count_sens_ / epsilon_den_);
      auto rng = source.seeded ? std::unique_ptr<RandomSource>(std::make_unique<SeededRandom>(
                                     derive_seed(source.seed ^ 0x636F756E74ULL, std::uint64_t{1} << 40)))
                               : std::unique_ptr<RandomSource>(std::make_unique<CryptoRandom>());
      count += count_noise.sample(*rng);
      record.count_mechanism = "discrete_laplace";
      record.count_noise_scale = count_noise.scale();
      record.count_noise_variance = count_noise.variance();
      record.realised_epsilon = realised_epsilon_ + count_sens_ / count_noise.scale();
    } else {
      record.count_mechanism = "none (replace neighbours: the count does not change, epsilon_den = 0)";
      record.count_noise_variance = 0.0;
    }
    record.count = count;
  }
  if (source.seeded) {
    record.noise_streams = "block b of " + std::to_string(kNoiseBlockCounts) + " counts (row-major) draws from derive_seed(noise seed, b)";
    record.warning = "noise drawn from a seeded generator for reproducible experiments: NOT fit for release";
  }
  sketch.set_privacy(std::move(record));
}

NoiseReport privatize(RaceSketch& sketch, const PrivacySpec& spec, const NoiseSource& source) {
  const NoisePlan plan(sketch, spec);
  NoiseReport report = plan.perturb(sketch.mutable_counts(), 0, source);
  plan.mark_private(sketch, source);
  return report;
}

namespace {
PrivacyRecord exact_record() {
  PrivacyRecord record;
  record.is_private = false;
  record.fit_for_release = false;
  record.warning = "exact counts without noise (written deliberately): NOT fit for release";
  return record;
}
}  // namespace

void mark_exact(RaceSketch& sketch) {
  if (sketch.is_private()) throw UsageError("the sketch carries noise: it is not exact");
  sketch.set_privacy(exact_record());
}

void record_exact_count(RaceSketch& sketch) {
  if (sketch.is_private()) throw UsageError("the sketch carries noise: its count is the released one");
  PrivacyRecord p = sketch.privacy();
  p.count = sketch.records();
  sketch.set_privacy(std::move(p));
}

namespace {
// Parts that share their noise (a file and itself, two files of one noise seed) do not add
// independent noise: their sum would carry less noise than the record states (twice the
// same draw has variance 4 sigma^2, not 2 sigma^2), and a file with itself doubles N-hat.
void check_independent_noise(const std::vector<PrivacyRecord>& parts) {
  std::set<std::string> seen;
  for (const auto& p : parts)
    for (const std::string& id : noise_ids(p))
      if (!seen.insert(id).second)
        throw UsageError("cannot merge sketches that share their noise (noise_id " + id +
                         "): a sketch merged with itself, or two sketches of one --seed; build each part with its own noise "
                         "(--hash-seed S shares the hash functions without sharing the noise)");
}

// Released counts and noise variances of parts with independent noise add up (a part without
// them leaves the merged record without them). The count stays an integer when every part's is.
PrivacyRecord add_sums(PrivacyRecord record, const std::vector<PrivacyRecord>& parts) {
  using Field = std::optional<double> PrivacyRecord::*;
  for (const Field field : {&PrivacyRecord::noise_variance, &PrivacyRecord::noise_variance_feature_units,
                            &PrivacyRecord::count_noise_variance}) {
    const bool all = std::all_of(parts.begin(), parts.end(), [&](const PrivacyRecord& p) { return (p.*field).has_value(); });
    if (!all) continue;
    double total = 0.0;
    for (const auto& p : parts) total += *(p.*field);
    record.*field = total;
  }
  if (std::all_of(parts.begin(), parts.end(), [](const PrivacyRecord& p) { return p.count.has_value(); })) {
    const bool integral = std::all_of(parts.begin(), parts.end(), [](const PrivacyRecord& p) {
      return std::holds_alternative<std::int64_t>(*p.count);
    });
    if (integral) {
      std::int64_t t = 0;
      for (const auto& p : parts) t += std::get<std::int64_t>(*p.count);
      record.count = t;
    } else {
      double t = 0.0;
      for (const auto& p : parts) t += *p.count_value();
      record.count = t;
    }
  }
  return record;
}

// The record of a sum of private parts (all of them private, one neighbouring relation).
// Epsilon under the assumption that the parts hold disjoint records (parallel composition:
// each record is in one part, so the sum is max-epsilon DP), and without it (a record in
// every part: basic sequential composition, the sum of the epsilons and of the deltas).
PrivacyRecord merged_private_record(const std::vector<PrivacyRecord>& parts) {
  double eps = 0.0, delta = 0.0, realised = 0.0, eps_sum = 0.0, delta_sum = 0.0;
  bool fit = true;
  const PrivacyRecord& front = parts.front();
  auto neighbors_name = [](const PrivacyRecord& p) { return p.neighbors ? to_string(*p.neighbors) : std::string("?"); };
  bool mixed = front.mixed_mechanisms;
  for (const auto& p : parts) {
    const double e = p.epsilon.value_or(0.0);
    eps = std::max(eps, e);
    eps_sum += e;
    realised = std::max(realised, p.realised_epsilon.value_or(e));
    delta = std::max(delta, p.delta.value_or(0.0));
    delta_sum += p.delta.value_or(0.0);
    fit = fit && p.fit();
    if (p.mechanism != front.mechanism || p.mixed_mechanisms != front.mixed_mechanisms) mixed = true;
    if (p.neighbors != front.neighbors || p.unit() != front.unit())
      throw UsageError("cannot merge sketches released under different neighbouring relations (" + neighbors_name(front) + " and " +
                       neighbors_name(p) + "): their sum has no single privacy guarantee");
  }
  PrivacyRecord record;
  record.is_private = true;
  record.epsilon = eps;
  record.delta = delta;
  record.realised_epsilon = realised;
  record.neighbors = front.neighbors;
  record.epsilon_if_overlapping = eps_sum;
  record.delta_if_overlapping = delta_sum;
  if (mixed) record.mixed_mechanisms = true;
  else record.mechanism = front.mechanism;
  record.composition = "parallel: epsilon assumes the merged sketches cover disjoint records; "
                       "epsilon_if_overlapping (sequential composition) holds without that assumption";
  record.noise = "independent: every part's noise_id differs, so the noise variances add";
  record.fit_for_release = fit;
  record.merged_from = parts;
  if (front.unit() != NeighborUnit::Record) record.neighbor_unit = front.unit();
  for (const auto field : {&PrivacyRecord::epsilon_num, &PrivacyRecord::epsilon_den}) {
    if (!(front.*field)) continue;
    double m = 0.0;
    for (const auto& p : parts) m = std::max(m, (p.*field).value_or(0.0));
    record.*field = m;
  }
  if (front.quantum) record.quantum = front.quantum;
  return record;
}
}  // namespace

PrivacyRecord merged_privacy(const std::vector<PrivacyRecord>& parts) {
  std::size_t n_private = 0;
  for (const auto& p : parts) n_private += p.is_private ? 1 : 0;
  check_independent_noise(parts);
  if (n_private == 0) {
    PrivacyRecord record = exact_record();
    record.merged_parts = parts.size();
    return add_sums(std::move(record), parts);
  }
  if (n_private != parts.size())
    throw UsageError("cannot merge a private sketch with a non-private one: the sum would expose exact counts");
  return add_sums(merged_private_record(parts), parts);
}
}  // namespace privrace
