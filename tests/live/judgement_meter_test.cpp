// The judgement meter (libtrace/src/live/judgement_meter.h): judgement lag and counts per status,
// and the live wording of no_step_marks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "live/judgement_meter.h"

namespace stepwatch::live {
namespace {

class Recorder final : public Reporter {
 public:
  void on_step(const StepView&, StepStatus s, std::span<const Finding>) override { statuses.push_back(s); }
  void on_run_finding(const Finding& f) override { run_findings.push_back(f); }
  void on_first_fire(const Finding&, std::span<const StepCapture* const>, const NameTable&) override {}
  void on_events(std::span<const Event>) override {}
  std::vector<StepStatus> statuses;
  std::vector<Finding> run_findings;
};

int64_t g_now = 0;
int64_t fake_now() noexcept { return g_now; }

TEST(JudgementMeter, CountsEachStatusAndTheLagFromStepEndToJudged) {
  Recorder next;
  JudgementMeter meter(next, &fake_now);
  StepView v;
  for (int i = 0; i < 10; ++i) {
    v.end_ns = 1'000'000'000 + i * 10'000'000;
    g_now = v.end_ns + (i + 1) * 50'000'000;  // judged 50, 100, ... 500 ms after the step ended
    meter.on_step(v, i < 2 ? StepStatus::kWarmup : i == 5 ? StepStatus::kIncomplete : StepStatus::kJudged, {});
  }
  EXPECT_EQ(next.statuses.size(), 10u);
  EXPECT_EQ(meter.counts().judged, 7u);
  EXPECT_EQ(meter.counts().warmup, 2u);
  EXPECT_EQ(meter.counts().incomplete, 1u);
  EXPECT_NEAR(meter.lag_ms(0.5), 300.0, 50.0);
  EXPECT_DOUBLE_EQ(meter.lag_ms(1.0), 500.0);
  const std::string line = meter.summary_line();
  EXPECT_NE(line.find("judgement: 7 of 8 traced steps judged complete (87.5%), 1 incomplete"), std::string::npos)
      << line;
  EXPECT_NE(line.find("max 500 ms"), std::string::npos) << line;
  const JudgementMeter::Counts d = meter.take_delta();
  EXPECT_EQ(d.judged, 7u);
  EXPECT_EQ(meter.take_delta().judged, 0u);
}

// Live, torch.profiler's ProfilerStep ranges never reach the library (a Kineto RecordFunction, not
// an NVTX range): the live fix text says what works live.
TEST(JudgementMeter, NoStepMarksRecommendsWhatWorksLive) {
  Recorder next;
  JudgementMeter meter(next, &fake_now);
  Finding f;
  f.detector = "no_step_marks";
  f.message = "no step marks after 1000 events (...): nothing can be judged per step. Fix: mark steps — an NVTX "
              "range named 'step', stepwatch.step(), or torch.profiler's ProfilerStep ranges; or set "
              "STEPWATCH_STEP_PATTERN.";
  meter.on_run_finding(f);
  Finding other;
  other.detector = "data_loss";
  other.message = "as it is";
  meter.on_run_finding(other);
  ASSERT_EQ(next.run_findings.size(), 2u);
  const std::string& m = next.run_findings[0].message;
  EXPECT_EQ(m.find("or torch.profiler's ProfilerStep ranges;"), std::string::npos) << m;
  EXPECT_NE(m.find("stepwatch.torch.watch(optimizer)"), std::string::npos) << m;
  EXPECT_NE(m.find("profile.step()"), std::string::npos) << m;
  EXPECT_NE(m.find("never live"), std::string::npos) << m;
  EXPECT_EQ(m.rfind("no step marks after 1000 events", 0), 0u) << "the finding itself is kept";
  EXPECT_EQ(next.run_findings[1].message, "as it is");
}

}  // namespace
}  // namespace stepwatch::live
