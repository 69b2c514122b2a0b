// Inputs shared by the M2M tests (test_m2m.cpp, test_m2m_intercept.cpp).
#pragma once

#include <cstdint>

#include "privrace/core/random.hpp"
#include "privrace/core/types.hpp"
#include "privrace/sketch/feature_sketch.hpp"

namespace privrace::testing {

inline DenseMatrix uniform_rows(std::size_t n, std::size_t d, std::uint64_t seed) {
  SeededRandom rng(seed);
  DenseMatrix x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<Real>(rng.unit());
  return x;
}

inline FeatureSketchSpec rff_spec(std::size_t features, double sigma) {
  FeatureSketchSpec spec;
  spec.kind = "rff";
  spec.features = features;
  spec.sigma = sigma;
  spec.seed = 11;
  return spec;
}

inline FeatureSketchSpec hist_spec(std::size_t bins) {
  FeatureSketchSpec spec;
  spec.kind = "hist";
  spec.bins = bins;
  spec.lo = {0.0};
  spec.hi = {1.0};
  spec.seed = 3;
  return spec;
}

inline FeatureSketchSpec race_spec(std::size_t rows, std::size_t width, double bandwidth) {
  FeatureSketchSpec spec;
  spec.kind = "race";
  spec.rows = rows;
  spec.width = width;
  spec.bandwidth = bandwidth;
  spec.seed = 5;
  return spec;
}

}  // namespace privrace::testing
