#pragma once
// Random bit sources. Release noise comes from the OS CSPRNG (getrandom); a seeded
// generator exists only for reproducible experiments and its output is marked as such.
#include <cstdint>
#include <memory>
#include <string>

namespace privrace {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual std::uint64_t next() = 0;
  virtual bool cryptographic() const = 0;

  // Uniform integer in [0, n), exact (Lemire's multiply-and-reject; no modulo bias). n > 0.
  // n <= 2^32 consumes 32-bit halves: the noise samplers are bound by CSPRNG throughput.
  std::uint64_t below(std::uint64_t n);
  std::uint32_t next32();
  bool bit();
  // Bernoulli(num / den) exactly, for num <= den, den > 0: compares a lazily drawn uniform
  // binary fraction with the expansion of num / den, two random bits on average.
  bool bernoulli(std::uint64_t num, std::uint64_t den);
  // Uniform double in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform double in (0, 1), never 0: for logarithms.
  double open_unit() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

 private:
  std::uint64_t bits_ = 0, half_ = 0;
  int bits_left_ = 0;
  bool half_ready_ = false;
};

// xoshiro256** seeded through splitmix64: fast, reproducible, NOT for releases.
class SeededRandom final : public RandomSource {
 public:
  explicit SeededRandom(std::uint64_t seed);
  std::uint64_t next() override;
  bool cryptographic() const override { return false; }

 private:
  std::uint64_t s_[4];
};

// Linux getrandom(2), buffered. Blocks only until the kernel pool is initialised.
class OsRandom final : public RandomSource {
 public:
  OsRandom();
  std::uint64_t next() override;
  bool cryptographic() const override { return true; }

 private:
  static constexpr int kWords = 2048;  // 16 KiB per getrandom call: the syscall is amortised
  std::uint64_t buf_[kWords];
  int pos_ = kWords;
};

// splitmix64 step: derives independent seeds for sub-streams (per LSH row, per thread).
std::uint64_t splitmix64(std::uint64_t& state);
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t s = seed ^ (0x9E3779B97F4A7C15ULL * (stream + 1));
  splitmix64(s);
  return splitmix64(s);
}

// A 64-bit seed from the OS CSPRNG (for LSH seeds when the user gives none).
std::uint64_t os_random_seed();

// Either a seeded source (seed given) or the OS CSPRNG.
std::unique_ptr<RandomSource> make_noise_source(bool seeded, std::uint64_t seed);

}  // namespace privrace
