// Holm-Bonferroni adjusted p-values.
#include <gtest/gtest.h>

#include "stats/multiple.h"
#include "util/error.h"

namespace {

using egm::stats::holm_adjust;

TEST(Holm, TextbookExample) {
  // Wikipedia "Holm-Bonferroni method" example: p = 0.01, 0.04, 0.03, 0.005,
  // alpha = 0.05 rejects H1 and H4 only. By hand: sorted 0.005*4 = 0.02,
  // 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06.
  std::vector<double> adj = holm_adjust({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(adj.size(), 4u);
  EXPECT_DOUBLE_EQ(adj[0], 0.03);
  EXPECT_DOUBLE_EQ(adj[1], 0.06);
  EXPECT_DOUBLE_EQ(adj[2], 0.06);
  EXPECT_DOUBLE_EQ(adj[3], 0.02);
}

TEST(Holm, CappedAtOneAndMonotone) {
  // 0.5 * 2 = 1.0, then max(1.0, 0.6) = 1.0.
  EXPECT_EQ(holm_adjust({0.6, 0.5}), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(holm_adjust({0.9, 0.8, 0.7}), (std::vector<double>{1.0, 1.0, 1.0}));
  EXPECT_TRUE(holm_adjust({}).empty());
  EXPECT_DOUBLE_EQ(holm_adjust({0.2})[0], 0.2);
}

TEST(Holm, RejectsInvalidP) {
  EXPECT_THROW(holm_adjust({0.1, 1.5}), egm::ConfigError);
  EXPECT_THROW(holm_adjust({-0.1}), egm::ConfigError);
  EXPECT_THROW(holm_adjust({NAN}), egm::ConfigError);
}

}  // namespace
