// `privrace m2m --domain LO:HI`: the text is the whole input. What is accepted must give a box
// whose synthetic points (float32) are finite and inside it.
#include <cmath>
#include <string>

#include "privrace/core/error.hpp"
#include "privrace/tasks/m2m.hpp"

using namespace privrace;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto [lo, hi] = parse_domain_interval(text);
    if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi)) __builtin_trap();
    const BoxDomain domain = BoxDomain::uniform(2, lo, hi);
    domain.check();
    DenseMatrix points;
    m2m_synthetic_chunk(domain, 7, 0, 64, points);
    const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
    for (Eigen::Index i = 0; i < points.size(); ++i) {
      const float v = points.data()[i];
      if (!std::isfinite(v) || v < flo || v > fhi) __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
