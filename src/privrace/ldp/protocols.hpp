#pragma once
// Simulated non-interactive LDP protocols over n players (templates: the player's value
// function is inlined into the per-player loop).
//
// Reproducible, parallel and thread-invariant: player i's randomness is her own counter-based
// words (PlayerStream(seed, i), or derive_seed(seed, i) for the one-bit protocols, no
// generator set up per player); players are processed in fixed blocks by OpenMP threads, each
// thread sums integers (rounded lattice values, or bits) into its own counters, and the
// counters are merged by integer addition. The server's estimate is thus bit-identical for any
// thread count and schedule.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/ldp/randomizers.hpp"
#include "privrace/ldp/simulation.hpp"

namespace privrace::ldp {

// The server's view: per coordinate, the estimate of the players' mean value u in [0, 1].
struct VectorEstimate {
  std::vector<double> mean;
  std::vector<std::uint64_t> reports;  // how many reports each coordinate received
  std::uint64_t players = 0;
};

// The stream of laplace_average's summed noise: derive_seed(seed, this) is no player's key
// (players use derive_seed(seed, i) with i < n <= 2^63).
inline constexpr std::uint64_t kSummedNoiseStream = std::uint64_t{1} << 63 | 0x5a11ULL;

// Public coins of the Bassily-Smith transform: the coordinate player i is asked about.
inline std::size_t public_coordinate(std::uint64_t public_seed, std::uint64_t player, std::size_t d) {
  const std::uint64_t w = derive_seed(public_seed, player);
  return static_cast<std::size_t>((static_cast<unsigned __int128>(w) * d) >> 64);
}

// Algorithm 1 (d = 1) and Algorithm 2's collection (d = (k+1)^p): every player sends all d
// values through LaplaceRandomizer with eps / d each. fill(i, span<double> u) writes player
// i's d values in [0, 1]. The server only ever uses the sum of the reports, so the simulation
// draws what that sum is made of, each part with its exact law: every player's value rounded
// stochastically to the lattice (player i's counter-based words, lattice_laplace without
// noise), and, per coordinate, the sum of the n players' discrete Laplace noises at once
// (LaplaceRandomizer::noise_sum: a difference of two negative binomials) from a stream keyed by
// the seed alone. The sum has the distribution of the n reports' sum; no report is formed
// (docs/ldp-bernstein.md, "Simulation speed"). Each thread sums the integer rounded values of
// its fixed blocks, and integer sums do not depend on the order: thread-invariant.
// fill may instead return a pointer to player i's d values (a table's row: nothing copied), in
// which case u is left to it as scratch.
template <class Fill>
VectorEstimate laplace_average(std::uint64_t n, std::size_t d, double eps, std::uint64_t seed, Fill&& fill,
                               int threads = 0) {
  const LaplaceRandomizer rnd(eps, d);
  if (threads <= 0) threads = omp_get_max_threads();
  const double L = static_cast<double>(rnd.levels());
  std::vector<std::vector<std::int64_t>> partial(static_cast<std::size_t>(threads));
  constexpr std::uint64_t kBlock = 1024;
  const std::int64_t blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::int64_t>& sum = partial[static_cast<std::size_t>(omp_get_thread_num())];
    sum.assign(d, 0);
    std::vector<double> u(d), lattice(d), rounded(d), block_sum(d);
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::uint64_t end = std::min<std::uint64_t>(n, (static_cast<std::uint64_t>(b) + 1) * kBlock);
      std::fill(block_sum.begin(), block_sum.end(), 0.0);
      for (std::uint64_t i = static_cast<std::uint64_t>(b) * kBlock; i < end; ++i) {
        const double* values = u.data();
        if constexpr (std::is_same_v<std::invoke_result_t<Fill&, std::uint64_t, std::span<double>>, const double*>)
          values = fill(i, std::span<double>(u));
        else
          fill(i, std::span<double>(u));
#pragma omp simd
        for (std::size_t j = 0; j < d; ++j) lattice[j] = std::min(std::max(values[j], 0.0), 1.0) * L;  // lattice units
        lattice_laplace(lattice.data(), d, 0.0, PlayerStream(seed, i), 0, rounded.data());  // player i's rounding
#pragma omp simd
        for (std::size_t j = 0; j < d; ++j) block_sum[j] += rounded[j];  // integers below 2^27: exact
      }
      for (std::size_t j = 0; j < d; ++j) sum[j] += static_cast<std::int64_t>(block_sum[j]);
    }
  }
  std::vector<std::int64_t> total(d, 0);
  for (const auto& sum : partial)  // thread order (integer sums: any order gives the same)
    for (std::size_t j = 0; j < sum.size(); ++j) total[j] += sum[j];
  SeededRandom noise(derive_seed(seed, kSummedNoiseStream));  // coordinate order: thread-invariant
  for (std::size_t j = 0; j < d; ++j) total[j] += rnd.noise_sum(n, noise);
  VectorEstimate est;
  est.players = n;
  est.mean.resize(d);
  est.reports.assign(d, n);
  for (std::size_t j = 0; j < d; ++j)
    est.mean[j] = n ? rnd.decode(static_cast<double>(total[j]), static_cast<double>(n)) : 0.5;
  return est;
}

// LDP-AVG of Lemma 2 (Nissim & Stemmer's sampled-coordinate average) in its 1-bit,
// O(1)-work form (Bassily-Smith, Algorithm 3): player i is assigned coordinate
// j_i = public_coordinate(public_seed, i, d) by public coins, computes only u_i(j_i), and sends
// one BitRandomizer bit with the whole eps. The server debiases the fraction of ones among
// the players of each coordinate; a coordinate nobody drew gets 1/2 (no information).
// value(i, j) returns player i's value at coordinate j in [0, 1].
template <class Value>
VectorEstimate sampled_bit_average(std::uint64_t n, std::size_t d, double eps, std::uint64_t public_seed,
                                   std::uint64_t noise_seed, Value&& value, int threads = 0) {
  const BitRandomizer rnd(eps);
  if (threads <= 0) threads = omp_get_max_threads();
  std::vector<std::uint64_t> ones(d, 0), count(d, 0);
  constexpr std::uint64_t kBlock = 1u << 14;
  const std::int64_t blocks = static_cast<std::int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::uint64_t> my_ones(d, 0), my_count(d, 0);
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::uint64_t end = std::min<std::uint64_t>(n, (static_cast<std::uint64_t>(b) + 1) * kBlock);
      for (std::uint64_t i = static_cast<std::uint64_t>(b) * kBlock; i < end; ++i) {
        const std::size_t j = public_coordinate(public_seed, i, d);
        const bool bit = rnd.report(value(i, j), derive_seed(noise_seed, i));  // player i's one word
        my_ones[j] += bit;
        ++my_count[j];
      }
    }
#pragma omp critical(privrace_ldp_merge)
    for (std::size_t j = 0; j < d; ++j) {
      ones[j] += my_ones[j];
      count[j] += my_count[j];
    }
  }
  VectorEstimate est;
  est.players = n;
  est.mean.resize(d);
  est.reports = count;
  for (std::size_t j = 0; j < d; ++j)
    est.mean[j] = count[j] ? rnd.debias(static_cast<double>(ones[j]) / static_cast<double>(count[j])) : 0.5;
  return est;
}

}  // namespace privrace::ldp
