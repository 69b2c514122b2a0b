#pragma once
// Seeded Gaussian and uniform draws for LSH parameters. Hand-written Box-Muller instead of
// std::normal_distribution because the standard leaves its algorithm to the library, and a
// published seed must rebuild the same family everywhere.
#include <cmath>
#include <numbers>

#include "privrace/core/random.hpp"

namespace privrace {

template <typename Out>
void fill_gaussian(SeededRandom& rng, Out* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 2) {
    const double u1 = rng.open_unit(), u2 = rng.unit();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<Out>(radius * std::cos(2.0 * std::numbers::pi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<Out>(radius * std::sin(2.0 * std::numbers::pi * u2));
  }
}

}  // namespace privrace
