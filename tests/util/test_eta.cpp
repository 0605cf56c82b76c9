// The one sweep ETA formula (util/eta.h), worked by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "util/eta.h"

namespace {

TEST(SweepEta, StepsLeftOverTheSummedRatesOfTheRunningCells) {
  // Two cells running, 100 and 50 steps left at 10 and 5 steps/s, 150 steps
  // queued: (100 + 50 + 150) / (10 + 5) = 20 s.
  egm::EtaInput in;
  in.steps_left = 300;
  in.running_steps_per_s = {10, 5};
  in.cells_left = 3;
  in.running = 2;
  in.mean_attempt_s = 1000;  // ignored while a rate is known
  ASSERT_TRUE(egm::sweep_eta(in));
  EXPECT_DOUBLE_EQ(*egm::sweep_eta(in), 20.0);
  // A cell without a rate yet (0, negative, NaN) adds no rate: 300 / 10 = 30 s.
  in.running_steps_per_s = {10, 0, -1, NAN};
  EXPECT_DOUBLE_EQ(*egm::sweep_eta(in), 30.0);
}

TEST(SweepEta, NothingLeftIsZeroWhateverTheRates) {
  egm::EtaInput in;
  in.cells_left = 0;
  in.steps_left = 0;
  EXPECT_EQ(egm::sweep_eta(in), 0.0);
}

TEST(SweepEta, WithoutRatesTheMeanAttemptTimeTimesTheCellsLeftOverTheParallelism) {
  egm::EtaInput in;
  in.steps_left = 400;
  in.cells_left = 4;
  in.running = 2;
  in.running_steps_per_s = {0, 0};
  in.mean_attempt_s = 30;
  EXPECT_DOUBLE_EQ(*egm::sweep_eta(in), 60.0);  // 30 * 4 / 2
  in.running = 0;                                // nothing running: one at a time
  in.running_steps_per_s.clear();
  EXPECT_DOUBLE_EQ(*egm::sweep_eta(in), 120.0);  // 30 * 4 / 1
}

TEST(SweepEta, UnknownWithNeitherRatesNorFinishedAttempts) {
  egm::EtaInput in;
  in.steps_left = 10;
  in.cells_left = 1;
  in.running = 1;
  in.running_steps_per_s = {0};
  EXPECT_FALSE(egm::sweep_eta(in));
  in.mean_attempt_s = 0;
  EXPECT_FALSE(egm::sweep_eta(in));
}

}  // namespace
