#include "privrace/lsh/family.hpp"

#include <cmath>
#include <numbers>

#include "privrace/core/error.hpp"
#include "privrace/core/memory.hpp"
#include "privrace/lsh/kernel_registry.hpp"

namespace privrace {

void LshFamily::hash_dense(const DenseRef&, CodeMatrix&, std::size_t, std::size_t) const {
  throw UsageError("kernel '" + kernel_name() + "' hashes sets, not dense rows");
}
void LshFamily::dense_columns(const DenseRef& batch, const ColumnHash* hashes, std::uint32_t* cols, std::size_t row_begin,
                              std::size_t row_end, CodeMatrix& codes) const {
  hash_dense(batch, codes, row_begin, row_end);
  const Eigen::Index n = codes.cols();
  for (std::size_t r = 0; r < row_end - row_begin; ++r) {
    const std::uint64_t* in = codes.row(static_cast<Eigen::Index>(r)).data();
    std::uint32_t* out = cols + r * static_cast<std::size_t>(n);
    const ColumnHash h = hashes[r];
    for (Eigen::Index i = 0; i < n; ++i) out[i] = h(in[i]);
  }
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

Kernel parse_kernel(const std::string& name) {
  if (const auto kernel = find_kernel(name)) return *kernel;
  throw UsageError("unknown kernel '" + name + "' (expected " + join_names(kernel_names()) + ")");
}

std::string to_string(Kernel kernel) {
  const auto names = kernel_names();
  const auto i = static_cast<std::size_t>(kernel);
  return i < names.size() ? names[i] : "?";
}

bool is_set_kernel(Kernel k) { return kernel_info(k).input == InputKind::Sets; }
bool is_feature_kernel(Kernel k) { return kernel_info(k).feature_map; }

PairMode parse_pair_mode(const std::string& name) {
  if (name == "query") return PairMode::Query;
  if (name == "insert") return PairMode::Insert;
  throw UsageError("pair mode must be 'insert' or 'query', got '" + name + "'");
}

std::string to_string(PairMode mode) { return mode == PairMode::Insert ? "insert" : "query"; }

double family_parameter_bytes(const FamilySpec& spec) {
  const KernelInfo& info = kernel_info(spec.kernel);
  if (info.parameter_bytes) return info.parameter_bytes(spec);
  const double rows = static_cast<double>(spec.rows), dim = static_cast<double>(spec.dim),
               power = static_cast<double>(spec.power);
  // R p x d projections (dense), or R p salts (sets: MinHash)
  return info.input == InputKind::Dense ? rows * power * dim * sizeof(Real) : rows * power * sizeof(std::uint64_t);
}

void check_family_fits(const FamilySpec& spec) {
  const KernelInfo& info = kernel_info(spec.kernel);
  const std::string shape = info.parameter_shape ? info.parameter_shape(spec)
                                                 : "'s " + std::to_string(spec.rows) + " x " + std::to_string(spec.power) +
                                                       " hash functions of " + std::to_string(spec.dim) +
                                                       " dimensions (rows x power x dim)";
  check_fits_in_memory(family_parameter_bytes(spec), "the " + info.name + " family" + shape);
}

std::unique_ptr<LshFamily> make_family(const FamilySpec& spec) {
  const KernelInfo& info = kernel_info(spec.kernel);
  check_family_fits(spec);  // before any of its parameters are allocated
  if (info.fields.rows_power) {
    if (spec.rows == 0) throw UsageError("rows (R) must be at least 1");
    if (spec.power == 0 || spec.power > 64) throw UsageError("power (p) must be in 1..64");
  }
  return info.make(spec);
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
    // The fields the kernel's registry entry says it reads.
    const KernelFields fields = kernel_info(spec.kernel).fields;
    if (fields.features_sigma) {
      spec.dim = field("dim").get<std::size_t>();
      spec.features = field("features").get<std::size_t>();
      spec.sigma = field("sigma").get<double>();
      spec.seed = field("seed").get<std::uint64_t>();
      auto family = make_family(spec);
      if (family->params() != params)
        throw InputError("family header: " + kernel + " fields differ from what they rebuild (grid or rows)");
      return family;
    }
    if (fields.bins_domain) {
      spec.dim = field("dim").get<std::size_t>();
      spec.bins = field("bins").get<std::size_t>();
      spec.lo = field("lo").get<std::vector<double>>();
      spec.hi = field("hi").get<std::vector<double>>();
      spec.seed = field("seed").get<std::uint64_t>();
      if (spec.lo.size() != spec.dim || spec.hi.size() != spec.dim)
        throw InputError("family header: " + kernel + " 'lo' and 'hi' need one value per attribute (" + std::to_string(spec.dim) + ")");
      return make_family(spec);
    }
    spec.power = field("power").get<std::size_t>();
    spec.seed = field("seed").get<std::uint64_t>();
    // jaccard: the one kernel whose header names its scheme (kept for the files written before
    // the densified family); every other kernel's header names it exactly.
    if (spec.kernel == Kernel::Jaccard) {
      // Headers without a scheme predate the densified family: they were classic MinHash.
      const std::string scheme = params.contains("scheme") ? params.at("scheme").get<std::string>() : "classic";
      if (scheme == "classic") spec.kernel = Kernel::JaccardClassic;
      else if (scheme != "doph") throw InputError("family header: unknown jaccard scheme '" + scheme + "' (expected doph or classic)");
    } else if (!is_set_kernel(spec.kernel)) {
      spec.dim = field("dim").get<std::size_t>();
    }
    if (fields.bandwidth) spec.bandwidth = field("bandwidth").get<double>();
    if (fields.pair_mode) spec.pair_mode = parse_pair_mode(field("pair_mode").get<std::string>());
    return make_family(spec);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("family header: wrong field type: ") + e.what());
  } catch (const UsageError& e) {
    throw InputError(std::string("family header: ") + e.what());
  }
}

}  // namespace privrace
