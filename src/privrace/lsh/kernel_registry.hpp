#pragma once
// The kernel registry: one entry per kernel a sketch can be built for. An entry holds the
// kernel's name, its input kind, whether it is a feature map, the FamilySpec fields it reads,
// their checks, the family factory and the release's shape. Everything that asks "which
// kernel?" reads it: parse_kernel / to_string / is_set_kernel / is_feature_kernel and
// make_family (lsh/family.hpp), ReleaseParams::validate / rows / columns and like_params
// (sketch/release.cpp), the CLI's --kernel help and suggestions, the Python module's kernel
// list. The built-in kernels are registered first, in the order of the Kernel enum; a kernel
// registered at run time gets the next id (a Kernel value past Kernel::Hist) and is built,
// released and queried through the release API like a built-in one.
//
// Per-row sensitivity is not an entry of its own: it follows from the family the factory
// makes (LshFamily::cells_per_record: 2 for mirrored inserts, else 1; value families declare
// record_l1 / record_l2), which privatize reads.
//
// Code that still names a Kernel value does not select per-kernel behaviour, it asks for one
// kernel: a task or baseline built on a given family (classify, regression: angular_pair, the
// graph task: jaccard, the KDE task's exact kernel sums and function_release: l2 / angular,
// M2M's feature sketches: rff / hist); the header reader's jaccard scheme (files written before
// the densified family name the classic one "jaccard"); and the feature maps' own options and
// arguments in the front ends (--domain for hist, FeatureSketch's features= / bins=).
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "privrace/lsh/family.hpp"

namespace privrace {

// The FamilySpec fields a kernel reads besides dim and seed (the header and like_params read
// these; the CLI's --like compares them).
struct KernelFields {
  bool rows_power = true;       // R (family.rows) and p (family.power), with the release's width W
  bool bandwidth = false;       // family.bandwidth (l2)
  bool pair_mode = false;       // family.pair_mode (angular_pair)
  bool features_sigma = false;  // family.features, family.sigma (rff)
  bool bins_domain = false;     // family.bins, family.lo / hi (hist)
};

struct KernelInfo {
  std::string name{};  // what parse_kernel reads and to_string / the header's "kernel" write
  std::string help{};  // the CLI's --kernel help: "NAME (HELP)"
  InputKind input = InputKind::Dense;
  // Feature-map sketch (M2M): its shape comes from the map (and the data), it adds feature values
  // instead of one increment a row, and it releases the record count with a share of epsilon.
  bool feature_map = false;
  // Its sums lie on an integer grid and get exact discrete noise: floored_laplace is refused (rff).
  bool grid_sums = false;
  KernelFields fields{};
  // The family of a spec whose dim and seed are set (FamilySpec.kernel is this kernel). R and p
  // (fields.rows_power) are checked before it is called; it checks the rest (UsageError).
  std::function<std::unique_ptr<LshFamily>(const FamilySpec&)> make{};
  // This kernel's own parameter checks, made by ReleaseParams::validate before any data is read,
  // each message naming its option as option_prefix + field ("--bins must be at least 1, got 0").
  // R, W and p are checked there for every kernel with fields.rows_power. Optional.
  std::function<void(const FamilySpec&, std::string_view option_prefix)> validate{};
  // The release's shape as the parameters fix it. Defaults: rows = family.rows, columns = W.
  // rows 0 = known from the data only (hist: one row per attribute; checked once the family is made).
  std::function<std::size_t(const FamilySpec&)> rows{};
  std::function<std::size_t(const FamilySpec&, std::size_t width)> columns{};
  // Bytes the family holds for its parameters, and the words that describe them in a memory
  // refusal (check_family_fits). Defaults: R p d Reals (dense) or R p 64-bit salts (sets), and
  // "'s R x p hash functions of d dimensions (rows x power x dim)".
  std::function<double(const FamilySpec&)> parameter_bytes{};
  std::function<std::string(const FamilySpec&)> parameter_shape{};
};

// Adds a kernel; returns its id. UsageError when the name is empty or taken, or `make` is missing.
Kernel register_kernel(KernelInfo info);
// The entry of a registered kernel (UsageError for an id that names none).
const KernelInfo& kernel_info(Kernel kernel);
// The kernel named `name`, or none.
std::optional<Kernel> find_kernel(std::string_view name);
// Every registered kernel, in registration order (the built-ins first).
std::vector<Kernel> registered_kernels();
// Their names, in that order.
std::vector<std::string> kernel_names();
// "a, b, c or d" (", " between the names, " or " before the last).
std::string join_names(const std::vector<std::string>& names, const std::string& last = " or ");

}  // namespace privrace
