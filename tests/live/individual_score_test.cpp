// The individual straggler score on synthetic step series: stable -> silent, a sustained slowdown
// -> one line with the fix direction, recovery -> cleared; the collective-wait signal alike.
#include <gtest/gtest.h>

#include "live/outputs/individual_score.h"

namespace stepwatch::live {
namespace {

StepView step_of(int64_t n, double ms, double comm_ms = 0.0) {
  StepView v;
  v.step = n;
  v.start_ns = n * 10'000'000'000;
  v.end_ns = v.start_ns + static_cast<int64_t>(ms * 1e6);
  v.comm_ns = static_cast<int64_t>(comm_ms * 1e6);
  return v;
}

// Feeds `count` steps from `first`; returns every line produced.
std::vector<IndividualScore::LogLine> feed(IndividualScore& s, int64_t& step, int count, double ms,
                                           double comm_ms = 0.0, bool traced = true) {
  std::vector<IndividualScore::LogLine> all;
  for (int i = 0; i < count; ++i) {
    for (auto& line : s.on_step(step_of(step++, ms + (i % 3), comm_ms), traced)) all.push_back(line);
  }
  return all;
}

TEST(IndividualScore, StableStepsStaySilentNearOne) {
  IndividualScore s(3, 5);
  int64_t step = 0;
  EXPECT_TRUE(feed(s, step, 7, 100.0).empty());
  EXPECT_FALSE(s.step_time_score()) << "no score before 8 steps of history";
  EXPECT_TRUE(feed(s, step, 200, 100.0, 20.0).empty());
  ASSERT_TRUE(s.step_time_score());
  EXPECT_GT(*s.step_time_score(), 0.97);
  ASSERT_TRUE(s.collective_wait_score());
  EXPECT_GT(*s.collective_wait_score(), 0.97);
}

TEST(IndividualScore, SustainedSlowdownIsLoggedOnceThenClearedOnRecovery) {
  IndividualScore s(3, 5);
  int64_t step = 0;
  ASSERT_TRUE(feed(s, step, 20, 100.0).empty());
  // Two slow steps are not sustained yet; the third is.
  EXPECT_TRUE(feed(s, step, 2, 200.0).empty());
  EXPECT_NEAR(*s.step_time_score(), 0.5, 0.02);
  auto lines = feed(s, step, 1, 200.0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].degraded);
  EXPECT_NE(lines[0].text.find("individual_score: step time at 0.50 of this rank's best recent (20"),
            std::string::npos)
      << lines[0].text;
  EXPECT_NE(lines[0].text.find("Fix:"), std::string::npos);
  EXPECT_TRUE(feed(s, step, 5, 200.0).empty()) << "said once while it lasts";
  // Back to normal: cleared once no step of the window is degraded.
  lines = feed(s, step, 5, 100.0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(lines[0].degraded);
  EXPECT_NE(lines[0].text.find("step time recovered"), std::string::npos) << lines[0].text;
  EXPECT_GT(*s.step_time_score(), 0.95);
  EXPECT_TRUE(feed(s, step, 20, 100.0).empty());
}

TEST(IndividualScore, IsolatedSlowStepsAndMildSlowdownsStaySilent) {
  IndividualScore s(3, 5);
  int64_t step = 0;
  ASSERT_TRUE(feed(s, step, 20, 100.0).empty());
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(feed(s, step, 1, 300.0).empty());  // one slow step in three: never 3 of 5
    EXPECT_TRUE(feed(s, step, 2, 100.0).empty());
  }
  EXPECT_TRUE(feed(s, step, 20, 125.0).empty()) << "0.8 of the best is above the 0.7 threshold";
}

TEST(IndividualScore, CollectiveWaitDegradesWithStepTimeUnchanged) {
  IndividualScore s(3, 5);
  int64_t step = 0;
  ASSERT_TRUE(feed(s, step, 20, 100.0, 10.0).empty());
  const auto lines = feed(s, step, 3, 100.0, 40.0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].text.find("collective wait at 0.2"), std::string::npos) << lines[0].text;
  EXPECT_NE(lines[0].text.find("late peer"), std::string::npos);
  EXPECT_GT(*s.step_time_score(), 0.95);
  // Untraced steps (no GPU data) say nothing about collectives.
  EXPECT_TRUE(feed(s, step, 10, 100.0, 0.0, /*traced=*/false).empty());
  EXPECT_LT(*s.collective_wait_score(), 0.7) << "unchanged by steps without GPU data";
}

}  // namespace
}  // namespace stepwatch::live
