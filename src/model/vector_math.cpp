#include "model/vector_math.h"

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

// As e / (1 + e) or 1 / (1 + e) with e = exp(-|x|), so neither side overflows.
EGM_CPU_CLONES
void affine_sigmoid(float a, float c, const float* d, int64_t n, float* G) {
  for (int64_t j = 0; j < n; ++j) {
    const float x = a * d[j] + c;
    const float t = std::max(-std::fabs(x), -87.0f);
    // Selects written as products with 0/1: GCC 12 leaves `? :` on floats here as branches.
    const float e = exp_nonpositive(t) * static_cast<float>(std::fabs(x) <= 87.0f);
    const float positive = static_cast<float>(x >= 0.0f);
    G[j] = (positive + (1.0f - positive) * e) / (1.0f + e);
  }
}

EGM_CPU_CLONES
void exp_shifted(const float* x, float shift, int64_t n, float* out) {
  for (int64_t j = 0; j < n; ++j) {
    const float t = x[j] - shift;
    out[j] = exp_nonpositive(std::max(t, -87.0f)) * static_cast<float>(t >= -87.0f);
  }
}

EGM_CPU_CLONES
float max_of(const float* x, int64_t n) {
  float acc[kLanes];
  std::fill(acc, acc + kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = std::max(acc[l], x[j + l]);
  for (; j < n; ++j) acc[0] = std::max(acc[0], x[j]);
  return *std::max_element(acc, acc + kLanes);
}

EGM_CPU_CLONES
float sum_of(const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[j + l];
  for (; j < n; ++j) acc[0] += x[j];
  float s = 0.0f;
  for (float a : acc) s += a;
  return s;
}

EGM_CPU_CLONES
float dot_of(const float* x, const float* y, int64_t n) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[j + l] * y[j + l];
  for (; j < n; ++j) acc[0] += x[j] * y[j];
  float s = 0.0f;
  for (float a : acc) s += a;
  return s;
}

}  // namespace egm
