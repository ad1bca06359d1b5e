#include <gtest/gtest.h>

#include "stepwatch/core/step_window.h"
#include "trace_builder.h"

namespace stepwatch {
namespace {

using testing::TraceBuilder;
using testing::us;

TEST(StepNumber, FromNames) {
  EXPECT_EQ(step_number_from_name("ProfilerStep#12"), 12);
  EXPECT_EQ(step_number_from_name("step_7"), 7);
  EXPECT_EQ(step_number_from_name("iteration"), -1);
}

TEST(StepAssembler, DefaultPatternMatchesTheUsualNames) {
  const StepAssembler a{AnalysisConfig{}};
  for (const char* n : {"ProfilerStep#3", "step", "step 4", "step_4", "train_step", "train_step#9", "iteration",
                        "iteration:12"}) {
    EXPECT_TRUE(a.matches_step_pattern(n)) << n;
  }
  for (const char* n : {"Optimizer.step#SGD.step", "stepper", "my_step", "ProfilerStep", "aten::step"}) {
    EXPECT_FALSE(a.matches_step_pattern(n)) << n;
  }
}

TEST(StepAssembler, RangesGiveWindowsAndNumbersOutermostOnly) {
  TraceBuilder b;
  b.range(0, 100, "ProfilerStep#5").range(10, 90, "step");  // nested: same step
  b.range(100, 200, "ProfilerStep#6").range(100, 200, "ProfilerStep#6");  // recorded twice
  b.kernel(0, 10);
  const Segmentation s = StepAssembler(AnalysisConfig{}).segment(b.trace.events, b.trace.names);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.source, StepSource::kRange);
  EXPECT_EQ(s.steps[0].number, 5);
  EXPECT_EQ(s.steps[1].number, 6);
  EXPECT_EQ(s.steps[1].start_ns, us(100));
}

TEST(StepAssembler, ExplicitMarksWinOverRanges) {
  TraceBuilder b;
  b.range(0, 100, "ProfilerStep#5").kernel(0, 250);
  for (int i = 0; i < 3; ++i) {
    Event& m = b.trace.add(EventKind::kStepMark, "stepwatch_step_begin", us(50.0 * i), us(50.0 * i));
    m.step = 10 + i;
  }
  const Segmentation s = StepAssembler(AnalysisConfig{}).segment(b.trace.events, b.trace.names);
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(s.source, StepSource::kExplicit);
  EXPECT_EQ(s.steps[0].number, 10);
  EXPECT_EQ(s.steps[1].end_ns, us(100));
  EXPECT_EQ(s.steps[2].end_ns, us(250));  // the last mark runs to the end of the data
}

TEST(StepAssembler, NoMarksGivesOneWholeTracePseudoStep) {
  TraceBuilder b;
  b.range(-1000, 5000, "[param|cuda]");  // a long host annotation must not stretch the step
  b.launch(10, 20, 1).kernel(30, 400, 1);
  const Segmentation s = StepAssembler(AnalysisConfig{}).segment(b.trace.events, b.trace.names);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.source, StepSource::kWholeTrace);
  EXPECT_EQ(s.steps[0].start_ns, us(10));
  EXPECT_EQ(s.steps[0].end_ns, us(400));
}

TEST(StepAssembler, CustomPattern) {
  AnalysisConfig c;
  c.step_pattern = "^fwd_bwd$";
  TraceBuilder b;
  b.range(0, 10, "fwd_bwd").range(10, 20, "fwd_bwd").range(20, 30, "ProfilerStep#1");
  const Segmentation s = StepAssembler(c).segment(b.trace.events, b.trace.names);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[1].number, 1);  // unnumbered: ordinals
}

}  // namespace
}  // namespace stepwatch
