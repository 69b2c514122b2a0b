#include "privrace/core/vector_math.hpp"

#include <cmath>

#ifdef __AVX2__
#include <immintrin.h>
// glibc's libmvec: exp of four doubles, AVX2 calling convention (the "d" ISA, 4 lanes, vector
// argument), the function GCC calls for a vectorised exp (bits/math-vector.h).
extern "C" __m256d _ZGVdN4v_exp(__m256d);
extern "C" __m256d _ZGVdN4v_log1p(__m256d);
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

namespace {
#ifdef __AVX2__
// Four values: loss = max(u, 0) + log1p(e), sigmoid = (u >= 0 ? 1 : e) / (1 + e), e = exp(-|u|).
inline void softplus_sigmoid4(__m256d u, __m256d& loss, __m256d& sigmoid) {
  const __m256d sign = _mm256_set1_pd(-0.0), zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
  const __m256d e = _ZGVdN4v_exp(_mm256_or_pd(u, sign));  // -|u|
  const __m256d positive = _mm256_cmp_pd(u, zero, _CMP_GT_OQ);
  loss = _mm256_add_pd(_mm256_and_pd(positive, u), _ZGVdN4v_log1p(e));
  sigmoid = _mm256_div_pd(_mm256_blendv_pd(e, one, _mm256_cmp_pd(u, zero, _CMP_GE_OQ)), _mm256_add_pd(one, e));
}
#endif
}  // namespace

void softplus_sigmoid(const double* u, std::size_t n, double* loss, double* sigmoid) {
#ifdef __AVX2__
  std::size_t i = 0;
  __m256d l, s;
  for (; i + 4 <= n; i += 4) {
    softplus_sigmoid4(_mm256_loadu_pd(u + i), l, s);
    _mm256_storeu_pd(loss + i, l);
    if (sigmoid) _mm256_storeu_pd(sigmoid + i, s);
  }
  if (i < n) {  // the last one to three values, padded with zeros
    alignas(32) double tail[4] = {0, 0, 0, 0}, tl[4], ts[4];
    for (std::size_t j = i; j < n; ++j) tail[j - i] = u[j];
    softplus_sigmoid4(_mm256_load_pd(tail), l, s);
    _mm256_store_pd(tl, l);
    _mm256_store_pd(ts, s);
    for (std::size_t j = i; j < n; ++j) {
      loss[j] = tl[j - i];
      if (sigmoid) sigmoid[j] = ts[j - i];
    }
  }
#else
  for (std::size_t i = 0; i < n; ++i) {
    const double e = std::exp(-std::fabs(u[i]));
    loss[i] = (u[i] > 0 ? u[i] : 0.0) + std::log1p(e);
    if (sigmoid) sigmoid[i] = (u[i] >= 0 ? 1.0 : e) / (1.0 + e);
  }
#endif
}

}  // namespace privrace
