#pragma once
// Random bit sources. Release noise comes from a CSPRNG (OpenSSL's DRBG, seeded from the
// OS); a seeded generator exists only for reproducible experiments and its output is marked
// as such. Words are buffered in the base class so the samplers' hot loops draw them without
// a virtual call.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace privrace {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  std::uint64_t next() {
    if (pos_ == kBufferWords) refill_buffer();
    return buffer_[pos_++];
  }
  virtual bool cryptographic() const = 0;

  // Uniform integer in [0, n), exact (Lemire's multiply-and-reject; no modulo bias). n > 0.
  // n <= 2^32 consumes 32-bit halves: the noise samplers are bound by CSPRNG throughput.
  std::uint64_t below(std::uint64_t n);
  // The next n words of the stream, copied out in bulk (for samplers that keep their own batch).
  void take(std::uint64_t* out, std::size_t n) {
    while (n > 0) {
      if (pos_ == kBufferWords) refill_buffer();
      const std::size_t k = std::min(n, kBufferWords - pos_);
      std::copy_n(buffer_.data() + pos_, k, out);
      pos_ += k;
      out += k;
      n -= k;
    }
  }
  std::uint32_t next32();
  bool bit() {
    if (bits_left_ == 0) {
      bits_ = next();
      bits_left_ = 64;
    }
    const bool b = bits_ & 1;
    bits_ >>= 1;
    --bits_left_;
    return b;
  }
  // Bernoulli(num / den) exactly, for num <= den, den > 0: compares a lazily drawn uniform
  // binary fraction with the expansion of num / den, two random bits on average.
  bool bernoulli(std::uint64_t num, std::uint64_t den);
  // Uniform double in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform double in (0, 1), never 0: for logarithms.
  double open_unit() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

 protected:
  static constexpr std::size_t kBufferWords = 512;  // 4 KiB: one CSPRNG call per 512 words
  // Fills `out` with the next uniform 64-bit words of the stream, in order.
  virtual void fill(std::uint64_t* out, std::size_t words) = 0;

 private:
  void refill_buffer() {
    fill(buffer_.data(), kBufferWords);
    pos_ = 0;
  }
  std::array<std::uint64_t, kBufferWords> buffer_;
  std::size_t pos_ = kBufferWords;
  std::uint64_t bits_ = 0, half_ = 0;
  int bits_left_ = 0;
  bool half_ready_ = false;
};

// xoshiro256** seeded through splitmix64: fast, reproducible, NOT for releases.
class SeededRandom final : public RandomSource {
 public:
  explicit SeededRandom(std::uint64_t seed);
  bool cryptographic() const override { return false; }

 protected:
  void fill(std::uint64_t* out, std::size_t words) override;

 private:
  std::uint64_t s_[4];
};

// Release randomness: OpenSSL's public DRBG (NIST SP 800-90A CTR_DRBG with AES-256, one
// instance per thread, seeded and periodically reseeded from getrandom). The kernel's
// getrandom alone delivers about 0.3 GB/s here, the DRBG about 6 GB/s: the noise for a
// 2000 x 100,000 sketch needs over a gigabyte of random bits.
//
// Words are requested from the calling thread's public DRBG (RAND_get0_public) directly, 64 KiB
// at a time. RAND_bytes would reach the same DRBG, but OpenSSL 3.0 first looks up the
// RAND_METHOD under a process-wide write lock on every call: with 4 KiB requests from every
// thread that lock is taken hundreds of thousands of times while a large sketch is noised.
// Same generator, same seeding and reseeding; only the lookup is skipped (this program never
// installs another RAND method or engine).
class CryptoRandom final : public RandomSource {
 public:
  bool cryptographic() const override { return true; }
  static const char* name() { return "openssl_ctr_drbg"; }

 protected:
  void fill(std::uint64_t* out, std::size_t words) override;

 private:
  static constexpr std::size_t kRequestWords = 8192;  // 64 KiB: CTR_DRBG's largest single request
  std::unique_ptr<std::uint64_t[]> request_;
  std::size_t request_pos_ = kRequestWords;
};

// splitmix64 step: derives independent seeds for sub-streams (per LSH row, per thread).
std::uint64_t splitmix64(std::uint64_t& state);
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t s = seed ^ (0x9E3779B97F4A7C15ULL * (stream + 1));
  splitmix64(s);
  return splitmix64(s);
}

// A 64-bit seed from the OS (getrandom; for LSH seeds when the user gives none).
std::uint64_t os_random_seed();

// Either a seeded source (seed given) or the CSPRNG.
std::unique_ptr<RandomSource> make_noise_source(bool seeded, std::uint64_t seed);

}  // namespace privrace
