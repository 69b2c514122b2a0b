#include "privrace/lsh/family.hpp"

#include <cmath>
#include <numbers>

#include "privrace/core/error.hpp"
#include "privrace/core/memory.hpp"
#include "privrace/lsh/families.hpp"

namespace privrace {

void LshFamily::hash_dense(const DenseRef&, CodeMatrix&, std::size_t, std::size_t) const {
  throw UsageError("kernel '" + kernel_name() + "' hashes sets, not dense rows");
}
void LshFamily::hash_sets(const SetBatch&, CodeMatrix&, std::size_t, std::size_t) const {
  throw UsageError("kernel '" + kernel_name() + "' hashes dense rows, not sets");
}
void LshFamily::accumulate_dense(const DenseRef&, std::int64_t*, std::size_t, std::size_t, std::size_t) const {
  throw UsageError("kernel '" + kernel_name() + "' hashes records to buckets, it does not add feature values");
}
void LshFamily::validate_dense(const DenseRef&, std::size_t) const {}
double LshFamily::kernel_dense(std::span<const double>, std::span<const double>) const {
  throw UsageError("kernel '" + kernel_name() + "' is defined on sets, not dense rows");
}
double LshFamily::kernel_sets(std::span<const std::uint32_t>, std::span<const std::uint32_t>) const {
  throw UsageError("kernel '" + kernel_name() + "' is defined on dense rows, not sets");
}

double pstable_collision(double distance, double width) {
  if (distance <= 0.0) return 1.0;
  const double ratio = width / distance;  // w / c
  const double phi_neg = 0.5 * std::erfc(ratio / std::numbers::sqrt2);  // Phi(-w/c)
  const double p = 1.0 - 2.0 * phi_neg -
                   2.0 / (std::sqrt(2.0 * std::numbers::pi) * ratio) * (1.0 - std::exp(-ratio * ratio / 2.0));
  return std::max(0.0, p);
}

namespace {
constexpr std::pair<Kernel, const char*> kKernelNames[] = {
    {Kernel::L2, "l2"},           {Kernel::Angular, "angular"}, {Kernel::AngularPair, "angular_pair"},
    {Kernel::Jaccard, "jaccard"}, {Kernel::JaccardClassic, "jaccard_classic"}, {Kernel::Rff, "rff"},
    {Kernel::Hist, "hist"}};
}  // namespace

Kernel parse_kernel(const std::string& name) {
  for (const auto& [kernel, text] : kKernelNames)
    if (name == text) return kernel;
  throw UsageError("unknown kernel '" + name + "' (expected l2, angular, angular_pair, jaccard, jaccard_classic, rff or hist)");
}

std::string to_string(Kernel kernel) {
  for (const auto& [k, text] : kKernelNames)
    if (k == kernel) return text;
  return "?";
}

PairMode parse_pair_mode(const std::string& name) {
  if (name == "query") return PairMode::Query;
  if (name == "insert") return PairMode::Insert;
  throw UsageError("pair mode must be 'insert' or 'query', got '" + name + "'");
}

std::string to_string(PairMode mode) { return mode == PairMode::Insert ? "insert" : "query"; }

double family_parameter_bytes(const FamilySpec& spec) {
  const double rows = static_cast<double>(spec.rows), dim = static_cast<double>(spec.dim),
               power = static_cast<double>(spec.power);
  switch (spec.kernel) {
    case Kernel::Rff:  // m' x d frequencies: drawn in double, stored as Real
      return static_cast<double>(spec.features / 2) * dim * static_cast<double>(sizeof(double) + sizeof(Real));
    case Kernel::Hist:  // lo, hi and a scale per attribute
      return 3.0 * dim * sizeof(double);
    case Kernel::L2:  // R p x d projections and R p offsets
      return rows * power * (dim + 1.0) * sizeof(Real);
    case Kernel::Angular:
    case Kernel::AngularPair:
      return rows * power * dim * sizeof(Real);
    default:  // MinHash salts (the densified family holds less)
      return rows * power * sizeof(std::uint64_t);
  }
}

void check_family_fits(const FamilySpec& spec) {
  const std::string shape =
      spec.kernel == Kernel::Rff ? "'s " + std::to_string(spec.features / 2) + " x " + std::to_string(spec.dim) + " frequency matrix (features / 2 x dim)"
      : spec.kernel == Kernel::Hist ? " for " + std::to_string(spec.dim) + " attributes"
                                    : "'s " + std::to_string(spec.rows) + " x " + std::to_string(spec.power) + " hash functions of " +
                                          std::to_string(spec.dim) + " dimensions (rows x power x dim)";
  check_fits_in_memory(family_parameter_bytes(spec), "the " + to_string(spec.kernel) + " family" + shape);
}

std::unique_ptr<LshFamily> make_family(const FamilySpec& spec) {
  check_family_fits(spec);  // before any of its parameters are allocated
  // Feature maps: their rows are fixed by the map (rff: cos and sin; hist: one per attribute).
  if (spec.kernel == Kernel::Rff) {
    if (spec.features == 0 || spec.features % 2 != 0)
      throw UsageError("rff needs an even, positive number of features m = 2 m', got " + std::to_string(spec.features));
    if (!(spec.sigma > 0.0) || !std::isfinite(spec.sigma))
      throw UsageError("rff needs a positive finite bandwidth sigma, got " + std::to_string(spec.sigma));
    if (spec.dim == 0) throw UsageError("the rff kernel needs the input dimension");
    return std::make_unique<RandomFourierFeatures>(spec.dim, spec.features / 2, spec.sigma, spec.seed);
  }
  if (spec.kernel == Kernel::Hist) {
    if (spec.bins == 0) throw UsageError("hist needs at least 1 bin per attribute, got 0");
    if (spec.dim == 0) throw UsageError("the hist kernel needs the input dimension");
    return std::make_unique<MarginalHistograms>(spec.dim, spec.bins, expand_domain(spec.lo, spec.hi, spec.dim), spec.seed);
  }
  if (spec.rows == 0) throw UsageError("rows (R) must be at least 1");
  if (spec.power == 0 || spec.power > 64) throw UsageError("power (p) must be in 1..64");
  if (spec.kernel == Kernel::L2) {
    if (!(spec.bandwidth > 0.0) || !std::isfinite(spec.bandwidth))
      throw UsageError("bandwidth must be a positive finite number for the l2 kernel");
    if (spec.dim == 0) throw UsageError("the l2 kernel needs the input dimension");
    return std::make_unique<PStableL2>(spec.rows, spec.dim, spec.bandwidth, spec.power, spec.seed);
  }
  if (spec.kernel == Kernel::Angular || spec.kernel == Kernel::AngularPair) {
    if (spec.dim == 0) throw UsageError("the " + to_string(spec.kernel) + " kernel needs the input dimension");
    if (spec.kernel == Kernel::Angular) return std::make_unique<SignedRandomProjection>(spec.rows, spec.dim, spec.power, spec.seed);
    return std::make_unique<SrpPair>(spec.rows, spec.dim, spec.power, spec.seed, spec.pair_mode == PairMode::Insert);
  }
  // "jaccard": the densified one-permutation family (fast for every set size, exact J^p);
  // "jaccard_classic": R p independent MinHash permutations (the reference, O(R p |S|)).
  if (spec.kernel == Kernel::Jaccard) return std::make_unique<DensifiedMinHash>(spec.rows, spec.power, spec.seed);
  return std::make_unique<MinHash>(spec.rows, spec.power, spec.seed);  // Kernel::JaccardClassic
}

std::unique_ptr<LshFamily> make_family(const nlohmann::json& params) {
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!params.contains(name)) throw InputError(std::string("family header: missing field '") + name + "'");
    return params.at(name);
  };
  try {
    FamilySpec spec;
    const std::string kernel = field("kernel").get<std::string>();
    // A header names the classic MinHash "jaccard" without a scheme (below), never "jaccard_classic".
    if (kernel == "jaccard_classic")
      throw InputError("family header: kernel 'jaccard_classic' is written as kernel 'jaccard' without a scheme");
    spec.kernel = parse_kernel(kernel);
    spec.rows = field("rows").get<std::size_t>();
    if (spec.kernel == Kernel::Rff) {
      spec.dim = field("dim").get<std::size_t>();
      spec.features = field("features").get<std::size_t>();
      spec.sigma = field("sigma").get<double>();
      spec.seed = field("seed").get<std::uint64_t>();
      auto family = make_family(spec);
      if (family->params() != params) throw InputError("family header: rff fields differ from what they rebuild (grid or rows)");
      return family;
    }
    if (spec.kernel == Kernel::Hist) {
      spec.dim = field("dim").get<std::size_t>();
      spec.bins = field("bins").get<std::size_t>();
      spec.lo = field("lo").get<std::vector<double>>();
      spec.hi = field("hi").get<std::vector<double>>();
      spec.seed = field("seed").get<std::uint64_t>();
      if (spec.lo.size() != spec.dim || spec.hi.size() != spec.dim)
        throw InputError("family header: hist 'lo' and 'hi' need one value per attribute (" + std::to_string(spec.dim) + ")");
      return make_family(spec);
    }
    spec.power = field("power").get<std::size_t>();
    spec.seed = field("seed").get<std::uint64_t>();
    if (spec.kernel == Kernel::Jaccard) {
      // Headers without a scheme predate the densified family: they were classic MinHash.
      const std::string scheme = params.contains("scheme") ? params.at("scheme").get<std::string>() : "classic";
      if (scheme == "classic") spec.kernel = Kernel::JaccardClassic;
      else if (scheme != "doph") throw InputError("family header: unknown jaccard scheme '" + scheme + "' (expected doph or classic)");
    } else {
      spec.dim = field("dim").get<std::size_t>();
    }
    if (spec.kernel == Kernel::L2) spec.bandwidth = field("bandwidth").get<double>();
    if (spec.kernel == Kernel::AngularPair) spec.pair_mode = parse_pair_mode(field("pair_mode").get<std::string>());
    return make_family(spec);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("family header: wrong field type: ") + e.what());
  } catch (const UsageError& e) {
    throw InputError(std::string("family header: ") + e.what());
  }
}

}  // namespace privrace
