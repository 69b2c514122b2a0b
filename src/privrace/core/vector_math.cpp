#include "privrace/core/vector_math.hpp"

#include <cmath>

#ifdef __AVX2__
#include <immintrin.h>
// glibc's libmvec: exp of four doubles, AVX2 calling convention (the "d" ISA, 4 lanes, vector
// argument), the function GCC calls for a vectorised exp (bits/math-vector.h).
extern "C" __m256d _ZGVdN4v_exp(__m256d);
#endif

namespace privrace {

void exp_shifted(double* x, std::size_t n, double shift) {
#ifdef __AVX2__
  const __m256d s = _mm256_set1_pd(shift);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, _ZGVdN4v_exp(_mm256_sub_pd(_mm256_loadu_pd(x + i), s)));
  if (i < n) {  // the last one to three values, padded with the shift (exp(0) = 1, discarded)
    alignas(32) double tail[4] = {shift, shift, shift, shift};
    for (std::size_t j = i; j < n; ++j) tail[j - i] = x[j];
    _mm256_store_pd(tail, _ZGVdN4v_exp(_mm256_sub_pd(_mm256_load_pd(tail), s)));
    for (std::size_t j = i; j < n; ++j) x[j] = tail[j - i];
  }
#else
  for (std::size_t i = 0; i < n; ++i) x[i] = std::exp(x[i] - shift);
#endif
}

bool exp_shifted_is_vectorised() {
#ifdef __AVX2__
  return true;
#else
  return false;
#endif
}

}  // namespace privrace
