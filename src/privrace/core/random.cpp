#include "privrace/core/random.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "privrace/core/error.hpp"

namespace privrace {

std::uint32_t RandomSource::next32() {
  if (half_ready_) {
    half_ready_ = false;
    return static_cast<std::uint32_t>(half_ >> 32);
  }
  half_ = next();
  half_ready_ = true;
  return static_cast<std::uint32_t>(half_);
}

bool RandomSource::bernoulli(std::uint64_t num, std::uint64_t den) {
  if (num >= den) return true;
  // U < p with U = 0.u1u2... uniform and p = num/den = 0.p1p2...: the first differing digit
  // decides; digits of p come from long division.
  unsigned __int128 rem = num;
  for (;;) {
    rem *= 2;
    const bool p_digit = rem >= den;
    if (p_digit) rem -= den;
    const bool u_digit = bit();
    if (u_digit != p_digit) return p_digit;  // u < p exactly when p has the 1 and u the 0
    if (rem == 0) return false;              // p's expansion ended: U >= p
  }
}

std::uint64_t RandomSource::below(std::uint64_t n) {
  if (n == 1) return 0;
  if (n <= (std::uint64_t{1} << 32)) {
    // Lemire's method on 32-bit draws.
    std::uint64_t m = static_cast<std::uint64_t>(next32()) * n;
    std::uint32_t low = static_cast<std::uint32_t>(m);
    if (low < n) {
      const std::uint32_t threshold = static_cast<std::uint32_t>((std::uint64_t{1} << 32) % n);
      while (low < threshold) {
        m = static_cast<std::uint64_t>(next32()) * n;
        low = static_cast<std::uint32_t>(m);
      }
    }
    return m >> 32;
  }
  // Lemire 2019, "Fast random integer generation in an interval": unbiased by rejection.
  unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
  std::uint64_t low = static_cast<std::uint64_t>(m);
  if (low < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(next()) * n;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

SeededRandom::SeededRandom(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

void SeededRandom::fill(std::uint64_t* out, std::size_t words) {
  // The state in locals: `out` may alias the members as far as the compiler knows, which made
  // every step store and reload all four words.
  auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  std::uint64_t s0 = s_[0], s1 = s_[1], s2 = s_[2], s3 = s_[3];
  for (std::size_t i = 0; i < words; ++i) {
    out[i] = rotl(s1 * 5, 7) * 9;
    const std::uint64_t t = s1 << 17;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 45);
  }
  s_[0] = s0;
  s_[1] = s1;
  s_[2] = s2;
  s_[3] = s3;
}

static void fill_os_random(void* out, std::size_t bytes) {
  auto* p = static_cast<unsigned char*>(out);
  while (bytes > 0) {
    const ssize_t got = getrandom(p, bytes, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("getrandom failed: ") + std::strerror(errno));
    }
    p += got;
    bytes -= static_cast<std::size_t>(got);
  }
}

void CryptoRandom::fill(std::uint64_t* out, std::size_t words) {
  while (words > 0) {
    if (request_pos_ == kRequestWords) {
      if (!request_) request_ = std::make_unique<std::uint64_t[]>(kRequestWords);
      // The calling thread's public DRBG (created, seeded from the OS and reseeded by OpenSSL).
      EVP_RAND_CTX* drbg = RAND_get0_public(nullptr);
      if (drbg == nullptr ||
          EVP_RAND_generate(drbg, reinterpret_cast<unsigned char*>(request_.get()), kRequestWords * sizeof(std::uint64_t),
                            0, 0, nullptr, 0) != 1) {
        char reason[256];
        ERR_error_string_n(ERR_get_error(), reason, sizeof(reason));
        throw Error(std::string("the CSPRNG (OpenSSL public DRBG) failed: ") + reason);
      }
      request_pos_ = 0;
    }
    const std::size_t k = std::min(words, kRequestWords - request_pos_);
    std::copy_n(request_.get() + request_pos_, k, out);
    request_pos_ += k;
    out += k;
    words -= k;
  }
}

std::uint64_t os_random_seed() {
  std::uint64_t s;
  fill_os_random(&s, sizeof(s));
  return s;
}

std::unique_ptr<RandomSource> make_noise_source(bool seeded, std::uint64_t seed) {
  if (seeded) return std::make_unique<SeededRandom>(seed);
  return std::make_unique<CryptoRandom>();
}

}  // namespace privrace
