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
};

}  // namespace privrace
