// Offline reports: a detector's findings on a run of steps are one line; a sparse one stays apart;
// run-level findings stand alone.
#include <gtest/gtest.h>

#include "stepwatch/report/finding_groups.h"

namespace stepwatch {
namespace {

RankResult rank_with_steps(int n) {
  RankResult r;
  for (int i = 0; i < n; ++i) {
    StepView v;
    v.step = 100 + i;
    r.steps.push_back(v);
  }
  return r;
}

Finding finding(const char* detector, int64_t step, double cost_ms, bool established = false) {
  Finding f;
  f.detector = detector;
  f.step = step;
  f.cost_ms = cost_ms;
  f.cost_pct = cost_ms;
  f.established = established;
  f.message = std::string(detector) + " at step " + std::to_string(step) + ". Fix: something.";
  return f;
}

TEST(FindingGroups, ARunOfStepsIsOneLineNamingTheCostliest) {
  RankResult r = rank_with_steps(20);
  for (int s = 103; s <= 119; ++s) r.findings.push_back(finding("launch_bound", s, s == 110 ? 9.0 : 5.0));
  const auto groups = group_findings(r);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].fired, 17);
  EXPECT_EQ(groups[0].span_steps, 17);
  EXPECT_DOUBLE_EQ(groups[0].cost_ms, 16 * 5.0 + 9.0);
  EXPECT_EQ(format_group_line(groups[0]),
            "[stepwatch][rank 0][steps 103–119] launch_bound on 17 of 17 steps, 89.0 ms in all; costliest, step 110: "
            "launch_bound at step 110. Fix: something.");
}

TEST(FindingGroups, SparseFindingsAndOtherDetectorsStayApart) {
  RankResult r = rank_with_steps(40);
  r.findings = {finding("hidden_sync", 100, 2), finding("input_starvation", 101, 3), finding("hidden_sync", 101, 2),
                finding("hidden_sync", 130, 2), finding("step_variance", 139, 1, /*established=*/true)};
  const auto groups = group_findings(r);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].costliest->detector, "hidden_sync");
  EXPECT_EQ(groups[0].fired, 2);  // 100 and 101
  EXPECT_EQ(groups[1].costliest->detector, "input_starvation");
  EXPECT_EQ(groups[2].first_step, 130);  // 29 steps later: not half of the span
  EXPECT_EQ(groups[2].fired, 1);
  EXPECT_EQ(format_group_line(groups[3]), format_log_line(r.findings[4]));  // a single line is the log line
}

}  // namespace
}  // namespace stepwatch
