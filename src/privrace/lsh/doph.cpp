// Densified one-permutation MinHash with a per-row bin order; see families.hpp for why the
// collision probability is exactly J and why both computation paths give identical codes.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "privrace/core/cpu_dispatch.hpp"
#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/lsh/families.hpp"

namespace privrace {

namespace {

// Cost model of the two paths, fitted to bench/bench_minhash.cpp BM_DophPath (this 2-core AMD
// EPYC, AVX-512 machine, Release, R = 2000), in units of one small-path (bin, row) pair
// (~0.19 ns with the AVX-512 clone):
//   small = |S| x rows
//   large = 10 |S| (hash + bin) + empty rows x (50 (row setup, mispredicted exit) + 9 x probes),
//   probes per empty row = 2^k / occupied bins, occupied ~ R (1 - e^{-|S|/R}).
// Measured at R = 2000 (CPU time per set, small vs large): |S| = 12: 5.5 vs 594 us; 96: 39 vs
// 99 us; 128: 52 vs 85 us; 192: 78 vs 61 us; 256: 104 vs 52 us. Crossover: |S| ~ 160 for R = 2000.
constexpr double kPairCost = 1.0, kHashCost = 10.0, kEmptyRowCost = 50.0, kProbeCost = 9.0;

std::uint32_t inverse_odd(std::uint32_t a) {  // a^-1 mod 2^32 by Newton's iteration (a odd)
  std::uint32_t x = a;
  for (int i = 0; i < 5; ++i) x *= 2u - a * x;
  return x;
}

constexpr std::uint64_t kEmptyCode = std::numeric_limits<std::uint64_t>::max();  // as classic MinHash

// Bin of an element hash: Lemire's reduction of its top 32 bits to [0, R).
inline std::uint32_t bin_of(std::uint64_t h, std::uint64_t rows) {
  return static_cast<std::uint32_t>(((h >> 32) * rows) >> 32);
}

// The small path's hot loop: rank G_r(b) of every occupied bin b in every row r's order, the
// least (rank, bin index) kept per row. Rows inner with structure-of-arrays parameters, so it
// vectorises; compiled twice (AVX-512: 16 lanes, measured 1.25-1.35x over AVX2 here) and picked
// at load time by the CPU (src/privrace/core/cpu_dispatch.hpp).
PRIVRACE_CLONES("avx512f", "default") void rank_minimum(
    const std::uint32_t* bins, std::size_t m, unsigned ibits, const std::uint32_t* __restrict c, const std::uint32_t* __restrict m1,
    const std::uint32_t* __restrict m2, const std::uint32_t* __restrict m3, std::uint32_t* __restrict best, std::size_t n,
    std::uint32_t mask, unsigned sh) {
  constexpr std::size_t kBlock = 512;  // parameters of a block of rows stay in L1
  for (std::size_t rb = 0; rb < n; rb += kBlock) {
    const std::size_t re = std::min(n, rb + kBlock);
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint32_t b = bins[i], idx = static_cast<std::uint32_t>(i);
      for (std::size_t r = rb; r < re; ++r) {
        std::uint32_t x = ((b ^ c[r]) * m1[r]) & mask;
        x ^= x >> sh;
        x = (x * m2[r]) & mask;
        x ^= x >> sh;
        x = (x * m3[r]) & mask;
        x ^= x >> sh;
        best[r] = std::min(best[r], (x << ibits) | idx);
      }
    }
  }
}

}  // namespace

DensifiedMinHash::DensifiedMinHash(std::size_t rows, std::size_t power, std::uint64_t seed)
    : LshFamily(rows, seed), power_(power) {
  if (rows > (std::size_t{1} << 32) - 1) throw UsageError("the densified MinHash needs R < 2^32");
  bits_ = std::max(1u, static_cast<unsigned>(std::bit_width(rows - 1)));  // 2^k >= R
  shift_ = (bits_ + 1) / 2;
  mask_ = bits_ >= 32 ? 0xFFFFFFFFu : ((1u << bits_) - 1u);
  std::uint64_t state = derive_seed(seed, 7);
  inst_.resize(power);
  for (auto& in : inst_) {
    in.salt = splitmix64(state);
    for (auto* v : {&in.c, &in.m1, &in.m2, &in.m3, &in.m1i, &in.m2i, &in.m3i}) v->resize(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint64_t a = splitmix64(state), b = splitmix64(state);
      in.c[r] = static_cast<std::uint32_t>(a) & mask_;
      in.m1[r] = static_cast<std::uint32_t>(a >> 32) | 1u;
      in.m2[r] = static_cast<std::uint32_t>(b) | 1u;
      in.m3[r] = static_cast<std::uint32_t>(b >> 32) | 1u;
      in.m1i[r] = inverse_odd(in.m1[r]);
      in.m2i[r] = inverse_odd(in.m2[r]);
      in.m3i[r] = inverse_odd(in.m3[r]);
    }
  }
}

DensifiedMinHash::Path DensifiedMinHash::choose(std::size_t set_size, std::size_t rows_in_range) const {
  // Keys of the small path pack (rank, bin index) into 32 bits.
  const auto s = static_cast<double>(set_size);
  if (bits_ + static_cast<unsigned>(std::bit_width(set_size)) > 32) return Path::Large;
  const double R = static_cast<double>(rows()), n = static_cast<double>(rows_in_range);
  const double occupied = std::max(1.0, R * -std::expm1(-s / R));
  const double empty = n * std::exp(-s / R);
  const double small = kPairCost * s * n;
  const double large = kHashCost * s + empty * (kEmptyRowCost + kProbeCost * static_cast<double>(mask_ + 1.0) / occupied);
  return small <= large ? Path::Small : Path::Large;
}

void DensifiedMinHash::instance_codes(const Instance& in, std::span<const std::uint32_t> set, std::uint64_t* out,
                                      std::size_t r0, std::size_t r1, Path path) const {
  const std::size_t R = rows();
  if (set.empty()) {
    std::fill(out, out + (r1 - r0), kEmptyCode);
    return;
  }
  const std::uint32_t mask = mask_;
  const unsigned sh = shift_;
  if (path == Path::Small) {
    // Occupied bins with their minimum values, sorted by bin.
    thread_local std::vector<std::uint64_t> pairs;  // minimum value of each occupied bin
    thread_local std::vector<std::uint32_t> bins;
    thread_local std::vector<std::uint64_t> vals;
    thread_local std::vector<std::uint32_t> best;
    pairs.resize(set.size());
    vals.resize(set.size());
    for (std::size_t i = 0; i < set.size(); ++i) vals[i] = mix64(in.salt ^ set[i]);
    // Sort element indices by bin (insertion sort: the small path only sees small sets).
    bins.resize(set.size());
    std::size_t m = 0;
    for (std::size_t i = 0; i < set.size(); ++i) {
      const std::uint32_t b = bin_of(vals[i], R);
      const std::uint64_t v = vals[i];
      std::size_t j = m;
      while (j > 0 && bins[j - 1] > b) --j;
      if (j > 0 && bins[j - 1] == b) {  // two elements share a bin: keep the smaller value
        pairs[j - 1] = std::min(pairs[j - 1], v);
        continue;
      }
      for (std::size_t t = m; t > j; --t) {
        bins[t] = bins[t - 1];
        pairs[t] = pairs[t - 1];
      }
      bins[j] = b;
      pairs[j] = v;
      ++m;
    }
    const unsigned ibits = static_cast<unsigned>(std::bit_width((m - 1) | 1));
    const std::size_t n = r1 - r0;
    best.assign(n, 0xFFFFFFFFu);
    rank_minimum(bins.data(), m, ibits, in.c.data() + r0, in.m1.data() + r0, in.m2.data() + r0, in.m3.data() + r0, best.data(), n,
                 mask, sh);
    const std::uint32_t imask = (1u << ibits) - 1u;
    for (std::size_t r = 0; r < n; ++r) out[r] = pairs[best[r] & imask];
    // A row whose own bin is occupied keeps its own minimum.
    for (std::size_t i = 0; i < m; ++i)
      if (bins[i] >= r0 && bins[i] < r1) out[bins[i] - r0] = pairs[i];
    return;
  }
  // Large path: fill the bins, then probe each empty row's order until an occupied bin.
  thread_local std::vector<std::uint64_t> binval, occupied;
  binval.resize(R);
  occupied.assign((R + 63) / 64, 0);
  for (const std::uint32_t e : set) {
    const std::uint64_t h = mix64(in.salt ^ e);
    const std::uint32_t b = bin_of(h, R);
    const std::uint64_t bit = std::uint64_t{1} << (b & 63);
    if (occupied[b >> 6] & bit) binval[b] = std::min(binval[b], h);
    else {
      occupied[b >> 6] |= bit;
      binval[b] = h;
    }
  }
  auto is_occupied = [&](std::uint32_t b) { return (occupied[b >> 6] >> (b & 63)) & 1u; };
  for (std::size_t r = r0; r < r1; ++r) {
    const auto rr = static_cast<std::uint32_t>(r);
    if (is_occupied(rr)) {
      out[r - r0] = binval[r];
      continue;
    }
    const std::uint32_t c = in.c[r], i1 = in.m1i[r], i2 = in.m2i[r], i3 = in.m3i[r];
    for (std::uint32_t t = 0;; ++t) {  // G_r^{-1}(t): the bin of rank t (terminates: some bin is occupied)
      std::uint32_t x = t;
      x ^= x >> sh;
      x = (x * i3) & mask;
      x ^= x >> sh;
      x = (x * i2) & mask;
      x ^= x >> sh;
      x = ((x * i1) & mask) ^ c;
      if (x < R && is_occupied(x)) {
        out[r - r0] = binval[x];
        break;
      }
    }
  }
}

void DensifiedMinHash::hash_one(std::span<const std::uint32_t> set, std::uint64_t* out, std::size_t r0,
                                std::size_t r1, Path path) const {
  if (path == Path::Auto) path = choose(set.size(), r1 - r0);
  if (path == Path::Small && bits_ + static_cast<unsigned>(std::bit_width(set.size())) > 32) path = Path::Large;
  instance_codes(inst_[0], set, out, r0, r1, path);
  if (power_ == 1) return;
  thread_local std::vector<std::uint64_t> sub;
  sub.resize(r1 - r0);
  for (std::size_t j = 1; j < power_; ++j) {
    instance_codes(inst_[j], set, sub.data(), r0, r1, path);
    for (std::size_t r = 0; r < r1 - r0; ++r) out[r] = combine_code(out[r], sub[r]);
  }
}

void DensifiedMinHash::hash_sets(const SetBatch& batch, CodeMatrix& codes, std::size_t row_begin,
                                 std::size_t row_end) const {
  const std::size_t n = batch.size(), nr = row_end - row_begin;
  codes.resize(static_cast<Eigen::Index>(nr), static_cast<Eigen::Index>(n));
  thread_local std::vector<std::uint64_t> col;
  col.resize(nr);
  for (std::size_t i = 0; i < n; ++i) {
    hash_one(batch.set(i), col.data(), row_begin, row_end);
    for (std::size_t r = 0; r < nr; ++r) codes(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(i)) = col[r];
  }
}

double DensifiedMinHash::kernel_sets(std::span<const std::uint32_t> x, std::span<const std::uint32_t> q) const {
  return std::pow(MinHash::jaccard(x, q), static_cast<double>(power_));
}

nlohmann::json DensifiedMinHash::params() const {
  return {{"kernel", "jaccard"}, {"scheme", "doph"}, {"rows", rows()}, {"power", power_}, {"seed", seed()}};
}

}  // namespace privrace
