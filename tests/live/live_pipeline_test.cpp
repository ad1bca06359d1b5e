// The live wrapper of the step pipeline: it judges a step only once the watermark says its records
// are complete, honours warm-up, untraced and incomplete intervals, and reports losses. (That it
// judges exactly as the offline analyzer does: step_pipeline_parity_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "live/live_pipeline.h"
#include "synthetic/workload.h"

namespace stepwatch::live {
namespace {

class Recorder final : public Reporter {
 public:
  struct Step {
    StepView view;
    bool judged;
    std::vector<Finding> findings;
    StepStatus status;
  };
  void on_step(const StepView& v, StepStatus status, std::span<const Finding> f) override {
    steps.push_back({v, status == StepStatus::kJudged, {f.begin(), f.end()}, status});
  }
  void on_run_finding(const Finding& f) override { run_findings.push_back(f); }
  void on_first_fire(const Finding& f, std::span<const StepCapture* const> recent, const NameTable&) override {
    first_fires.emplace_back(f.detector, recent.size());
  }
  void on_events(std::span<const Event> e) override { events_seen += e.size(); }

  std::vector<Step> steps;
  std::vector<Finding> run_findings;
  std::vector<std::pair<std::string, size_t>> first_fires;
  size_t events_seen = 0;
};

LiveConfig test_config() {
  LiveConfig c;
  c.warmup_steps = 0;
  c.flush_period_ms = 100;
  return c;
}

// Delivers events in chunks ordered by end time, shuffled inside each chunk (per-thread
// buffers arrive out of order), advancing the watermark to the earliest end still undelivered.
void replay(const Trace& trace, LivePipeline& pipeline, size_t chunk, uint64_t seed) {
  std::vector<Event> events = trace.events;
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.end_ns < b.end_ns; });
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < events.size(); i += chunk) {
    const size_t end = std::min(events.size(), i + chunk);
    std::vector<Event> batch(events.begin() + static_cast<std::ptrdiff_t>(i), events.begin() + static_cast<std::ptrdiff_t>(end));
    std::shuffle(batch.begin(), batch.end(), rng);
    pipeline.ingest(batch);
    if (end < events.size()) pipeline.advance(events[end].end_ns);
  }
  pipeline.finish();
}

TEST(LivePipeline, WaitsForTheWatermarkBeforeJudging) {
  synthetic::ScenarioOptions opts;
  opts.steps = 4;
  synthetic::SyntheticRun run = synthetic::make_scenario("item_sync", opts);
  LossCounters losses;
  Recorder rec;
  LiveConfig config = test_config();
  LivePipeline pipeline(config, run.trace.names, losses, rec);
  std::vector<Event> all = run.trace.events;
  pipeline.ingest(all);
  const int64_t first_end = run.truth[0].end_ns;
  pipeline.advance(first_end);  // the margin (one flush period) has not passed yet
  EXPECT_TRUE(rec.steps.empty());
  pipeline.advance(first_end + pipeline.margin_ns());
  ASSERT_GE(rec.steps.size(), 1u);
  EXPECT_EQ(rec.steps[0].view.step, run.truth[0].step);
}

TEST(LivePipeline, WarmupStepsAreMeasuredButNotJudged) {
  synthetic::ScenarioOptions opts;
  opts.steps = 6;
  synthetic::SyntheticRun run = synthetic::make_scenario("serialized_allreduce", opts);
  LossCounters losses;
  Recorder rec;
  LiveConfig config = test_config();
  config.warmup_steps = 2;
  LivePipeline pipeline(config, run.trace.names, losses, rec);
  replay(run.trace, pipeline, 1000, 1);
  ASSERT_EQ(rec.steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(rec.steps[i].judged, i >= 2);
    EXPECT_EQ(rec.steps[i].findings.empty(), i < 2) << i;
  }
  ASSERT_EQ(rec.first_fires.size(), 1u);
  EXPECT_EQ(rec.first_fires[0].first, "exposed_collective");
  EXPECT_EQ(rec.first_fires[0].second, 3u);  // the ring holds the steps so far
}

TEST(LivePipeline, ExplicitMarksDelimitSteps) {
  synthetic::ScenarioOptions opts;
  opts.steps = 5;
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound+no_marks", opts);
  // Marks at the model's step starts, numbered from 100.
  for (size_t i = 0; i < run.truth.size(); ++i) {
    Event& m = run.trace.add(EventKind::kStepMark, "step", run.truth[i].start_ns, run.truth[i].start_ns);
    m.step = 100 + static_cast<int64_t>(i);
  }
  LossCounters losses;
  Recorder rec;
  LivePipeline pipeline(test_config(), run.trace.names, losses, rec);
  replay(run.trace, pipeline, 500, 3);
  ASSERT_EQ(rec.steps.size(), 5u);
  EXPECT_EQ(rec.steps[0].view.step, 100);
  EXPECT_EQ(rec.steps[0].view.source, StepSource::kExplicit);
  EXPECT_EQ(rec.steps[0].view.end_ns, run.truth[1].start_ns);
  for (const auto& s : rec.steps) EXPECT_TRUE(s.findings.empty()) << s.findings.size();
}

TEST(LivePipeline, LossesBecomeADataLossFinding) {
  synthetic::ScenarioOptions opts;
  opts.steps = 3;
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", opts);
  LossCounters losses;
  Recorder rec;
  LivePipeline pipeline(test_config(), run.trace.names, losses, rec);
  losses.add(LossKind::kCuptiDropped, 120);
  losses.add(LossKind::kZeroTimestamp, 3);
  replay(run.trace, pipeline, 1000, 1);
  // Reported once, at the first step judged after the loss (an established finding: the log
  // says it at once).
  std::vector<Finding> all = rec.run_findings;
  for (const auto& s : rec.steps) all.insert(all.end(), s.findings.begin(), s.findings.end());
  ASSERT_EQ(all.size(), 1u);
  const Finding& f = all[0];
  EXPECT_EQ(f.detector, "data_loss");
  EXPECT_EQ(f.step, rec.steps[0].view.step);
  EXPECT_TRUE(f.established);
  EXPECT_NE(f.message.find("123 trace records lost"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("cupti_dropped 120"), std::string::npos);
}

// No step source, no watermark (nothing complete, so no inference): when the retained events reach
// the cap, what is held is judged as one pseudo-step before it is evicted — never dropped unseen —
// and no_step_marks says so, once.
TEST(LivePipeline, NoStepMarksIsReportedOnceWhenTheRetentionCapIsReached) {
  synthetic::ScenarioOptions opts;
  opts.steps = 40;
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound+no_marks", opts);
  LossCounters losses;
  Recorder rec;
  LiveConfig config = test_config();
  config.memory_cap_bytes = 8 << 20;  // 64k retained events at most
  LivePipeline pipeline(config, run.trace.names, losses, rec);
  for (int rep = 0; rep < 8; ++rep) {
    std::vector<Event> copy = run.trace.events;
    pipeline.ingest(copy);
  }
  EXPECT_LE(pipeline.retained_events(), static_cast<size_t>((8 << 20) / 2 / sizeof(Event)));
  ASSERT_FALSE(rec.steps.empty());
  std::vector<Finding> marks;
  for (const auto& s : rec.steps) {
    EXPECT_EQ(s.view.source, StepSource::kWholeTrace);
    for (const Finding& f : s.findings) {
      if (f.detector == "no_step_marks") marks.push_back(f);
    }
  }
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_NE(marks[0].message.find("pseudo-step"), std::string::npos) << marks[0].message;
  EXPECT_EQ(losses.total(), 0u);  // not data loss: the evicted events were judged first
}

TEST(LivePipeline, StepsWhileUntracedAreNotJudged) {
  synthetic::ScenarioOptions opts;
  opts.steps = 4;
  synthetic::SyntheticRun run = synthetic::make_scenario("serialized_allreduce", opts);
  LossCounters losses;
  Recorder rec;
  LivePipeline pipeline(test_config(), run.trace.names, losses, rec);
  pipeline.set_untraced({{run.truth[1].start_ns + 1, run.truth[2].start_ns + 1}});
  replay(run.trace, pipeline, 1000, 1);
  ASSERT_EQ(rec.steps.size(), 4u);
  EXPECT_TRUE(rec.steps[0].judged);
  EXPECT_FALSE(rec.steps[1].judged);
  EXPECT_FALSE(rec.steps[2].judged);
  EXPECT_TRUE(rec.steps[3].judged);
}

// A step whose GPU records the tracer gave up waiting for is timed, never judged: the missing
// records would read as an idle GPU (here a serialized all-reduce that would be flagged).
TEST(LivePipeline, StepsWithMissingRecordsAreIncompleteNotJudged) {
  synthetic::ScenarioOptions opts;
  opts.steps = 4;
  synthetic::SyntheticRun run = synthetic::make_scenario("serialized_allreduce", opts);
  LossCounters losses;
  Recorder rec;
  LivePipeline pipeline(test_config(), run.trace.names, losses, rec);
  pipeline.set_incomplete({{run.truth[2].start_ns + 1, run.truth[2].start_ns + 2}});
  replay(run.trace, pipeline, 1000, 1);
  ASSERT_EQ(rec.steps.size(), 4u);
  EXPECT_EQ(rec.steps[1].status, StepStatus::kJudged);
  EXPECT_FALSE(rec.steps[1].findings.empty());
  EXPECT_EQ(rec.steps[2].status, StepStatus::kIncomplete);
  EXPECT_TRUE(rec.steps[2].findings.empty());
  EXPECT_EQ(rec.steps[3].status, StepStatus::kJudged);
}

}  // namespace
}  // namespace stepwatch::live
