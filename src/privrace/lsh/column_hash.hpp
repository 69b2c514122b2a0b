#pragma once
// Codes -> columns of a RACE row. A seeded strongly universal hash of the 64-bit code
// (vector multiply-shift over its two 32-bit halves, Thorup 2015, "High speed hashing for
// integers and strings", Sec. 3.5) into 32 bits, then Lemire's multiply-shift range
// reduction to [0, W). Unequal codes collide with probability 1/W up to W/2^32.
// Never `code % W`: codes are signed bucket indices and % on them is not uniform.
#include <cstdint>

namespace privrace {

struct ColumnHash {
  std::uint64_t a0 = 1, a1 = 1, b = 0;
  std::uint64_t width = 1;

  std::uint32_t operator()(std::uint64_t code) const {
    const std::uint64_t h =
        (a0 * (code & 0xFFFFFFFFULL) + a1 * (code >> 32) + b) >> 32;  // strongly universal, 32 bits
    return static_cast<std::uint32_t>((h * width) >> 32);
  }
  // operator() of a signed 32-bit bucket index's code (the index sign-extended to 64 bits),
  // the same value in arithmetic that vectorises on 32-bit lanes (PStableL2::dense_columns):
  // the code's low half is u = (uint32) index and its high half 0 or 2^32 - 1, so a1 * high is
  // 0 or a1 (2^32 - 1); and bits 32..63 of a0 u + rest are those of (a0_lo u + rest) >> 32 plus
  // a0_hi u, mod 2^32 (a0 = a0_hi 2^32 + a0_lo; the a0_hi u 2^32 term touches bits 32 and up only).
  std::uint32_t of_index(std::int32_t index) const {
    const auto low = static_cast<std::uint32_t>(index);
    const auto sign = static_cast<std::uint64_t>(static_cast<std::int64_t>(index >> 31));  // 0 or all ones
    const std::uint64_t x = (a0 & 0xFFFFFFFFULL) * low + b + (sign & (a1 * 0xFFFFFFFFULL));
    const std::uint32_t h = static_cast<std::uint32_t>(x >> 32) + static_cast<std::uint32_t>(a0 >> 32) * low;
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(h) * width) >> 32);
  }
};

}  // namespace privrace
