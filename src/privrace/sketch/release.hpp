#pragma once
// THE release API. Every front end (privrace sketch, one process or under mpirun, the Python module, the
// experiment tasks) releases a sketch through it:
//
//   ReleaseParams p;  ...;  p.validate();                       typed parameters, checked once
//   const MasterSeed seed = MasterSeed::resolve(p.seed);         hash and noise seeds, derived here only
//   ExactSketch exact = build_exact(p, seed, records);           exact counts (threads merged inside)
//   ... exact.partial_counts() / exact.merge(...)                combine exact partial counts (MPI, Dask)
//   Release r = std::move(exact).release();                      noise ONCE, after the merge
//   save_release(path, r, extra);                                or return r.sketch
//
// Seeds: hash seed = derive_seed(master, 101), noise seed = derive_seed(master, 202), so a
// seeded release is byte-identical whichever front end built it. A given public hash seed
// (ReleaseParams::hash_seed: --hash-seed, an experiment group's seed, a task's LSH seed)
// replaces the derived one; ExactBuilder resolves it, and nothing else seeds a release's family.
// Exact counts are made here only (ExactSketch has no public constructor): build_exact, or an
// ExactBuilder when many builds share one family (a classifier's class sketches, the auditor's
// runs). Experiments that sweep epsilon build the exact sketch once and call
// exact.release(spec, noise) per epsilon: each call privatizes a new copy; the exact counts
// stay in memory and have no save function.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "privrace/core/types.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace {

// What a data owner asks for. The family's fields are the sketch's parameters:
//   family.kernel                  the kernel (an enum; parse_kernel reads its name)
//   family.rows, family.power      R and p (LSH kernels)
//   family.bandwidth               p-stable bucket width w (l2)
//   family.pair_mode               angular_pair: PairMode::Insert (x and -x, sensitivity 2R) | Query
//   family.features, family.sigma  rff: m = 2 m' features, Gaussian kernel bandwidth
//   family.bins, family.lo/hi      hist: bins per attribute, the declared box domain
// family.dim and family.seed are set by the build (from the records and the master seed).
struct ReleaseParams {
  FamilySpec family;
  std::size_t width = 0;               // W (LSH kernels; rff and hist derive theirs)
  std::optional<std::uint64_t> seed;   // master seed: reproducible, NOT fit for release; none = OS randomness
  // Public hash functions, secret noise: the LSH functions' and column hashes' seed itself
  // (family.seed in the header), so that owners' releases merge; the noise still comes from the
  // master seed (the CSPRNG when `seed` is unset). None = derived from the master seed.
  std::optional<std::uint64_t> hash_seed;
  std::optional<PrivacySpec> privacy;  // none = exact counts, written only deliberately (--no-privacy)
  double num_share = 0.98;             // rff/hist: share of epsilon for the feature sums (the count gets the rest)
  int threads = 0;                     // OpenMP threads (0 = all); the counts do not depend on it
  BuildStrategy strategy = BuildStrategy::Auto;  // dense: Auto | Replicate | SplitRows; sets: TwoPhase too

  Kernel kernel() const { return family.kernel; }
  // The container's shape as far as the parameters fix it: rff 2 x m', hist ? x bins (its rows
  // are the data's attributes: 0 here), else R x W.
  std::size_t rows() const;
  std::size_t columns() const;
  // Throws naming the field, as `option_prefix` + name ("--rows must be at least 1"; the Python
  // module passes "" for "rows must be at least 1"): the rff/hist parameters and num-share, the
  // privacy spec, R, W, p, the bandwidth, the pair mode, threads, and the memory bound
  // (ResourceError from check_sketch_fits, before anything is allocated or read).
  void validate(std::string_view option_prefix = "--") const;
  // The privacy spec the noise uses: `privacy` with count_share = 1 - num_share for rff/hist.
  // UsageError when there is none.
  PrivacySpec noise_spec() const;
};

// The master seed of one release, and the only place where the hash and noise seeds are derived.
class MasterSeed {
 public:
  // A given seed (reproducible, recorded as NOT fit for release) or, without one, the OS's CSPRNG.
  static MasterSeed resolve(const std::optional<std::uint64_t>& seed);
  // A master drawn elsewhere (privrace sketch under mpirun: rank 0 resolves and broadcasts); `fixed` = the user gave it.
  static MasterSeed of(std::uint64_t value, bool fixed) { return MasterSeed(value, fixed); }

  std::uint64_t value() const { return value_; }
  bool fixed() const { return fixed_; }
  std::uint64_t hash_seed() const;  // the LSH functions' seed derived from the master (published in the header)
  NoiseSource noise() const;        // fixed: the seeded stream; else the OS CSPRNG

 private:
  MasterSeed(std::uint64_t value, bool fixed) : value_(value), fixed_(fixed) {}
  std::uint64_t value_;
  bool fixed_;
};

// A released sketch: noisy counts and their privacy record (or, when the parameters asked for
// no privacy, the exact counts marked so), with what the front ends report.
class Release {
 public:
  // The counts (a release made by release_in_shares decodes the other shares' blocks at the
  // first call: writing it needs only its encoded blocks).
  const RaceSketch& sketch() const {
    if (pending_) decode_shares();
    return sketch_;
  }
  RaceSketch take_sketch() && {
    if (pending_) decode_shares();
    return std::move(sketch_);
  }
  std::size_t rows() const { return sketch_.rows(); }  // the shape, without decoding
  std::size_t width() const { return sketch_.width(); }
  bool is_private() const { return sketch_.is_private(); }
  const BuildReport& build() const { return build_; }
  const NoiseReport& noise() const { return noise_; }
  double noise_seconds() const { return noise_seconds_; }
  // The header's "build" record. A private release holds public parameters only: {"threads",
  // "strategy"}; an exact release (no privacy, by request) adds the exact "points" and "input".
  // The exact record count of a private release is for the owner's terminal and in-memory
  // reports (build().points), never for the file.
  nlohmann::json build_record(const std::string& input) const;

 private:
  friend class ExactSketch;
  Release(RaceSketch sketch, BuildReport build) : sketch_(std::move(sketch)), build_(std::move(build)) {}
  void decode_shares() const;
  mutable RaceSketch sketch_;  // mutable: the shares' counts are decoded into it on first use
  BuildReport build_;
  NoiseReport noise_;
  double noise_seconds_ = 0.0;
  bool exact_by_request_ = false;  // released without privacy because the parameters said so
  // The counts as encoded where their shares lay (release_in_shares): written as they are.
  std::shared_ptr<const EncodedCountBlocks> encoded_;
  // Blocks [held_begin, held_end) are this process's own share, already in sketch_; the others
  // are decoded once, by the first call that needs the counts.
  struct PendingDecode {
    std::once_flag once;
    std::size_t held_begin = 0, held_end = 0;
  };
  std::unique_ptr<PendingDecode> pending_;
  friend void save_release(const std::string&, const Release&, const nlohmann::json&, SketchWriteTimings*);
};

// Writes the release atomically (nothing is left at `path` on failure); `extra` adds header
// fields (the "build" record, a graph summary). Exact counts are written only when the release
// was made from parameters without privacy.
void save_release(const std::string& path, const Release& release, const nlohmann::json& extra = nlohmann::json::object(),
                  SketchWriteTimings* timings = nullptr);

// The exact counts of a build, in memory only: there is no function that writes them. Combine
// exact partial counts here (merge, or MPI's reduce on partial_counts()), then release once.
class ExactSketch {
 public:
  const RaceSketch& counts() const { return sketch_; }
  const BuildReport& report() const { return report_; }

  // Adds another share's exact counts (same parameters and seeds: InputError naming the field).
  void merge(const ExactSketch& other);
  // Exact partial counts, as a reduction's buffer (MPI_Reduce in place at the root).
  std::span<std::int64_t> partial_counts() { return sketch_.mutable_counts(); }
  // Records counted by the other shares (after a reduction): the record count and the report's points.
  void add_reduced_records(std::int64_t n);

  // Noise once, on a new copy: the exact counts stay (sweep epsilon with one build). For rff and
  // hist the spec must release the count (count_share > 0: feature_privacy_spec).
  Release release(const PrivacySpec& spec, const NoiseSource& noise) const&;
  // The same without the copy.
  Release release(const PrivacySpec& spec, const NoiseSource& noise) &&;
  // What the parameters ask for: their privacy with the master seed's noise, or (no privacy)
  // the exact counts (rff/hist: with their exact record count), writable by save_release.
  Release release() &&;
  // release() for counts that lie in shares (privrace sketch under mpirun, after a
  // reduce-scatter): this process holds the summed counts [first, first + n) in place in
  // partial_counts() (and the record count summed, on the root). The share is noised here, as
  // release() noises those blocks, and encoded here, as the file's payload encodes them (first a
  // multiple of kShareAlignment; n too unless the share ends the array). `exchange` gets this
  // share's encoded blocks and must return, on the root, every share's in array order (the
  // others' return value is ignored). The root decodes them into its counts and gets release()'s
  // result, which save_release writes from the blocks received (the same bytes for a seeded
  // release); the others get nothing. Without privacy the shares travel exact, as asked.
  static constexpr std::size_t kShareAlignment = kSketchBlockCounts;
  static_assert(kShareAlignment % kNoiseBlockCounts == 0, "a share holds whole noise blocks");
  using ShareExchange = std::function<EncodedCountBlocks(EncodedCountBlocks mine)>;
  std::optional<Release> release_in_shares(std::size_t first, std::size_t n, bool root, const ShareExchange& exchange) &&;

 private:
  // Made by ExactBuilder only (build_exact goes through it): the counts of its build.
  // UsageError if they carry noise. Without parameters and seed there is no default release().
  friend class ExactBuilder;
  friend struct ExactSketchTestAccess;  // tests/engine/test_release.cpp: the refusals above
  ExactSketch(RaceSketch counts, BuildReport report, std::optional<ReleaseParams> params = std::nullopt,
              std::optional<MasterSeed> seed = std::nullopt);
  static Release privatized(RaceSketch sketch, const BuildReport& report, const PrivacySpec& spec, const NoiseSource& noise);

  RaceSketch sketch_;
  BuildReport report_;
  std::optional<ReleaseParams> params_;
  std::optional<MasterSeed> seed_;
};

// The one build of exact counts: the parameters validated once (field names without "--"), the
// family's seed resolved once (params.hash_seed when given, else seed.hash_seed(): the only place
// a release's hash seed is chosen), the family made once and shared by every sketch built here,
// each with the strategy and threads the parameters name. Copies share the family.
class ExactBuilder {
 public:
  // Dense records of `dim` attributes (UsageError for a set kernel).
  static ExactBuilder dense(const ReleaseParams& params, const MasterSeed& seed, std::size_t dim);
  // Sets (UsageError for a dense kernel).
  static ExactBuilder sets(const ReleaseParams& params, const MasterSeed& seed);

  const ReleaseParams& params() const { return params_; }
  const MasterSeed& seed() const { return seed_; }
  std::uint64_t hash_seed() const { return family_->seed(); }
  const std::shared_ptr<const LshFamily>& family() const { return family_; }

  // Dense records streamed in chunks (a table reader), `next` as in build_dense_stream.
  ExactSketch build(const DenseChunkReader& next) const;
  // Dense records in memory (a row-major view, read in place).
  ExactSketch build(const DenseRef& data) const;
  // Sets: the two-phase set builder unless the strategy names another.
  ExactSketch build(const SetCollection& sets) const;
  // Disjoint parts of dense records (a classifier's classes): row i belongs to part part[i]
  // (0..parts-1, UsageError otherwise); one exact sketch per part, all on this family. An empty
  // part's sketch holds zeros.
  std::vector<ExactSketch> build_parts(const DenseRef& data, std::span<const int> part, std::size_t parts) const;

 private:
  ExactBuilder(const ReleaseParams& params, const MasterSeed& seed, std::size_t dim);
  RaceSketch empty() const;
  ExactSketch adopt(RaceSketch sketch, BuildReport report) const;
  ReleaseParams params_;
  MasterSeed seed_;
  std::shared_ptr<const LshFamily> family_;
};

// The exact sketch of a record source: ExactBuilder::dense(params, seed, dim).build(records)
// (sets: ExactBuilder::sets). Dense records streamed in chunks (a table reader): `dim` attributes.
ExactSketch build_exact(const ReleaseParams& params, const MasterSeed& seed, std::size_t dim, const DenseChunkReader& next);
// Dense records in memory (a row-major view, read in place).
ExactSketch build_exact(const ReleaseParams& params, const MasterSeed& seed, const DenseRef& data);
// Sets (jaccard kernels): the two-phase set builder unless the strategy names another.
ExactSketch build_exact(const ReleaseParams& params, const MasterSeed& seed, const SetCollection& sets);

// The public parameters of an existing sketch's header (or of a parameters file holding the
// same fields: "family" and "width"), for releases that must merge with it: kernel, R, W,
// bandwidth, power, pair mode, features, sigma, bins, domain and the hash seed (hash_seed).
// Privacy, threads and strategy are left as in `base`. InputError naming the field.
ReleaseParams like_params(const nlohmann::json& header, ReleaseParams base = {});

// A warning for a sketch that is not fit for release (seeded noise or exact counts), or none.
// Front ends print it on stderr whatever -q says (CLI) or warnings.warn it (Python) whenever
// such a sketch is queried, merged or loaded.
std::optional<std::string> release_warning(const PrivacyRecord& privacy);

// The sum of released sketches of disjoint data (privrace merge, RaceSketch.merge in Python):
// the parameters and seeds must agree (InputError "cannot merge 'B' into 'A': different FIELD",
// or "cannot merge: different FIELD" without names) and the parts must be all private or all
// exact (UsageError from merged_privacy). The target is unchanged when a part is refused.
class ReleaseMerge {
 public:
  explicit ReleaseMerge(RaceSketch& target, std::string name = {});
  void add(const RaceSketch& part, const std::string& name = {});
  // Sets the merged privacy record (parallel composition; see merged_privacy).
  void finish();

 private:
  RaceSketch& target_;
  std::string name_;
  std::vector<PrivacyRecord> parts_;
};

}  // namespace privrace
