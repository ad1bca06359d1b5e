// The individual straggler score on synthetic step series: stable -> silent, a slowdown against
// the rank's own history -> a finding on each slow step with the fix direction (the live log
// reports it once sustained, like any finding: tests/live/log_reporter_test.cpp), a mild
// slowdown -> silent; the collective-wait signal alike.
#include <gtest/gtest.h>

#include "detector_test_support.h"
#include "stepwatch/detectors/individual_score.h"

namespace stepwatch {
namespace {

using testing::make;

StepView step_of(int64_t n, double ms, double comm_ms = 0.0) {
  StepView v;
  v.step = n;
  v.start_ns = n * 10'000'000'000;
  v.end_ns = v.start_ns + static_cast<int64_t>(ms * 1e6);
  v.comm_ns = static_cast<int64_t>(comm_ms * 1e6);
  v.source = StepSource::kRange;
  return v;
}

// Feeds `count` steps (ms + 0..2 ms of jitter); returns every finding.
std::vector<Finding> feed(Detector& d, int64_t& step, int count, double ms, double comm_ms = 0.0) {
  FindingCollector sink;
  for (int i = 0; i < count; ++i) d.on_step(step_of(step++, ms + (i % 3), comm_ms), sink);
  return sink.findings;
}

TEST(IndividualScoreTracker, NoScoreBeforeEightStepsThenNearOneWhenStable) {
  IndividualScoreTracker t;
  for (int64_t i = 0; i < 7; ++i) t.observe(step_of(i, 100.0), true);
  EXPECT_FALSE(t.step_time());
  for (int64_t i = 7; i < 200; ++i) t.observe(step_of(i, 100.0 + double(i % 3), 20.0), true);
  ASSERT_TRUE(t.step_time());
  EXPECT_GT(t.step_time()->score, 0.97);
  ASSERT_TRUE(t.collective_wait());
  EXPECT_GT(t.collective_wait()->score, 0.97);
  // Steps without GPU data say nothing about collectives.
  t.observe(step_of(200, 100.0, 90.0), false);
  EXPECT_GT(t.collective_wait()->score, 0.97);
}

TEST(IndividualScore, StableStepsStaySilent) {
  auto d = make("individual_score");
  int64_t step = 0;
  EXPECT_TRUE(feed(*d, step, 200, 100.0, 20.0).empty());
}

TEST(IndividualScore, ASlowdownAgainstItsOwnHistoryIsAFindingWithTheFix) {
  auto d = make("individual_score");
  int64_t step = 0;
  ASSERT_TRUE(feed(*d, step, 20, 100.0).empty());
  const auto f = feed(*d, step, 3, 200.0);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].detector, "individual_score");
  // Best recent: the 25th percentile of 4-step means of 100-102 ms steps, 100.75 ms.
  EXPECT_NE(f[0].message.find("step time at 0.50 of this rank's best recent (200.0 ms vs 100.8 ms)"),
            std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("Fix:"), std::string::npos);
  EXPECT_NEAR(f[0].cost_ms, 99.25, 0.01);  // the extra time over the best recent
  // Back to normal: silent again.
  EXPECT_TRUE(feed(*d, step, 20, 100.0).empty());
}

// A healthy loop on a loaded host: now and then the host is preempted, one step runs long and
// the next ones short while the drained queue refills (seen on the faithful e2e loop: 24 ms steps,
// then 43 ms, 10 ms, 18 ms). The catch-up steps are not the rank's best: normal steps stay silent.
TEST(IndividualScore, CatchUpStepsAfterAHostHiccupDoNotSetTheBar) {
  auto d = make("individual_score");
  FindingCollector sink;
  for (int64_t i = 0; i < 200; ++i) {
    const int64_t phase = i % 8;
    const double ms = phase == 5 ? 43.0 : phase == 6 ? 10.0 : phase == 7 ? 18.0 : 24.0;
    d->on_step(step_of(i, ms), sink);
  }
  for (const Finding& f : sink.findings) {
    EXPECT_EQ(f.step % 8, 5) << "only the hiccup step itself is slow: " << f.message;
  }
}

TEST(IndividualScore, MildSlowdownsStaySilent) {
  auto d = make("individual_score");
  int64_t step = 0;
  ASSERT_TRUE(feed(*d, step, 20, 100.0).empty());
  EXPECT_TRUE(feed(*d, step, 20, 125.0).empty()) << "0.8 of the best is above the 0.7 threshold";
}

TEST(IndividualScore, CollectiveWaitDegradesWithStepTimeUnchanged) {
  auto d = make("individual_score");
  int64_t step = 0;
  ASSERT_TRUE(feed(*d, step, 20, 100.0, 10.0).empty());
  const auto f = feed(*d, step, 3, 100.0, 40.0);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_NE(f[0].message.find("collective wait at 0.2"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("late peer"), std::string::npos);
}

}  // namespace
}  // namespace stepwatch
