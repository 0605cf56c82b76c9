// The kernels' row loops (exp, the affine sigmoid, max, sum, dot), each cloned
// for AVX-512, AVX2 and the baseline and picked once for this CPU.
#include "model/kernels/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace egm {
namespace {

// exp(t) for t in [-87, 0] as 2^k exp(r): k = round(t / ln 2), r = t - k ln 2 in
// [-ln2/2, ln2/2], exp(r) by Cephes' expf polynomial (a few ulp). Written out (std::exp
// does not vectorise without -ffast-math) and inlined into the cloned loops below.
inline float exp_nonpositive(float t) {
  const int k = static_cast<int>(t * 1.44269504f - 0.5f);  // t <= 0: truncation rounds to nearest
  const float kf = static_cast<float>(k);
  const float r = t - kf * 0.693359375f + kf * 2.12194440e-4f;  // ln 2 split in two for precision
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (k + 127) << 23;  // 2^k, k in [-126, 0]
  float two_k;
  std::memcpy(&two_k, &bits, sizeof two_k);
  return p * two_k;
}

constexpr int kLanes = 16;  // independent accumulators: the reductions vectorise without reassociation

}  // namespace

// The cloned loops live in this unit only, each defined once with its attribute and called
// from a plain exported function: GCC and Clang both build the three clones and an ifunc
// resolver from that. (With the attribute on the header's declarations instead, every calling
// unit emits its own resolver: GCC then fails to link and Clang's callers got garbage; with it
// on exported definitions only, Clang 14 built just the AVX-512 body.)
namespace {

// As e / (1 + e) or 1 / (1 + e) with e = exp(-|x|), so neither side overflows.
__attribute__((target_clones("avx512f", "avx2", "default")))
void affine_sigmoid_impl(float a, float c, const float* d, int64_t n, float* G) {
  for (int64_t j = 0; j < n; ++j) {
    const float x = a * d[j] + c;
    const float t = std::max(-std::fabs(x), -87.0f);
    // Selects written as products with 0/1: GCC 12 leaves `? :` on floats here as branches.
    const float e = exp_nonpositive(t) * static_cast<float>(std::fabs(x) <= 87.0f);
    const float positive = static_cast<float>(x >= 0.0f);
    G[j] = (positive + (1.0f - positive) * e) / (1.0f + e);
  }
}

inline float exp_shifted_one(float x, float shift) {
  const float t = x - shift;
  return exp_nonpositive(std::max(t, -87.0f)) * static_cast<float>(t >= -87.0f);
}

// The kernels call this in place (out == x). Clang's plain loop then fails its run-time overlap
// check and runs scalar (0.5 s against 0.07 s for 400,000 rows of 256); each element is read
// before its own store only, so telling it the iterations are independent is true. GCC's check
// accepts out == x (and a blocked form costs GCC 50%).
__attribute__((target_clones("avx512f", "avx2", "default")))
void exp_shifted_impl(const float* x, float shift, int64_t n, float* out) {
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#endif
  for (int64_t j = 0; j < n; ++j) out[j] = exp_shifted_one(x[j], shift);
}

__attribute__((target_clones("avx512f", "avx2", "default")))
float max_of_impl(const float* x, int64_t n) {
  float acc[kLanes];
  std::fill(acc, acc + kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = std::max(acc[l], x[j + l]);
  for (; j < n; ++j) acc[0] = std::max(acc[0], x[j]);
  return *std::max_element(acc, acc + kLanes);
}

__attribute__((target_clones("avx512f", "avx2", "default")))
float sum_of_impl(const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[j + l];
  for (; j < n; ++j) acc[0] += x[j];
  float s = 0.0f;
  for (float a : acc) s += a;
  return s;
}

__attribute__((target_clones("avx512f", "avx2", "default")))
float dot_of_impl(const float* x, const float* y, int64_t n) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[j + l] * y[j + l];
  for (; j < n; ++j) acc[0] += x[j] * y[j];
  float s = 0.0f;
  for (float a : acc) s += a;
  return s;
}

}  // namespace

void affine_sigmoid(float a, float c, const float* d, int64_t n, float* G) { affine_sigmoid_impl(a, c, d, n, G); }
void exp_shifted(const float* x, float shift, int64_t n, float* out) { exp_shifted_impl(x, shift, n, out); }
float max_of(const float* x, int64_t n) { return max_of_impl(x, n); }
float sum_of(const float* x, int64_t n) { return sum_of_impl(x, n); }
float dot_of(const float* x, const float* y, int64_t n) { return dot_of_impl(x, y, n); }

}  // namespace egm
