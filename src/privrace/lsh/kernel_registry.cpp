#include "privrace/lsh/kernel_registry.hpp"

#include <cmath>
#include <deque>
#include <mutex>
#include <shared_mutex>

#include "privrace/core/error.hpp"
#include "privrace/lsh/families.hpp"

namespace privrace {

namespace {

std::string number(double v) { return std::to_string(v); }

// The built-in kernels, in the order of the Kernel enum (their ids).
std::deque<KernelInfo> builtin_kernels() {
  std::deque<KernelInfo> k;

  KernelInfo l2{.name = "l2", .help = "p-stable"};
  l2.fields.bandwidth = true;
  l2.validate = [](const FamilySpec& f, std::string_view) {
    if (!(f.bandwidth > 0.0) || !std::isfinite(f.bandwidth))
      throw UsageError("bandwidth must be a positive finite number for the l2 kernel");
  };
  l2.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> {
    if (!(f.bandwidth > 0.0) || !std::isfinite(f.bandwidth))
      throw UsageError("bandwidth must be a positive finite number for the l2 kernel");
    if (f.dim == 0) throw UsageError("the l2 kernel needs the input dimension");
    return std::make_unique<PStableL2>(f.rows, f.dim, f.bandwidth, f.power, f.seed);
  };
  // R p x d projections and R p offsets
  l2.parameter_bytes = [](const FamilySpec& f) {
    return static_cast<double>(f.rows) * static_cast<double>(f.power) * (static_cast<double>(f.dim) + 1.0) * sizeof(Real);
  };
  k.push_back(std::move(l2));

  KernelInfo angular{.name = "angular", .help = "SRP"};
  angular.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> {
    if (f.dim == 0) throw UsageError("the angular kernel needs the input dimension");
    return std::make_unique<SignedRandomProjection>(f.rows, f.dim, f.power, f.seed);
  };
  k.push_back(std::move(angular));

  KernelInfo pair{.name = "angular_pair", .help = "regression surrogate"};
  pair.fields.pair_mode = true;
  pair.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> {
    if (f.dim == 0) throw UsageError("the angular_pair kernel needs the input dimension");
    return std::make_unique<SrpPair>(f.rows, f.dim, f.power, f.seed, f.pair_mode == PairMode::Insert);
  };
  k.push_back(std::move(pair));

  // "jaccard": the densified one-permutation family (fast for every set size, exact J^p);
  // "jaccard_classic": R p independent MinHash permutations (the reference, O(R p |S|)).
  KernelInfo jaccard{.name = "jaccard", .help = "densified MinHash", .input = InputKind::Sets};
  jaccard.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> {
    return std::make_unique<DensifiedMinHash>(f.rows, f.power, f.seed);
  };
  k.push_back(std::move(jaccard));

  KernelInfo classic{.name = "jaccard_classic", .help = "independent MinHashes", .input = InputKind::Sets};
  classic.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> { return std::make_unique<MinHash>(f.rows, f.power, f.seed); };
  k.push_back(std::move(classic));

  // Feature maps: their rows are fixed by the map (rff: cos and sin; hist: one per attribute).
  KernelInfo rff{.name = "rff", .help = "random Fourier features, for M2M", .feature_map = true, .grid_sums = true};
  rff.fields = KernelFields{.rows_power = false, .features_sigma = true};
  rff.validate = [](const FamilySpec& f, std::string_view prefix) {
    const std::string p(prefix);
    if (f.features == 0 || f.features % 2 != 0)
      throw UsageError(p + "features must be a positive even number (m = 2 m' random Fourier features), got " +
                       std::to_string(f.features));
    if (!(f.sigma > 0.0) || !std::isfinite(f.sigma)) throw UsageError(p + "sigma must be a positive number, got " + number(f.sigma));
  };
  rff.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> {
    if (f.features == 0 || f.features % 2 != 0)
      throw UsageError("rff needs an even, positive number of features m = 2 m', got " + std::to_string(f.features));
    if (!(f.sigma > 0.0) || !std::isfinite(f.sigma)) throw UsageError("rff needs a positive finite bandwidth sigma, got " + number(f.sigma));
    if (f.dim == 0) throw UsageError("the rff kernel needs the input dimension");
    return std::make_unique<RandomFourierFeatures>(f.dim, f.features / 2, f.sigma, f.seed);
  };
  rff.rows = [](const FamilySpec&) -> std::size_t { return 2; };                              // cos, sin
  rff.columns = [](const FamilySpec& f, std::size_t) -> std::size_t { return f.features / 2; };  // m'
  // m' x d frequencies: drawn in double, stored as Real
  rff.parameter_bytes = [](const FamilySpec& f) {
    return static_cast<double>(f.features / 2) * static_cast<double>(f.dim) * static_cast<double>(sizeof(double) + sizeof(Real));
  };
  rff.parameter_shape = [](const FamilySpec& f) {
    return "'s " + std::to_string(f.features / 2) + " x " + std::to_string(f.dim) + " frequency matrix (features / 2 x dim)";
  };
  k.push_back(std::move(rff));

  KernelInfo hist{.name = "hist", .help = "per-attribute histograms, for M2M", .feature_map = true};
  hist.fields = KernelFields{.rows_power = false, .bins_domain = true};
  hist.validate = [](const FamilySpec& f, std::string_view prefix) {
    const std::string p(prefix);
    if (f.bins == 0) throw UsageError(p + "bins must be at least 1, got 0");
    if (f.lo.empty() || f.hi.empty())
      throw UsageError(p + "kernel hist needs " + p + "domain LO:HI (or one LO:HI per attribute, comma-separated)");
  };
  hist.make = [](const FamilySpec& f) -> std::unique_ptr<LshFamily> {
    if (f.bins == 0) throw UsageError("hist needs at least 1 bin per attribute, got 0");
    if (f.dim == 0) throw UsageError("the hist kernel needs the input dimension");
    return std::make_unique<MarginalHistograms>(f.dim, f.bins, expand_domain(f.lo, f.hi, f.dim), f.seed);
  };
  hist.rows = [](const FamilySpec&) -> std::size_t { return 0; };  // one per attribute: known from the data
  hist.columns = [](const FamilySpec& f, std::size_t) { return f.bins; };
  hist.parameter_bytes = [](const FamilySpec& f) { return 3.0 * static_cast<double>(f.dim) * sizeof(double); };  // lo, hi, scale
  hist.parameter_shape = [](const FamilySpec& f) { return " for " + std::to_string(f.dim) + " attributes"; };
  k.push_back(std::move(hist));
  return k;
}

struct Registry {
  std::shared_mutex mutex;
  std::deque<KernelInfo> kernels = builtin_kernels();  // a deque: entries stay where they are as it grows
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Kernel register_kernel(KernelInfo info) {
  if (info.name.empty()) throw UsageError("a kernel needs a name");
  if (!info.make) throw UsageError("kernel '" + info.name + "' has no family factory");
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  for (const KernelInfo& k : r.kernels)
    if (k.name == info.name) throw UsageError("kernel '" + info.name + "' is registered already");
  r.kernels.push_back(std::move(info));
  return static_cast<Kernel>(r.kernels.size() - 1);
}

const KernelInfo& kernel_info(Kernel kernel) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  const auto i = static_cast<std::size_t>(kernel);
  if (i >= r.kernels.size()) throw UsageError("no kernel is registered with id " + std::to_string(i));
  return r.kernels[i];
}

std::optional<Kernel> find_kernel(std::string_view name) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  for (std::size_t i = 0; i < r.kernels.size(); ++i)
    if (r.kernels[i].name == name) return static_cast<Kernel>(i);
  return std::nullopt;
}

std::vector<Kernel> registered_kernels() {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<Kernel> out;
  for (std::size_t i = 0; i < r.kernels.size(); ++i) out.push_back(static_cast<Kernel>(i));
  return out;
}

std::vector<std::string> kernel_names() {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<std::string> out;
  for (const KernelInfo& k : r.kernels) out.push_back(k.name);
  return out;
}

std::string join_names(const std::vector<std::string>& names, const std::string& last) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace privrace
