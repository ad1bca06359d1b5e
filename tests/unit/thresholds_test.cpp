// Per-detector thresholds: the ID:PCT:MS[:CRITICAL_PCT] form, its errors, and its effect on the
// judgement of one detector while the others keep the common rule.
#include <gtest/gtest.h>

#include "detector_test_support.h"
#include "stepwatch/detectors/thresholds.h"
#include "stepwatch/ranks/rank_merge.h"

namespace stepwatch {
namespace {

using testing::make;

TEST(Thresholds, ParsesIdPercentMsAndOptionalCritical) {
  AnalysisConfig c;
  EXPECT_EQ(apply_threshold("hidden_sync:10:2", c), "");
  EXPECT_EQ(apply_threshold("input_starvation:3:0.5:40", c), "");
  EXPECT_DOUBLE_EQ(c.thresholds_for("hidden_sync").min_pct, 10);
  EXPECT_DOUBLE_EQ(c.thresholds_for("hidden_sync").min_ms, 2);
  EXPECT_DOUBLE_EQ(c.thresholds_for("hidden_sync").critical_pct, 25);  // the common one
  EXPECT_DOUBLE_EQ(c.thresholds_for("input_starvation").critical_pct, 40);
  EXPECT_DOUBLE_EQ(c.thresholds_for("exposed_collective").min_pct, 5);  // untouched
}

TEST(Thresholds, RefusesWhatCannotBeMeant) {
  AnalysisConfig c;
  for (const char* bad : {"hidden_sync", "hidden_sync:10", "hidden_sync:10:2:30:1", "no_such:5:1", "hidden_sync:x:1",
                          "hidden_sync:150:1", "hidden_sync:5:-1", "hidden_sync:10:1:5", "hidden_sync:nan:1"}) {
    const std::string why = apply_threshold(bad, c);
    EXPECT_FALSE(why.empty()) << bad;
    EXPECT_NE(why.find(bad), std::string::npos) << "names the value: " << why;
  }
  // The detectors that report what the data lacks have no cost to judge.
  for (const char* costless : {"no_step_marks:5:1", "data_loss:5:1"}) {
    const std::string why = apply_threshold(costless, c);
    EXPECT_NE(why.find("no cost"), std::string::npos) << why;
    EXPECT_NE(why.find("--disable"), std::string::npos) << why;
  }
  EXPECT_TRUE(c.per_detector.empty());
}

TEST(Thresholds, OneDetectorsRuleChangesOnlyItsJudgement) {
  StepView v;
  v.end_ns = 100'000'000;  // 100 ms step
  v.source = StepSource::kRange;
  v.idle[IdleCause::kInput] = 8'000'000;  // 8 ms: 8 %
  AnalysisConfig c;
  FindingCollector before, after;
  make("input_starvation", c)->on_step(v, before);
  ASSERT_EQ(apply_threshold("input_starvation:10:1", c), "");
  make("input_starvation", c)->on_step(v, after);
  EXPECT_EQ(before.findings.size(), 1u);
  EXPECT_TRUE(after.findings.empty());
}

TEST(Thresholds, LateRankHasItsOwnKnobDefaultingToTwiceTheCommonPercent) {
  AnalysisConfig c;
  EXPECT_DOUBLE_EQ(late_rank_thresholds(c).min_pct, 10);
  c.default_thresholds.min_pct = 3;
  EXPECT_DOUBLE_EQ(late_rank_thresholds(c).min_pct, 6);
  ASSERT_EQ(apply_threshold("late_rank:20:5", c), "");
  EXPECT_DOUBLE_EQ(late_rank_thresholds(c).min_pct, 20);
  EXPECT_DOUBLE_EQ(late_rank_thresholds(c).min_ms, 5);
}

}  // namespace
}  // namespace stepwatch
