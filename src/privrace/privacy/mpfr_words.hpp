// Internal to the engine's exact samplers (exact_geometric.cpp, discrete_gaussian.cpp): an MPFR
// variable that frees itself, and the extraction of a CDF value's 64-bit words with the check
// that the computation's error cannot have changed one. Needs MPFR's headers (the engine's
// private include path); no public header includes it.
#pragma once

#include <gmp.h>
#include <mpfr.h>

#include <cstdint>
#include <string>

#include "privrace/core/error.hpp"

namespace privrace::mpfr_words {

// The samplers' working precisions. A table entry needs 2^-192 (three words); 384 bits keep its
// error below 2^-300. A tie is decided on bits 128 .. 1023 (kPreciseWords words after the first
// two), computed at 1152 bits so that their error is far below 2^-1024.
constexpr mpfr_prec_t kTablePrecision = 384;
constexpr mpfr_prec_t kPrecisePrecision = 1152;
constexpr int kPreciseWords = 14;

class Mpfr {
 public:
  explicit Mpfr(mpfr_prec_t precision) { mpfr_init2(v_, precision); }
  ~Mpfr() { mpfr_clear(v_); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
  mpfr_ptr get() { return v_; }

 private:
  mpfr_t v_;
};

// Takes the next 64 bits of the fraction in x (in [0, 1)): returns floor(x 2^64), leaves
// x = frac(x 2^64). Both steps are exact at the variable's precision.
inline std::uint64_t next_word(mpfr_ptr x) {
  mpfr_mul_2ui(x, x, 64, MPFR_RNDN);
  const std::uint64_t word = mpfr_get_uj(x, MPFR_RNDZ);
  mpfr_frac(x, x, MPFR_RNDN);
  return word;
}

// The remainder after the last extracted word must be at least 2^-64 from 0 and 1, so the
// computation error (far below 2^-64 in these units) cannot have changed any extracted bit.
// `sampler` and `what` name the table and the value in the error.
inline void check_margin(mpfr_ptr remainder, const char* sampler, const char* what) {
  Mpfr complement(mpfr_get_prec(remainder));
  mpfr_ui_sub(complement.get(), 1, remainder, MPFR_RNDN);  // exact: remainder has bits below 2^-1 only
  if (mpfr_cmp_ui_2exp(remainder, 1, -64) <= 0 || mpfr_cmp_ui_2exp(complement.get(), 1, -64) <= 0)
    throw Error(std::string(sampler) + ": " + what +
                " lies too close to a rounding boundary to be tabulated (probability 2^-63)");
}

}  // namespace privrace::mpfr_words
