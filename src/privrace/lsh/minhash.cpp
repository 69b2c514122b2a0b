#include <algorithm>
#include <cmath>
#include <limits>

#include "privrace/core/random.hpp"

#include "privrace/lsh/families.hpp"

namespace privrace {


MinHash::MinHash(std::size_t rows, std::size_t power, std::uint64_t seed) : LshFamily(rows, seed), power_(power) {
  std::uint64_t state = derive_seed(seed, 3);
  salts_.resize(rows * power);
  for (auto& s : salts_) s = splitmix64(state);
}

void MinHash::hash_sets(const SetBatch& batch, CodeMatrix& codes, std::size_t row_begin, std::size_t row_end) const {
  const std::size_t n = batch.size();
  codes.resize(static_cast<Eigen::Index>(row_end - row_begin), static_cast<Eigen::Index>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const auto s = batch.set(i);
    for (std::size_t r = row_begin; r < row_end; ++r) {
      std::uint64_t code = 0;
      for (std::size_t j = 0; j < power_; ++j) {
        const std::uint64_t salt = salts_[r * power_ + j];
        std::uint64_t lowest = std::numeric_limits<std::uint64_t>::max();  // the empty set's code
        for (const std::uint32_t e : s) lowest = std::min(lowest, mix64(salt ^ e));
        // Salting the id before the bijective mixer gives one pseudo-random order per (row, j).
        code = j == 0 ? lowest : combine_code(code, lowest);
      }
      codes(static_cast<Eigen::Index>(r - row_begin), static_cast<Eigen::Index>(i)) = code;
    }
  }
}

double MinHash::jaccard(std::span<const std::uint32_t> x, std::span<const std::uint32_t> q) {
  if (x.empty() && q.empty()) return 1.0;
  std::size_t common = 0, i = 0, j = 0;
  while (i < x.size() && j < q.size()) {
    if (x[i] < q[j]) ++i;
    else if (q[j] < x[i]) ++j;
    else { ++common; ++i; ++j; }
  }
  return static_cast<double>(common) / static_cast<double>(x.size() + q.size() - common);
}

double MinHash::kernel_sets(std::span<const std::uint32_t> x, std::span<const std::uint32_t> q) const {
  return std::pow(jaccard(x, q), static_cast<double>(power_));
}

nlohmann::json MinHash::params() const {
  return {{"kernel", "jaccard"}, {"rows", rows()}, {"power", power_}, {"seed", seed()}};
}

}  // namespace privrace
