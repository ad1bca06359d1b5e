// The step pipeline's own bounds: the exit path's time bound (steps not judged in time are counted
// as skipped, the summary is still built) and the retention cap (steps whose events were evicted
// before they were judged are incomplete, never judged from what is left); and which empty
// windows are no steps (only the profiler's closing one).
#include <gtest/gtest.h>

#include "stepwatch/core/step_pipeline.h"
#include "stepwatch/detectors/registry.h"
#include "synthetic/workload.h"
#include "trace_builder.h"

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

// Three 10 ms steps with a kernel each, then (`tail`) a fourth of 49 µs holding nothing, or
// (`middle`) that empty one between the second and third. `flags` marks every step range (the C
// API's kExplicitStep); without, they are ProfilerStep ranges.
Recorder run_steps(bool tail, bool middle, uint8_t flags = 0) {
  testing::TraceBuilder b;
  auto step = [&](double start_us, double end_us, int k) {
    b.range(start_us, end_us, "ProfilerStep#" + std::to_string(k));
    b.trace.events.back().flags |= flags;
    b.trace.events.back().step = k;
  };
  double t = 0;
  for (int k = 1; k <= 3; ++k) {
    if (middle && k == 3) {
      step(t, t + 49, 99);
      t += 60;
    }
    step(t, t + 10'000, k);
    b.launch(t + 10, t + 20, 100 + k).kernel(t + 30, t + 9'000, 100 + k);
    t += 10'000;
  }
  if (tail) step(t + 10, t + 59, 4);
  Recorder rec;
  StepPipeline p(PipelineOptions{}, b.trace.names, rec, make_detectors({}));
  p.ingest(b.trace.events);
  p.finish();
  return rec;
}

TEST(StepPipeline, TheProfilersClosingEmptyStepIsNoStep) {
  const Recorder closing = run_steps(true, false);
  EXPECT_EQ(closing.steps.size(), 3u);
  EXPECT_EQ(closing.summary.time.dropped_windows, 1);
  // Negative: an empty step between others is the data's (kept, judged), and so is a closing one
  // the program marked itself through the C API.
  const Recorder middle = run_steps(false, true);
  EXPECT_EQ(middle.steps.size(), 4u);
  EXPECT_EQ(middle.summary.time.dropped_windows, 0);
  const Recorder explicit_steps = run_steps(true, false, event_flags::kExplicitStep);
  EXPECT_EQ(explicit_steps.steps.size(), 4u);
  EXPECT_EQ(explicit_steps.summary.time.dropped_windows, 0);
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
