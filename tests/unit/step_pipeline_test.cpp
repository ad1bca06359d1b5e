// The step pipeline's own bounds: the exit path's time bound (steps not judged in time are counted
// as skipped, the summary is still built) and the retention cap (steps whose events were evicted
// before they were judged are incomplete, never judged from what is left).
#include <gtest/gtest.h>

#include "stepwatch/core/step_pipeline.h"
#include "stepwatch/detectors/registry.h"
#include "synthetic/workload.h"

namespace stepwatch {
namespace {

class Recorder final : public Reporter {
 public:
  void on_step(const StepView& v, StepStatus status, std::span<const Finding> f) override {
    steps.push_back(v);
    statuses.push_back(status);
    findings += f.size();
  }
  void on_run_finding(const Finding&) override {}
  void on_summary(const RunSummary& s) override {
    summary = s;
    summarized = true;
  }
  std::vector<StepView> steps;
  std::vector<StepStatus> statuses;
  size_t findings = 0;
  RunSummary summary;
  bool summarized = false;
};

TEST(StepPipeline, AnExitDeadlineAlreadyPassedSkipsTheStepsButStillSummarizes) {
  synthetic::ScenarioOptions opts;
  opts.steps = 6;
  const synthetic::SyntheticRun run = synthetic::make_scenario("item_sync", opts);
  Recorder rec;
  StepPipeline p(PipelineOptions{}, run.trace.names, rec, make_detectors({}));
  p.ingest(run.trace.events);
  p.finish(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_TRUE(rec.steps.empty());
  ASSERT_TRUE(rec.summarized);
  EXPECT_EQ(rec.summary.skipped_steps, 6);
  EXPECT_EQ(rec.summary.steps, 0);
}

TEST(StepPipeline, WithoutADeadlineEveryStepIsJudged) {
  synthetic::ScenarioOptions opts;
  opts.steps = 6;
  const synthetic::SyntheticRun run = synthetic::make_scenario("item_sync", opts);
  Recorder rec;
  StepPipeline p(PipelineOptions{}, run.trace.names, rec, make_detectors({}));
  p.ingest(run.trace.events);
  p.finish();
  EXPECT_EQ(rec.steps.size(), 6u);
  EXPECT_EQ(rec.summary.skipped_steps, 0);
  EXPECT_EQ(rec.summary.judged_steps, 6);
}

// The analysis thread fell behind (no watermark yet) while events kept coming: past the cap the
// oldest are evicted and counted; the steps that lost events are incomplete, not judged.
TEST(StepPipeline, StepsThatLostEventsToTheRetentionCapAreIncomplete) {
  synthetic::ScenarioOptions opts;
  opts.steps = 12;
  const synthetic::SyntheticRun run = synthetic::make_scenario("item_sync", opts);
  PipelineOptions o;
  o.max_retained_events = run.trace.events.size() / 3;
  Recorder rec;
  StepPipeline p(o, run.trace.names, rec, make_detectors({}));
  std::vector<Event> sorted = run.trace.events;
  std::sort(sorted.begin(), sorted.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  for (size_t i = 0; i < sorted.size(); i += 500) {
    p.ingest(std::span<const Event>(sorted.data() + i, std::min<size_t>(500, sorted.size() - i)));
  }
  p.finish();
  ASSERT_FALSE(rec.statuses.empty());
  EXPECT_EQ(rec.statuses.front(), StepStatus::kIncomplete);
  EXPECT_EQ(rec.statuses.back(), StepStatus::kJudged);
  EXPECT_GT(rec.summary.incomplete_steps, 0);
  EXPECT_GT(rec.summary.data_loss.records.at("retention_cap"), 0u);
}

}  // namespace
}  // namespace stepwatch
