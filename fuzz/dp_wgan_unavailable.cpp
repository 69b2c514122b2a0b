// The config fuzzer links every task and method so that configs are validated against the real
// registry, but it never fits a model. libtorch's headers do not compile with clang 14 in
// C++20 mode (c10::IValue is used while incomplete), so this target replaces dp_wgan.cpp with
// definitions that refuse to run; the configs that name dp_wgan still parse and validate.
#include "privrace/baselines/dp_wgan.hpp"
#include "privrace/core/error.hpp"

namespace privrace::baselines {

struct DpWgan::Nets {};

namespace {
[[noreturn]] void unavailable() { throw Error("dp_wgan is not built into the config fuzzer"); }
}  // namespace

DpWgan::DpWgan(const DpWganOptions& options) : opt_(options) {}
DpWgan::~DpWgan() = default;
void DpWgan::fit(const DenseRef&, const TableBox&, const SyntheticPrivacy&, RandomSource&) { unavailable(); }
DoubleMatrix DpWgan::sample(std::size_t, std::uint64_t) const { unavailable(); }
nlohmann::json DpWgan::privacy_record() const { unavailable(); }
ClippingCheck dp_wgan_clipping_check(const DoubleMatrix&, const DpWganOptions&, double, std::uint64_t) { unavailable(); }

}  // namespace privrace::baselines
