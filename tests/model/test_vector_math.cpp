// The attention kernels' element-wise loops (model/kernels/vector_math.h) and the dropout
// mask's row application (model/kernels/counter_dropout.h): against plain std:: arithmetic,
// and in place (how the kernels call them) against separate buffers, bit for bit.
// The in-place calls are the ones a compiler may leave scalar or get wrong: Clang's
// overlap check sent them down its scalar loop until its loops were marked independent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "model/kernels/counter_dropout.h"
#include "model/kernels/vector_math.h"

namespace {

// Lengths around the vector widths (8, 16) and the kernels' rows (a causal row of 1..256).
const std::vector<int64_t> kLengths = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 255, 256, 257};

// n floats uniform in [lo, hi) from `gen`.
std::vector<float> uniform_row(int64_t n, float lo, float hi, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(n);
  for (float& v : x) v = u(gen);
  return x;
}

std::vector<float> nonpositive_row(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> x = uniform_row(n, -90.0f, 0.0f, gen);
  if (n > 2) {
    x[0] = 0.0f;                                        // the row's maximum
    x[1] = -std::numeric_limits<float>::infinity();     // a masked score
  }
  return x;
}

TEST(VectorMath, ExpShiftedMatchesStdExpAndIsTheSameInPlace) {
  for (int64_t n : kLengths) {
    const std::vector<float> x = nonpositive_row(n, 7 + static_cast<uint32_t>(n));
    const float shift = 0.25f;
    std::vector<float> out(n, -1.0f);
    egm::exp_shifted(x.data(), shift, n, out.data());
    for (int64_t j = 0; j < n; ++j) {
      const float t = x[j] - shift;
      if (t < -87.0f) {
        EXPECT_EQ(out[j], 0.0f) << "n " << n << " j " << j << " x " << x[j];
      } else {
        const double want = std::exp(static_cast<double>(t));
        EXPECT_NEAR(out[j], want, 3e-7 * want) << "n " << n << " j " << j;
      }
    }
    std::vector<float> in_place = x;
    egm::exp_shifted(in_place.data(), shift, n, in_place.data());
    for (int64_t j = 0; j < n; ++j) EXPECT_EQ(in_place[j], out[j]) << "in place, n " << n << " j " << j;
  }
}

TEST(VectorMath, ExpShiftedLeavesWhatFollowsTheRowAlone) {
  std::vector<float> x = nonpositive_row(40, 3);
  const std::vector<float> before = x;
  egm::exp_shifted(x.data(), 0.0f, 21, x.data());
  for (int64_t j = 21; j < 40; ++j) EXPECT_EQ(x[j], before[j]) << j;
}

TEST(VectorMath, AffineSigmoidMatchesTheLogisticAndSaturatesExactly) {
  for (int64_t n : kLengths) {
    std::mt19937 gen(11 + static_cast<uint32_t>(n));
    const std::vector<float> d = uniform_row(n, -30.0f, 30.0f, gen);
    std::vector<float> g(n);
    const float a = 3.5f, c = -0.75f;
    egm::affine_sigmoid(a, c, d.data(), n, g.data());
    for (int64_t j = 0; j < n; ++j) {
      const double z = static_cast<double>(a * d[j] + c);
      EXPECT_NEAR(g[j], 1.0 / (1.0 + std::exp(-z)), 1e-7) << "n " << n << " j " << j;
    }
  }
  const float far[] = {-1000.0f, 1000.0f};
  float g[2];
  egm::affine_sigmoid(1.0f, 0.0f, far, 2, g);
  EXPECT_EQ(g[0], 0.0f);  // a gate shut by a very negative logit is exactly shut
  EXPECT_EQ(g[1], 1.0f);
}

TEST(VectorMath, ReductionsMatchPlainSums) {
  for (int64_t n : kLengths) {
    std::mt19937 gen(5 + static_cast<uint32_t>(n));
    const std::vector<float> x = uniform_row(n, -2.0f, 2.0f, gen);
    const std::vector<float> y = uniform_row(n, -2.0f, 2.0f, gen);
    double sum = 0, dot = 0, abs_sum = 0, abs_dot = 0;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      sum += x[j];
      dot += static_cast<double>(x[j]) * y[j];
      abs_sum += std::fabs(x[j]);
      abs_dot += std::fabs(static_cast<double>(x[j]) * y[j]);
      mx = std::max(mx, x[j]);
    }
    EXPECT_EQ(egm::max_of(x.data(), n), mx) << n;
    EXPECT_NEAR(egm::sum_of(x.data(), n), sum, 1e-6 * (abs_sum + 1)) << n;
    EXPECT_NEAR(egm::dot_of(x.data(), y.data(), n), dot, 1e-6 * (abs_dot + 1)) << n;
  }
}

TEST(DropoutRows, ApplyInPlaceIsApplyIntoAnotherBuffer) {
  const egm::DropoutMask mask(0.3, 1234567);
  for (int64_t start : {int64_t{0}, int64_t{1}, int64_t{1023}}) {
    for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{256}, int64_t{1500}}) {
      std::vector<float> x(n);
      for (int64_t j = 0; j < n; ++j) x[j] = 0.5f + static_cast<float>(j % 13);
      std::vector<float> out(n), f(n);
      mask.apply(start, n, x.data(), out.data());
      mask.factors(start, n, f.data());
      std::vector<float> in_place = x;
      mask.apply(start, n, in_place.data(), in_place.data());
      int64_t dropped = 0;
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(in_place[j], out[j]) << "start " << start << " n " << n << " j " << j;
        EXPECT_EQ(out[j], x[j] * f[j]) << "start " << start << " n " << n << " j " << j;
        EXPECT_TRUE(f[j] == 0.0f || f[j] == static_cast<float>(1.0 / (1.0 - 0.3))) << f[j];
        dropped += f[j] == 0.0f;
      }
      if (n == 1500) {  // 30% dropped: 450 expected, sd ~18
        EXPECT_GT(dropped, 350);
        EXPECT_LT(dropped, 550);
      }
    }
  }
}

}  // namespace
