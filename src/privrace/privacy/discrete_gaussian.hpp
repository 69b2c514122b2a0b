#pragma once
// The discrete Gaussian mechanism and the zCDP budget conversions (MST, AIM and their audit
// path). Derivations: docs/privacy-baselines.md, "MST and AIM".
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "privrace/core/random.hpp"
#include "privrace/privacy/exact_geometric.hpp"

namespace privrace {

// rho with rho + 2 sqrt(rho log(1/delta)) = epsilon (the zCDP -> (epsilon, delta) conversion of
// Bun & Steinke 2016, Proposition 1.3, solved for rho): (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2.
double zcdp_rho(double epsilon, double delta);
// epsilon = rho + 2 sqrt(rho log(1/delta)).
double zcdp_epsilon(double rho, double delta);

// The discrete Gaussian N_Z(0, sigma^2) (Canonne, Kamath & Steinke 2020, Algorithm 3), exact:
// sigma^2 is rounded UP to a rational p / q (never less noise) and every step draws uniform
// integers and Bernoulli(exp(-a/b)) variates. It is (1 / (2 sigma^2))-zCDP for an integer
// query of L2 sensitivity 1, as the continuous Gaussian (CKS 2020, Theorem 4). The acceptance
// test runs in 128-bit integers; proposals beyond about 10^4 sigma (acceptance probability below
// exp(-2^28)) are rejected outright. UsageError for a sigma outside (0, 10^7] (beyond, those
// integers would overflow).
class DiscreteGaussianTable;

class DiscreteGaussian {
 public:
  explicit DiscreteGaussian(double sigma);
  // The rejection construction above: no set-up cost, about 250 ns a draw (bench_engine).
  std::int64_t sample(RandomSource& rng) const;
  double sigma2() const { return static_cast<double>(p_) / static_cast<double>(q_); }  // used
  double pmf(std::int64_t y) const;  // exp(-y^2 / (2 sigma2)) / sum_z exp(-z^2 / (2 sigma2)), in doubles

  // Sigmas up to this have a table sampler (DiscreteGaussianTable: about 8 sigma entries).
  static constexpr double kMaxTableSigma = 32768.0;
  // The table-inversion sampler of |Y| for add_to: the same distribution, milliseconds to set
  // up (one shared instance per sigma), a few nanoseconds a draw. nullptr above kMaxTableSigma.
  std::shared_ptr<const DiscreteGaussianTable> bulk_sampler() const;
  // counts[i] += a fresh draw, for every i: by table inversion when `table` is given (one
  // 32-bit read of a CSPRNG word and a sign bit per draw), else by sample().
  void add_to(std::span<std::int64_t> counts, RandomSource& rng, const DiscreteGaussianTable* table) const;
  // The same over blocks of kNoiseBlock counts on every OpenMP thread. Seeded (seed given):
  // block b draws from SeededRandom(derive_seed(*seed, b)), so the output depends on the seed
  // alone, never on the thread count; otherwise every thread draws from its own CryptoRandom.
  static constexpr std::size_t kNoiseBlock = std::size_t{1} << 16;
  void add_to_blocks(std::span<std::int64_t> counts, const DiscreteGaussianTable* table,
                     std::optional<std::uint64_t> seed) const;

 private:
  friend class DiscreteGaussianTable;
  std::uint64_t p_, q_, t_;
};

// Exact inversion of the magnitude M = |Y| of Y ~ N_Z(0, p / q): P(M = 0) = 1 / Z and
// P(M = k) = 2 exp(-k^2 q / (2 p)) / Z for k >= 1, by one table of its CDF C(0) = 0, C(1), ...,
// C(N) held to 128 bits (MPFR, checked to be at least 2^-64 from a rounding boundary), N
// about 8 sigma, read 32 bits first as the discrete Laplace's compact levels
// (exact_geometric.hpp; the argument in docs/privacy.md). A uniform at or above C(N)
// (probability below e^-32) draws k >= N exactly by rejection from a geometric proposal.
// add_to gives the magnitude a fair sign (-0 = 0): no draw is rejected.
class DiscreteGaussianTable {
 public:
  explicit DiscreteGaussianTable(const DiscreteGaussian& noise);
  static std::shared_ptr<const DiscreteGaussianTable> shared(const DiscreteGaussian& noise);
  const ExactGeometric::CompactLevel& level() const { return level_; }
  std::uint32_t size() const { return level_.exact.size; }  // N
  // A tie of U's first 32 bits v32 with an entry (or a scanned bucket's word equal to one).
  std::uint32_t resolve(std::uint32_t v32, RandomSource& rng) const;
  // k >= N with probability proportional to H(k), exactly (Bernoulli(exp) steps from rng).
  std::uint64_t sample_tail(RandomSource& rng) const;
  // C(r)'s words 2 .. 15 (bits 128 .. 1023), computed on demand with MPFR.
  std::vector<std::uint64_t> precise_words(std::uint32_t r) const;

 private:
  std::uint64_t p_, q_;
  ExactGeometric::CompactLevel level_;
};

}  // namespace privrace
