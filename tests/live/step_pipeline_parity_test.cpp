// Live and offline run one step pipeline: the same complete event stream, given whole to the
// offline entry (analyze_rank) and in chunks to the live wrapper (LivePipeline) — shuffled inside
// each chunk as per-thread buffers arrive, with a watermark that never passes an incomplete step
// and the same warm-up on both sides — gives identical step records, findings and summaries for
// marked and range steps; for inferred steps, the same period and boundaries once live inference
// has locked on. Streams: C API marks, C API ranges, profiler step ranges, no marks (inferred),
// NCCL kernels with NCCL's ranges (their sizes joined), dropped records.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "live/live_pipeline.h"
#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/report/jsonl.h"
#include "synthetic/workload.h"

namespace stepwatch::live {
namespace {

class Recorder final : public Reporter {
 public:
  void on_step(const StepView& v, StepStatus status, std::span<const Finding> f) override {
    steps.push_back(v);
    statuses.push_back(status);
    findings.insert(findings.end(), f.begin(), f.end());
  }
  void on_run_finding(const Finding& f) override { findings.push_back(f); }
  void on_summary(const RunSummary& s) override { summary = s; }
  std::vector<StepView> steps;
  std::vector<StepStatus> statuses;
  std::vector<Finding> findings;
  RunSummary summary;
};

// Chunks in end order, shuffled inside; the watermark is the earliest end still undelivered, so
// every record that ended before it has arrived (what the live tracer promises).
void replay(const Trace& trace, LivePipeline& pipeline, size_t chunk, uint64_t seed) {
  std::vector<Event> events = trace.events;
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.end_ns < b.end_ns; });
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < events.size(); i += chunk) {
    const size_t end = std::min(events.size(), i + chunk);
    std::vector<Event> batch(events.begin() + static_cast<std::ptrdiff_t>(i),
                             events.begin() + static_cast<std::ptrdiff_t>(end));
    std::shuffle(batch.begin(), batch.end(), rng);
    pipeline.ingest(batch);
    if (end < events.size()) pipeline.advance(events[end].end_ns);
  }
  pipeline.finish();
}

// C API marks (stepwatch_step_begin) at the model's step starts instead of its ranges, or C API
// ranges (begin + end) as the session submits them.
void to_c_api(synthetic::SyntheticRun& run, bool ranges) {
  for (const auto& t : run.truth) {
    if (ranges) {
      Event& r = run.trace.add(EventKind::kRange, "step", t.start_ns, t.end_ns);
      r.flags = event_flags::kExplicitStep;
      r.step = t.step;
    } else {
      Event& m = run.trace.add(EventKind::kStepMark, "step", t.start_ns, t.start_ns);
      m.step = t.step;
    }
  }
}

// NCCL's NVTX range around each NCCL launch call (operation and message size in its payload, as
// the NVTX injection decodes it).
void add_nccl_ranges(Trace& trace, uint64_t bytes) {
  std::vector<Event> ranges;
  std::vector<uint64_t> nccl_corr;
  for (const Event& e : trace.events) {
    if (e.is_comm_kernel()) nccl_corr.push_back(e.correlation);
  }
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::kApiCall || std::find(nccl_corr.begin(), nccl_corr.end(), e.correlation) == nccl_corr.end()) {
      continue;
    }
    Event r;
    r.kind = EventKind::kRange;
    r.name = trace.names.intern("ncclAllReduce");
    r.start_ns = e.start_ns - 1000;
    r.end_ns = e.end_ns + 1000;
    r.thread = e.thread;
    r.collective = CollectiveType::kAllReduce;
    r.bytes = bytes;
    ranges.push_back(r);
  }
  trace.events.insert(trace.events.end(), ranges.begin(), ranges.end());
}

LiveConfig parity_config() {
  LiveConfig c;
  c.warmup_steps = 2;
  c.analysis.warmup_steps = 2;
  c.flush_period_ms = 100;
  c.ring_steps = 4;
  return c;
}

struct Both {
  RankResult offline;
  Recorder live;
  size_t retained_at_end = 0;
};

Both run_both(const synthetic::SyntheticRun& run, const LossSnapshot& dropped = {}, size_t chunk = 257) {
  const LiveConfig config = parity_config();
  Both b;
  Trace offline_trace = run.trace;
  for (const auto& [reason, n] : dropped.records) offline_trace.skipped[reason] = n;
  b.offline = analyze_rank(offline_trace, 0, config.analysis, make_detectors(config.analysis));
  LossCounters losses;
  for (const auto& [reason, n] : dropped.records) {
    for (size_t k = 0; k < static_cast<size_t>(LossKind::kCount_); ++k) {
      if (to_string(static_cast<LossKind>(k)) == reason) losses.add(static_cast<LossKind>(k), n);
    }
  }
  LivePipeline pipeline(config, run.trace.names, losses, b.live);
  replay(run.trace, pipeline, chunk, 42);
  b.retained_at_end = pipeline.retained_events();
  return b;
}

std::vector<std::string> step_lines(const std::vector<StepView>& steps) {
  std::vector<std::string> out;
  for (const StepView& v : steps) out.push_back(jsonl_step(v));
  return out;
}
std::vector<std::string> finding_lines(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(jsonl_finding(f));
  std::sort(out.begin(), out.end());  // a step's findings, then run findings: same set, same order per step
  return out;
}
// HTA's comm/comp overlap is an offline-only figure (live never holds the whole trace).
std::string summary_line(RunSummary s) {
  s.comm_comp_overlap_pct = 0;
  return jsonl_summary(s);
}

void expect_identical(const Both& b) {
  EXPECT_EQ(step_lines(b.live.steps), step_lines(b.offline.steps));
  EXPECT_EQ(finding_lines(b.live.findings), finding_lines(b.offline.findings));
  EXPECT_EQ(summary_line(b.live.summary), summary_line(b.offline.summary));
}

struct Stream {
  const char* scenario;
  const char* marks;  // "ranges" (the model's ProfilerStep ranges), "c_api_marks", "c_api_ranges"
};

class PipelineParity : public ::testing::TestWithParam<Stream> {};

TEST_P(PipelineParity, IdenticalStepsFindingsAndSummary) {
  synthetic::ScenarioOptions opts;
  opts.steps = 12;
  const std::string marks = GetParam().marks;
  synthetic::SyntheticRun run =
      synthetic::make_scenario(std::string(GetParam().scenario) + (marks == "ranges" ? "" : "+no_marks"), opts);
  if (marks != "ranges") to_c_api(run, marks == "c_api_ranges");
  const Both b = run_both(run);
  ASSERT_EQ(b.live.steps.size(), 12u);
  EXPECT_EQ(b.live.statuses[0], StepStatus::kWarmup);
  EXPECT_EQ(b.live.statuses[2], StepStatus::kJudged);
  expect_identical(b);
  // Bounded retention: at the end only the last step's neighbourhood is kept.
  EXPECT_LT(b.retained_at_end, run.trace.events.size() / 3);
}

INSTANTIATE_TEST_SUITE_P(
    Streams, PipelineParity,
    ::testing::Values(Stream{"gpu_bound", "ranges"}, Stream{"slow_dataloader", "ranges"}, Stream{"item_sync", "ranges"},
                      Stream{"pageable_copy", "ranges"}, Stream{"serialized_allreduce", "ranges"},
                      Stream{"ddp_overlap", "c_api_marks"}, Stream{"item_sync", "c_api_marks"},
                      Stream{"slow_dataloader", "c_api_ranges"}, Stream{"launch_bound", "c_api_ranges"}),
    [](const ::testing::TestParamInfo<Stream>& p) {
      return std::string(p.param.scenario) + "_" + p.param.marks;
    });

// NCCL kernels learn their operation's size from NCCL's ranges on both sides (offline gains the
// join): the collective evidence carries the bytes. (The model's host runs a full launch queue
// ahead, about 6 steps: the first steps' NCCL kernels were launched before the capture began, so
// neither their launch nor its range is in the data and they stay without a size.)
TEST(PipelineParity, NcclRangesGiveTheSameCollectiveBytes) {
  synthetic::ScenarioOptions opts;
  opts.steps = 16;
  synthetic::SyntheticRun run = synthetic::make_scenario("serialized_allreduce", opts);
  add_nccl_ranges(run.trace, 64ull << 20);
  const Both b = run_both(run);
  expect_identical(b);
  int with_bytes = 0;
  for (const StepView& v : b.offline.steps) {
    ASSERT_FALSE(v.collectives.empty());
    if (v.collectives[0].bytes > 0) {
      ++with_bytes;
      EXPECT_EQ(v.collectives[0].bytes % (64ull << 20), 0u) << "step " << v.step;
    }
  }
  EXPECT_GE(with_bytes, 6);
}

// Records lost before the analysis (here: 40 the tracer dropped) are the same data_loss finding.
TEST(PipelineParity, DroppedRecordsAreTheSameDataLossFinding) {
  synthetic::ScenarioOptions opts;
  opts.steps = 6;
  const synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", opts);
  LossSnapshot dropped;
  dropped.add_records("cupti_dropped", 40);
  const Both b = run_both(run, dropped);
  expect_identical(b);
  const auto n = std::count_if(b.live.findings.begin(), b.live.findings.end(),
                               [](const Finding& f) { return f.detector == "data_loss"; });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(b.live.summary.data_loss.total_records(), 40u);
}

// No step marks: live infers the steps as offline does. Inference locks on once 256 GPU records
// are complete (PipelineOptions::infer_min_records, here within the first 2 steps); from then on
// the period and every boundary match the offline inference over the whole trace.
TEST(PipelineParity, InferredStepsLockOnToTheSamePeriodAndBoundaries) {
  synthetic::ScenarioOptions opts;
  opts.steps = 30;
  const synthetic::SyntheticRun run = synthetic::make_scenario("no_marks", opts);
  const Both b = run_both(run);
  ASSERT_EQ(b.offline.segmentation.source, StepSource::kInferred);
  ASSERT_GE(b.offline.steps.size(), 25u);
  ASSERT_GE(b.live.steps.size(), 25u);
  EXPECT_EQ(b.live.steps.back().inferred_period, b.offline.steps.back().inferred_period);
  EXPECT_EQ(b.live.steps.back().inferred_from, b.offline.steps.back().inferred_from);
  // Every live window after the first 3 is an offline window, with the same breakdown.
  constexpr size_t kLockSteps = 3;
  size_t matched = 0;
  for (size_t i = kLockSteps; i < b.live.steps.size(); ++i) {
    const StepView& l = b.live.steps[i];
    const auto it = std::find_if(b.offline.steps.begin(), b.offline.steps.end(),
                                 [&](const StepView& o) { return o.start_ns == l.start_ns; });
    ASSERT_NE(it, b.offline.steps.end()) << "live step " << i << " starts at no offline boundary";
    EXPECT_EQ(l.end_ns, it->end_ns) << "live step " << i;
    EXPECT_EQ(l.idle.ns, it->idle.ns) << "live step " << i;
    ++matched;
  }
  EXPECT_GE(matched, b.offline.steps.size() - kLockSteps - 1);
  // Judged, not just timed: the no_step_marks finding says how they were found.
  EXPECT_EQ(b.live.statuses.back(), StepStatus::kJudged);
  EXPECT_TRUE(std::any_of(b.live.findings.begin(), b.live.findings.end(),
                          [](const Finding& f) { return f.detector == "no_step_marks"; }));
}

// A record that arrives after its step was judged is counted as late — reported as data loss,
// never silently dropped.
TEST(PipelineLate, RecordsArrivingAfterTheirStepWasJudgedAreCounted) {
  synthetic::ScenarioOptions opts;
  opts.steps = 6;
  const synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", opts);
  LiveConfig config = parity_config();
  config.warmup_steps = config.analysis.warmup_steps = 0;
  LossCounters losses;
  Recorder rec;
  LivePipeline pipeline(config, run.trace.names, losses, rec);
  // Everything but step 1's kernels arrives; the watermark passes step 1; then its kernels come.
  const int64_t s1 = run.truth[1].start_ns, e1 = run.truth[1].end_ns;
  std::vector<Event> on_time, late;
  for (const Event& e : run.trace.events) {
    (e.kind == EventKind::kKernel && e.start_ns >= s1 && e.end_ns < e1 ? late : on_time).push_back(e);
  }
  ASSERT_FALSE(late.empty());
  const size_t n_late = late.size();
  pipeline.ingest(on_time);
  pipeline.advance(run.truth[2].end_ns + pipeline.margin_ns());
  ASSERT_GE(rec.steps.size(), 2u);
  pipeline.ingest(late);
  pipeline.finish();
  EXPECT_EQ(rec.summary.data_loss.records.at("late_record"), n_late);
  const auto loss = std::find_if(rec.findings.begin(), rec.findings.end(),
                                 [](const Finding& f) { return f.detector == "data_loss"; });
  ASSERT_NE(loss, rec.findings.end());
  EXPECT_NE(loss->message.find("late_record " + std::to_string(n_late)), std::string::npos) << loss->message;
  EXPECT_NE(loss->message.find("STEPWATCH_FLUSH_MS"), std::string::npos) << loss->message;
}

}  // namespace
}  // namespace stepwatch::live
