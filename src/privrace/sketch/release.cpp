#include "privrace/sketch/release.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>

#include "privrace/core/clock.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/lsh/kernel_registry.hpp"
#include "privrace/sketch/set_builder.hpp"
#include "privrace/sketch/sketch_io.hpp"

namespace privrace {

// ---------------------------------------------------------------------------------------------
// Parameters

// The kernel's shape and checks come from its registry entry (lsh/kernel_registry.hpp).

std::size_t ReleaseParams::rows() const {
  const KernelInfo& info = kernel_info(family.kernel);
  return info.rows ? info.rows(family) : family.rows;  // 0: known from the data (hist: one per attribute)
}

std::size_t ReleaseParams::columns() const {
  const KernelInfo& info = kernel_info(family.kernel);
  return info.columns ? info.columns(family, width) : width;
}

void ReleaseParams::validate(std::string_view option_prefix) const {
  const std::string p(option_prefix);
  const Kernel k = family.kernel;
  const KernelInfo& info = kernel_info(k);
  // A feature map's own fields first (rff: features, sigma; hist: bins, domain), then its share.
  if (info.feature_map) {
    if (info.validate) info.validate(family, p);
    if (info.grid_sums && privacy && privacy->mechanism == NoiseMechanism::FlooredLaplace)
      throw UsageError(p + "mechanism floored_laplace adds floating-point Laplace noise; the " + info.name +
                       " sums get exact discrete Laplace on their grid (or gaussian)");
    if (!(num_share > 0.0 && num_share < 1.0))
      throw UsageError(p + "num-share must be in (0, 1) (the record count needs a share of epsilon), got " +
                       std::to_string(num_share));
  }
  if (privacy) noise_spec().validate();
  // An LSH kernel's R, W and p, then its own fields (l2: the bandwidth).
  if (!info.feature_map) {
    if (info.fields.rows_power) {
      if (family.rows == 0) throw UsageError(p + "rows must be at least 1");
      if (width == 0) throw UsageError(p + "width must be at least 1");
      if (family.power == 0 || family.power > 64) throw UsageError("power (p) must be in 1..64");
    }
    if (info.validate) info.validate(family, p);
  }
  check_threads(threads, p + "threads");  // 0..kMaxThreads (core/limits.hpp)
  // The parallel strategy, before any data is read (the builders would refuse it only then).
  check_build_strategy(strategy, k, p);
  // Refuse before reading any data (hist: its rows are the attributes, checked when known).
  if (rows() > 0) check_sketch_fits(rows(), columns(), 1);
}

PrivacySpec ReleaseParams::noise_spec() const {
  if (!privacy) throw UsageError("no privacy parameters: this release keeps exact counts");
  PrivacySpec spec = *privacy;
  if (is_feature_kernel(family.kernel)) spec.count_share = 1.0 - num_share;
  return spec;
}

// ---------------------------------------------------------------------------------------------
// Seeds

MasterSeed MasterSeed::resolve(const std::optional<std::uint64_t>& seed) {
  return seed ? MasterSeed(*seed, true) : MasterSeed(os_random_seed(), false);
}

std::uint64_t MasterSeed::hash_seed() const { return derive_seed(value_, 101); }

NoiseSource MasterSeed::noise() const { return NoiseSource{fixed_, derive_seed(value_, 202)}; }

// ---------------------------------------------------------------------------------------------
// Release

nlohmann::json Release::build_record(const std::string& input) const {
  nlohmann::json record = {{"threads", build_.threads}, {"strategy", build_.strategy}};
  if (is_private()) return record;  // the record count and the input's name are exact
  record["points"] = build_.points;
  record["input"] = std::filesystem::path(input).filename().string();
  return record;
}

void Release::decode_shares() const {
  std::call_once(pending_->once, [&] {
    decode_count_blocks(*encoded_, sketch_.mutable_counts(), "the shares received", pending_->held_begin, pending_->held_end);
  });
}

void save_release(const std::string& path, const Release& release, const nlohmann::json& extra, SketchWriteTimings* timings) {
  save_sketch(path, release.sketch_, release.exact_by_request_, extra, timings, release.encoded_.get());
}

// ---------------------------------------------------------------------------------------------
// Exact sketch

ExactSketch::ExactSketch(RaceSketch counts, BuildReport report, std::optional<ReleaseParams> params,
                         std::optional<MasterSeed> seed)
    : sketch_(std::move(counts)), report_(std::move(report)), params_(std::move(params)), seed_(seed) {
  if (sketch_.is_private()) throw UsageError("an exact sketch holds counts without noise; this one already carries noise");
}

void ExactSketch::merge(const ExactSketch& other) {
  sketch_.merge(other.sketch_);  // checks the parameters and seeds, adds the record counts
  report_.points += other.report_.points;
}

void ExactSketch::add_reduced_records(std::int64_t n) {
  sketch_.add_records(n);
  report_.points += static_cast<std::size_t>(n);
}

namespace {
void check_release_spec(const RaceSketch& sketch, const PrivacySpec& spec) {
  spec.validate();
  if (sketch_kind(sketch.family()) != "race" && !(spec.count_share > 0.0))
    throw UsageError("a feature sketch releases its record count: the privacy spec needs count_share > 0 (feature_privacy_spec)");
}
}  // namespace

Release ExactSketch::privatized(RaceSketch sketch, const BuildReport& report, const PrivacySpec& spec,
                                const NoiseSource& noise) {
  check_release_spec(sketch, spec);
  Release r(std::move(sketch), report);
  const double t0 = now_seconds();
  r.noise_ = privatize(r.sketch_, spec, noise);
  r.noise_seconds_ = now_seconds() - t0;
  return r;
}

Release ExactSketch::release(const PrivacySpec& spec, const NoiseSource& noise) const& {
  return privatized(sketch_, report_, spec, noise);
}

Release ExactSketch::release(const PrivacySpec& spec, const NoiseSource& noise) && {
  return privatized(std::move(sketch_), report_, spec, noise);
}

Release ExactSketch::release() && {
  if (!params_ || !seed_) throw UsageError("this exact sketch was adopted without release parameters: call release(spec, noise)");
  if (params_->privacy) return privatized(std::move(sketch_), report_, params_->noise_spec(), seed_->noise());
  Release r(std::move(sketch_), report_);
  mark_exact(r.sketch_);
  if (is_feature_kernel(params_->family.kernel)) record_exact_count(r.sketch_);
  r.exact_by_request_ = true;
  return r;
}

std::optional<Release> ExactSketch::release_in_shares(std::size_t first, std::size_t n, bool root,
                                                      const ShareExchange& exchange) && {
  if (!params_ || !seed_) throw UsageError("this exact sketch was adopted without release parameters: call release(spec, noise)");
  const auto counts = sketch_.mutable_counts();
  if (first > counts.size() || n > counts.size() - first)
    throw UsageError("a share [" + std::to_string(first) + ", +" + std::to_string(n) + ") outside the " +
                     std::to_string(counts.size()) + " counts");
  if (n > 0 && (first % kShareAlignment != 0 || (first + n != counts.size() && n % kShareAlignment != 0)))
    throw UsageError("a share of the counts must cover whole blocks of " + std::to_string(kShareAlignment) +
                     " counts (the file's encoding blocks), got [" + std::to_string(first) + ", +" + std::to_string(n) + ")");
  std::optional<NoisePlan> plan;
  NoiseReport noise;
  const double t0 = now_seconds();
  if (params_->privacy) {
    const PrivacySpec spec = params_->noise_spec();
    check_release_spec(sketch_, spec);
    plan.emplace(sketch_, spec);
    noise = plan->perturb(counts.subspan(first, n), first, seed_->noise());
  }
  const double noise_seconds = now_seconds() - t0;
  EncodedCountBlocks all = exchange(encode_count_blocks(counts.subspan(first, n)));
  if (!root) return std::nullopt;
  if (all.counts != counts.size())
    throw Error("release_in_shares: the shares received hold " + std::to_string(all.counts) + " of the " +
                std::to_string(counts.size()) + " counts");
  // The other shares' counts (all noisy, or all exact by request) stay encoded until something
  // needs them (Release::sketch); this share's are in place. Writing the file needs neither.
  // Outside its share this process still holds its own exact partial counts: cleared, so that
  // the release never holds an exact count it was not asked to release.
  std::fill(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(first), std::int64_t{0});
  std::fill(counts.begin() + static_cast<std::ptrdiff_t>(first + n), counts.end(), std::int64_t{0});
  Release r(std::move(sketch_), report_);
  r.encoded_ = std::make_shared<const EncodedCountBlocks>(std::move(all));
  r.pending_ = std::make_unique<Release::PendingDecode>();
  r.pending_->held_begin = first / kShareAlignment;
  r.pending_->held_end = n > 0 ? (first + n + kShareAlignment - 1) / kShareAlignment : r.pending_->held_begin;
  if (plan) {
    plan->mark_private(r.sketch_, seed_->noise());
    r.noise_ = noise;
    r.noise_seconds_ = noise_seconds;
  } else {
    mark_exact(r.sketch_);
    if (is_feature_kernel(params_->family.kernel)) record_exact_count(r.sketch_);
    r.exact_by_request_ = true;
  }
  return r;
}

namespace {

BuildOptions dense_options(const ReleaseParams& params) {
  BuildOptions b;
  b.threads = params.threads;
  b.strategy = params.strategy;
  return b;
}

void check_dense(const ReleaseParams& params) {
  if (is_set_kernel(params.family.kernel))
    throw UsageError("the " + to_string(params.family.kernel) + " kernel sketches sets, not dense records");
}

void check_sets(const ReleaseParams& params) {
  if (!is_set_kernel(params.family.kernel))
    throw UsageError("the " + to_string(params.family.kernel) + " kernel sketches dense records, not sets");
}

}  // namespace

ExactBuilder::ExactBuilder(const ReleaseParams& params, const MasterSeed& seed, std::size_t dim) : params_(params), seed_(seed) {
  FamilySpec fam = params.family;
  fam.dim = dim;
  // The one choice of a release's hash seed: the public one given, else the master's.
  fam.seed = params.hash_seed ? *params.hash_seed : seed.hash_seed();
  family_ = make_family(fam);
  // hist: one row per attribute, known now.
  if (params.rows() == 0) check_sketch_fits(family_->rows(), params.columns(), 1);
}

ExactBuilder ExactBuilder::dense(const ReleaseParams& params, const MasterSeed& seed, std::size_t dim) {
  params.validate("");
  check_dense(params);
  return ExactBuilder(params, seed, dim);
}

ExactBuilder ExactBuilder::sets(const ReleaseParams& params, const MasterSeed& seed) {
  params.validate("");
  check_sets(params);
  return ExactBuilder(params, seed, 0);
}

RaceSketch ExactBuilder::empty() const { return RaceSketch(family_, params_.columns()); }

ExactSketch ExactBuilder::adopt(RaceSketch sketch, BuildReport report) const {
  return ExactSketch(std::move(sketch), std::move(report), params_, seed_);
}

ExactSketch ExactBuilder::build(const DenseChunkReader& next) const {
  check_dense(params_);
  RaceSketch sketch = empty();
  BuildReport report = build_dense_stream(sketch, next, dense_options(params_));
  return adopt(std::move(sketch), std::move(report));
}

ExactSketch ExactBuilder::build(const DenseRef& data) const {
  check_dense(params_);
  RaceSketch sketch = empty();
  BuildReport report = build_dense(sketch, data, dense_options(params_));
  return adopt(std::move(sketch), std::move(report));
}

ExactSketch ExactBuilder::build(const SetCollection& sets) const {
  check_sets(params_);
  RaceSketch sketch = empty();
  // Sets go through the two-phase builder (no per-thread sketch copies, no merge) unless the
  // strategy names another.
  BuildReport report = build_set_sketch(sketch, sets, SetBuildOptions{.threads = params_.threads, .strategy = params_.strategy});
  return adopt(std::move(sketch), std::move(report));
}

std::vector<ExactSketch> ExactBuilder::build_parts(const DenseRef& data, std::span<const int> part, std::size_t parts) const {
  check_dense(params_);
  if (static_cast<std::size_t>(data.rows()) != part.size())
    throw UsageError("build_parts: " + std::to_string(data.rows()) + " rows but " + std::to_string(part.size()) + " part indices");
  std::vector<std::vector<Eigen::Index>> members(parts);
  for (std::size_t i = 0; i < part.size(); ++i) {
    const int k = part[i];
    if (k < 0 || static_cast<std::size_t>(k) >= parts)
      throw UsageError("build_parts: row " + std::to_string(i) + " belongs to part " + std::to_string(k) + ", outside 0.." +
                       std::to_string(parts) + ")");
    members[static_cast<std::size_t>(k)].push_back(static_cast<Eigen::Index>(i));
  }
  std::vector<ExactSketch> out;
  out.reserve(parts);
  for (std::size_t k = 0; k < parts; ++k) {
    if (members[k].empty()) {  // nothing to hash: zeros
      out.push_back(adopt(empty(), BuildReport{}));
      continue;
    }
    DenseMatrix rows(static_cast<Eigen::Index>(members[k].size()), data.cols());
    for (std::size_t j = 0; j < members[k].size(); ++j) rows.row(static_cast<Eigen::Index>(j)) = data.row(members[k][j]);
    out.push_back(build(DenseRef(rows)));
  }
  return out;
}

ExactSketch build_exact(const ReleaseParams& params, const MasterSeed& seed, std::size_t dim, const DenseChunkReader& next) {
  return ExactBuilder::dense(params, seed, dim).build(next);
}

ExactSketch build_exact(const ReleaseParams& params, const MasterSeed& seed, const DenseRef& data) {
  return ExactBuilder::dense(params, seed, static_cast<std::size_t>(data.cols())).build(data);
}

ExactSketch build_exact(const ReleaseParams& params, const MasterSeed& seed, const SetCollection& sets) {
  return ExactBuilder::sets(params, seed).build(sets);
}

// ---------------------------------------------------------------------------------------------
// Merge

ReleaseMerge::ReleaseMerge(RaceSketch& target, std::string name) : target_(target), name_(std::move(name)) {
  parts_.push_back(target_.privacy());
}

void ReleaseMerge::add(const RaceSketch& part, const std::string& name) {
  const std::string diff = target_.incompatibility(part);
  if (!diff.empty()) {
    if (name.empty() && name_.empty()) throw InputError("cannot merge: different " + diff);
    throw InputError("cannot merge '" + name + "' into '" + name_ + "': different " + diff);
  }
  // Refuses private + exact, and shared noise, before any count changes.
  std::vector<PrivacyRecord> parts = parts_;
  parts.push_back(part.privacy());
  try {
    merged_privacy(parts);
  } catch (const UsageError& e) {
    if (name.empty()) throw;
    throw UsageError("cannot merge '" + name + "' into '" + name_ + "': " + e.what());
  }
  target_.merge(part);
  parts_ = std::move(parts);
}

void ReleaseMerge::finish() { target_.set_privacy(merged_privacy(parts_)); }

std::optional<std::string> release_warning(const PrivacyRecord& privacy) {
  if (!privacy.is_private)
    return std::string("this sketch holds EXACT counts without noise: it is not differentially private and NOT fit for release");
  if (!privacy.fit())
    return std::string("this sketch's noise was drawn from a seed (reproducible experiments): NOT fit for release");
  return std::nullopt;
}

}  // namespace privrace
