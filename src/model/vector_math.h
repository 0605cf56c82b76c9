// Element-wise loops over float rows for the CPU attention kernels, written
// so that the compiler vectorises them (vector_math.cpp is compiled with the
// full vectoriser and cloned for AVX-512 / AVX2 / the baseline).
#pragma once

#include <cstdint>

// Each function is compiled three times and the CPU picks one at load time.
// The attribute is on every declaration: Clang multiversions a function only
// then (with it on the definition alone, Clang 14 compiled just the AVX-512
// body under the plain name, which a CPU without AVX-512 cannot run, and its
// exp_shifted took 3x the share of a training step GCC's clones take); GCC
// accepts either.
#define EGM_CPU_CLONES __attribute__((target_clones("arch=skylake-avx512", "avx2", "default")))

namespace egm {

// G[j] = sigmoid(a d[j] + c) for j < n; a gate shut by a very negative logit is exactly 0.
EGM_CPU_CLONES void affine_sigmoid(float a, float c, const float* d, int64_t n, float* G);

// out[j] = exp(x[j] - shift) for j < n, for x[j] <= shift (a row minus its maximum or its
// log-sum-exp); 0 where x[j] - shift < -87 (and for -inf). In place is allowed.
EGM_CPU_CLONES void exp_shifted(const float* x, float shift, int64_t n, float* out);

// max_j x[j] (-inf for n = 0), sum_j x[j], sum_j x[j] y[j].
EGM_CPU_CLONES float max_of(const float* x, int64_t n);
EGM_CPU_CLONES float sum_of(const float* x, int64_t n);
EGM_CPU_CLONES float dot_of(const float* x, const float* y, int64_t n);

}  // namespace egm
