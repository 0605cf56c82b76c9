// Element-wise loops over float rows for the CPU attention kernels, written
// so that GCC and Clang vectorise them, in place too (vector_math.cpp is compiled
// with the full vectoriser and cloned for AVX-512 / AVX2 / the baseline).
#pragma once

#include <cstdint>

namespace egm {

// G[j] = sigmoid(a d[j] + c) for j < n; a gate shut by a very negative logit is exactly 0.
void affine_sigmoid(float a, float c, const float* d, int64_t n, float* G);

// out[j] = exp(x[j] - shift) for j < n, for x[j] <= shift (a row minus its maximum or its
// log-sum-exp); 0 where x[j] - shift < -87 (and for -inf). In place is allowed.
void exp_shifted(const float* x, float shift, int64_t n, float* out);

// max_j x[j] (-inf for n = 0), sum_j x[j], sum_j x[j] y[j].
float max_of(const float* x, int64_t n);
float sum_of(const float* x, int64_t n);
float dot_of(const float* x, const float* y, int64_t n);

}  // namespace egm
