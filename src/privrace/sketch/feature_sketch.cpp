#include "privrace/sketch/feature_sketch.hpp"

#include <cmath>

#include "privrace/core/error.hpp"
#include "privrace/core/number.hpp"
#include "privrace/lsh/families.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/sketch_io.hpp"

namespace privrace {

void FeatureMap::active_indices(const DenseRef&, IndexMatrix&) const {
  throw UsageError("the " + kind() + " feature map is dense: it has no one-hot indices");
}

void FeatureMap::features(const DenseRef& points, DoubleMatrix& out) const {
  const std::size_t k = active_per_point();
  if (k == 0) throw Error("FeatureMap::features: a dense map must override features()");
  IndexMatrix idx;
  active_indices(points, idx);
  out.setZero(points.rows(), static_cast<Eigen::Index>(size()));
  for (Eigen::Index i = 0; i < points.rows(); ++i)
    for (Eigen::Index j = 0; j < idx.cols(); ++j) out(i, idx(i, j)) = 1.0;
}

OneHotMap::OneHotMap(std::shared_ptr<const LshFamily> family, std::size_t width)
    : family_(std::move(family)), width_(width) {
  // The same column map as RaceSketch: identity when every code has its own column.
  direct_ = family_->code_space() != 0 && family_->code_space() <= width_;
  columns_ = make_column_hashes(family_->seed(), family_->rows(), width_);
}

std::string OneHotMap::kind() const { return family_->kernel_name() == "hist" ? "hist" : "race"; }

void OneHotMap::active_indices(const DenseRef& points, IndexMatrix& out) const {
  if (static_cast<std::size_t>(points.cols()) != family_->dim())
    throw InputError("points have " + std::to_string(points.cols()) + " attributes, the feature map expects " +
                     std::to_string(family_->dim()));
  CodeMatrix codes;
  family_->hash_dense(points, codes);  // R x n
  const std::size_t rows = family_->rows();
  out.resize(points.rows(), static_cast<Eigen::Index>(rows));
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint64_t* c = codes.row(static_cast<Eigen::Index>(r)).data();
    const auto base = static_cast<std::uint32_t>(r * width_);
    for (Eigen::Index i = 0; i < points.rows(); ++i)
      out(i, static_cast<Eigen::Index>(r)) = base + (direct_ ? static_cast<std::uint32_t>(c[i]) : columns_[r](c[i]));
  }
}

nlohmann::json OneHotMap::params() const {
  auto p = family_->params();
  p["width"] = width_;
  return p;
}

RffMap::RffMap(std::shared_ptr<const LshFamily> family) : family_(std::move(family)) {
  const auto* rff = dynamic_cast<const RandomFourierFeatures*>(family_.get());
  if (!rff) throw Error("RffMap needs a RandomFourierFeatures family");
  half_ = rff->half_features();
  omega_t_ = rff->frequencies().cast<double>().transpose();
}

void RffMap::features(const DenseRef& points, DoubleMatrix& out) const {
  if (static_cast<std::size_t>(points.cols()) != family_->dim())
    throw InputError("points have " + std::to_string(points.cols()) + " attributes, the feature map expects " +
                     std::to_string(family_->dim()));
  const Eigen::MatrixXd phase = points.cast<double>() * omega_t_;  // n x m'
  const auto m = static_cast<Eigen::Index>(half_);
  out.resize(points.rows(), 2 * m);
  out.leftCols(m) = phase.array().cos().matrix();
  out.rightCols(m) = phase.array().sin().matrix();
}

std::shared_ptr<const FeatureMap> make_feature_map(std::shared_ptr<const LshFamily> family, std::size_t width) {
  if (family->accumulates_values()) return std::make_shared<RffMap>(std::move(family));
  if (family->input_kind() != InputKind::Dense)
    throw InputError("a sketch of sets (kernel '" + family->kernel_name() + "') is no feature map of dense records");
  if (family->mirrored_inserts())
    throw InputError("a sketch that inserts x and -x (kernel '" + family->kernel_name() +
                     "', pair_mode insert) is no one-hot feature map");
  return std::make_shared<OneHotMap>(std::move(family), width);
}

std::pair<std::vector<double>, std::vector<double>> parse_box_domain(const std::string& text, const std::string& what) {
  std::vector<double> lo, hi;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string interval = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string quoted = what + " '" + interval + "'";
    auto number = [&](const std::string& part) {
      const std::optional<double> v = parse_finite_number(part);
      if (!v) throw UsageError(quoted + ": expected LO:HI with two finite numbers ('" + part + "' is not one)");
      return *v;
    };
    const std::size_t colon = interval.find(':');
    if (colon == std::string::npos) throw UsageError(quoted + ": expected LO:HI with two finite numbers");
    const std::string lo_text = interval.substr(0, colon), hi_text = interval.substr(colon + 1);
    const double l = number(lo_text), h = number(hi_text);
    if (!(l < h)) throw UsageError(quoted + ": LO = " + lo_text + " is not below HI = " + hi_text);
    lo.push_back(l);
    hi.push_back(h);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {lo, hi};
}

std::shared_ptr<const LshFamily> make_feature_family(const FeatureSketchSpec& spec, std::size_t dim) {
  FamilySpec f;
  f.dim = dim;
  f.seed = spec.seed;
  if (spec.kind == "rff") {
    f.kernel = Kernel::Rff;
    f.features = spec.features;
    f.sigma = spec.sigma;
  } else if (spec.kind == "hist") {
    f.kernel = Kernel::Hist;
    f.bins = spec.bins;
    if (spec.lo.empty() || spec.hi.empty()) throw UsageError("a hist sketch needs a declared domain (lo and hi)");
    f.lo = spec.lo;
    f.hi = spec.hi;
  } else if (spec.kind == "race") {
    if (spec.lsh_kernel != Kernel::L2 && spec.lsh_kernel != Kernel::Angular)
      throw UsageError("a race feature sketch uses the l2 or angular kernel, got '" + to_string(spec.lsh_kernel) + "'");
    f.kernel = spec.lsh_kernel;
    f.rows = spec.rows;
    f.power = spec.power;
    f.bandwidth = spec.bandwidth;
  } else {
    throw UsageError("unknown feature sketch kind '" + spec.kind + "' (expected rff, race or hist)");
  }
  return make_family(f);
}

std::size_t feature_sketch_width(const FeatureSketchSpec& spec) {
  if (spec.kind == "rff") return spec.features / 2;  // m' cells in each of the rows cos, sin
  if (spec.kind == "hist") return spec.bins;
  return spec.width;
}

FeatureSums::FeatureSums(ExactSketch exact)
    : exact_(std::move(exact)), map_(make_feature_map(exact_.counts().family_ptr(), exact_.counts().width())) {}

Eigen::VectorXd FeatureSums::sums() const {
  const auto c = sketch().counts();
  Eigen::VectorXd s(static_cast<Eigen::Index>(c.size()));
  const double q = sketch().family().quantum();
  for (std::size_t i = 0; i < c.size(); ++i) s[static_cast<Eigen::Index>(i)] = static_cast<double>(c[i]) * q;
  return s;
}

namespace {
// The release parameters of a feature sketch: its map's fields, the spec's seed as the public
// hash seed.
ReleaseParams feature_release_params(const FeatureSketchSpec& spec, int threads) {
  ReleaseParams params;
  params.threads = threads;
  params.hash_seed = spec.seed;
  if (spec.kind == "rff") {
    params.family.kernel = Kernel::Rff;
    params.family.features = spec.features;
    params.family.sigma = spec.sigma;
  } else if (spec.kind == "hist") {
    params.family.kernel = Kernel::Hist;
    params.family.bins = spec.bins;
    params.family.lo = spec.lo;
    params.family.hi = spec.hi;
  } else {
    params.family.kernel = spec.lsh_kernel;
    params.family.rows = spec.rows;
    params.family.power = spec.power;
    params.family.bandwidth = spec.bandwidth;
    params.width = spec.width;
  }
  return params;
}
}  // namespace

std::shared_ptr<const FeatureSums> build_feature_sums(const DenseRef& data, const FeatureSketchSpec& spec, int threads) {
  if (data.cols() == 0) throw InputError("the data has no attributes");
  const auto dim = static_cast<std::size_t>(data.cols());
  // The spec's own checks and messages first (the map, then the container's shape); the release
  // API's validation then finds nothing more.
  check_sketch_fits(make_feature_family(spec, dim)->rows(), feature_sketch_width(spec), 1);
  // Validates every record (HIST: inside the domain) before counting.
  ExactSketch exact = ExactBuilder::dense(feature_release_params(spec, threads), MasterSeed::of(spec.seed, true), dim).build(data);
  return std::make_shared<const FeatureSums>(std::move(exact));
}

PrivacySpec feature_privacy_spec(const FeatureSketchPrivacy& privacy) {
  if (!(privacy.num_share > 0.0 && privacy.num_share <= 1.0))
    throw UsageError("the numerator's share of epsilon must be in (0, 1], got " + std::to_string(privacy.num_share));
  PrivacySpec spec;
  spec.epsilon = privacy.epsilon;
  spec.delta = privacy.delta;
  spec.mechanism = privacy.mechanism;
  spec.neighbors = privacy.neighbors;
  spec.count_share = 1.0 - privacy.num_share;
  if (spec.count_share <= 0.0)
    throw UsageError("a feature sketch releases its record count: the numerator's share of epsilon must be below 1");
  return spec;
}

FeatureSketchRelease release_feature_sketch(const FeatureSums& sums, const FeatureSketchPrivacy& privacy,
                                            const NoiseSource& source) {
  if (std::isinf(privacy.epsilon) && privacy.epsilon > 0.0) {
    RaceSketch copy = sums.sketch();
    record_exact_count(copy);
    return feature_release_of(copy, sketch_header(copy));
  }
  const Release release = sums.exact().release(feature_privacy_spec(privacy), source);
  return feature_release_of(release.sketch(), sketch_header(release.sketch()));
}

namespace {
// Per-count noise variance of a privacy record, in container units (older files: from the scale).
double recorded_noise_variance(const PrivacyRecord& p) {
  if (p.noise_variance) return *p.noise_variance;
  if (!p.noise_scale || !(p.mechanism || p.mixed_mechanisms))
    throw InputError("privacy record: fields 'noise_variance' (or 'noise_scale' and 'mechanism') are missing");
  const double b = *p.noise_scale;
  if (!p.mechanism) throw InputError("privacy record: unknown mechanism 'mixed'");
  switch (*p.mechanism) {
    case NoiseMechanism::DiscreteLaplace: return DiscreteLaplace(b).variance();
    case NoiseMechanism::FlooredLaplace: return floored_laplace_variance(b);
    case NoiseMechanism::Gaussian: return b * b + 1.0 / 12.0;
    case NoiseMechanism::DiscreteGaussian: return b * b;
  }
  throw InputError("privacy record: unknown mechanism");
}
}  // namespace

FeatureSketchRelease feature_release_of(const RaceSketch& sketch, const nlohmann::json& header) {
  FeatureSketchRelease rel;
  rel.map = make_feature_map(sketch.family_ptr(), sketch.width());
  const double q = sketch.family().quantum();
  const auto c = sketch.counts();
  rel.sums.resize(static_cast<Eigen::Index>(c.size()));
  for (std::size_t i = 0; i < c.size(); ++i) rel.sums[static_cast<Eigen::Index>(i)] = static_cast<double>(c[i]) * q;
  const PrivacyRecord& p = sketch.privacy();
  rel.is_private = sketch.is_private();
  if (p.count) {
    rel.count = *p.count_value();
  } else if (!sketch.family().accumulates_values()) {
    rel.count = sketch.n_hat();  // a RACE sketch built for KDE: N-hat from its own counts
  } else {
    throw InputError("the " + sketch_kind(sketch.family()) + " sketch has no record count: field 'privacy.count' is missing");
  }
  if (rel.is_private) {
    // The reader refuses a private record without epsilon (check_privacy_meaning): only a
    // record set in memory can lack it.
    if (!p.epsilon) throw InputError("privacy record: missing or mistyped field: 'epsilon'");
    rel.epsilon = *p.epsilon;
    rel.epsilon_num = p.epsilon_num.value_or(rel.epsilon);
    rel.epsilon_den = p.epsilon_den.value_or(0.0);
    rel.noise_variance = recorded_noise_variance(p) * q * q;
  }
  rel.privacy = p;
  rel.header = header;
  return rel;
}

FeatureSketchRelease load_feature_release(const std::string& path) {
  nlohmann::json header;
  const RaceSketch sketch = load_sketch(path, &header);
  try {
    return feature_release_of(sketch, header);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

}  // namespace privrace
