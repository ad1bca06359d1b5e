// The fault catalog's confirming measurements on generated runs: all-to-all layers vs expert
// compute (MoE, exposed_collective) and NVML clock samples (throttle). The samples are the events
// the live NVML sampler submits ("nvml:<metric>" ranges, gpu_samples.h), added to the trace here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario_support.h"
#include "stepwatch/core/gpu_samples.h"
#include "synthetic/transforms_c.h"
#include "evidence_support.h"

namespace stepwatch::scenario {
namespace {

constexpr int kSteps = 12;
// moe_exposed_a2a's host runs ~5 steps ahead of the GPU: from this step on, every kernel of a step
// was launched inside the capture (its launch call, and the range around it, are in the data).
constexpr int64_t kFirstFullyLaunchedStep = 7;

// ---- exposed all-to-all (MoE / EP) -----------------------------------------------------------------

TEST(AllToAllScenario, ExposedAllToAllFiresWithItsLayersAgainstTheExpertCompute) {
  const AnalyzedRun a = analyze_scenario("moe_exposed_a2a", {.steps = kSteps});
  const auto found = a.findings("exposed_collective");
  ASSERT_GE(found.size(), static_cast<size_t>(kSteps - 1)) << describe_findings(a.result);
  int judged = 0;
  for (const Finding& f : found) {
    // The host runs a full launch queue (~5 steps) ahead: the kernels of the first steps were
    // launched before the capture, so nothing says their SendRecv kernels are all-to-alls.
    if (f.step < kFirstFullyLaunchedStep) continue;
    ++judged;
    SCOPED_TRACE(f.message);
    // 8 layers, a dispatch and a combine of 0.6 ms each; 4 expert matmuls of ~0.2 ms (0.5x..1.5x) each.
    EXPECT_EQ(evidence<int64_t>(f, "a2a_layers"), 8);
    EXPECT_EQ(evidence<int64_t>(f, "a2a_kernels"), 16);
    EXPECT_NEAR(evidence<double>(f, "a2a_ms"), 9.6, 0.01);
    // Every dispatch is exposed (the experts wait for it); every combine but the last (backward
    // does not wait for it) too.
    EXPECT_GE(evidence<double>(f, "a2a_exposed_ms"), 8.9);
    EXPECT_GE(evidence<int64_t>(f, "a2a_exposed_kernels"), 15);
    EXPECT_NEAR(evidence<double>(f, "expert_compute_ms"), 6.4, 2.0);
    EXPECT_GT(evidence<double>(f, "a2a_to_expert_ratio"), 1.0);
    EXPECT_NE(f.message.find("8 layers"), std::string::npos);
    // a2a longer than the experts' compute: overlap alone cannot hide it.
    EXPECT_NE(f.message.find("cut its volume (capacity factor"), std::string::npos);
    // NCCL runs all-to-all as SendRecv kernels; the range around the launch says what they are.
    EXPECT_EQ(evidence<std::vector<std::string>>(f, "collectives"), std::vector<std::string>{"SendRecv"});
  }
  EXPECT_GE(judged, 5);
}

TEST(AllToAllScenario, ShorterAllToAllsGetTheOverlapFix) {
  const AnalyzedRun a = analyze_scenario("moe_exposed_a2a", {.steps = kSteps, .magnitude = 0.3});
  const auto found = a.findings("exposed_collective");
  ASSERT_GE(found.size(), static_cast<size_t>(kSteps - 1)) << describe_findings(a.result);
  for (const Finding& f : found) {
    if (f.step < kFirstFullyLaunchedStep) continue;
    EXPECT_LT(evidence<double>(f, "a2a_to_expert_ratio"), 1.0) << f.message;
    EXPECT_NE(f.message.find("overlap dispatch/combine with expert compute"), std::string::npos) << f.message;
  }
}

TEST(AllToAllScenario, OverlappedAllToAllIsSilent) {
  const AnalyzedRun a = analyze_scenario("moe_overlapped_a2a", {.steps = kSteps});
  for (const StepView& v : a.result.steps) {
    if (v.step >= kFirstFullyLaunchedStep) {
      EXPECT_EQ(v.all_to_all.kernels, 16) << describe_step(v);  // premise: the all-to-alls are there
    }
    EXPECT_LE(v.all_to_all.exposed_ns, v.all_to_all.a2a_ns / 100) << describe_step(v);
  }
  EXPECT_TRUE(a.result.findings.empty()) << describe_findings(a.result);
}

TEST(AllToAllScenario, SendRecvOutsideAnAllToAllAndAllReducesAreNoLayers) {
  // Without the nccl:all_to_all ranges the SendRecv kernels are plain send/recv (pipeline
  // parallelism): exposed, but no all-to-all layers.
  synthetic::SyntheticRun run = synthetic::make_scenario("moe_exposed_a2a", {.steps = kSteps});
  synthetic::remove_ranges(run, "nccl:all_to_all");
  const RankResult r = analyze(run.trace);
  ASSERT_FALSE(r.findings.empty());
  for (const Finding& f : r.findings) {
    if (f.detector != "exposed_collective") continue;
    EXPECT_FALSE(has_evidence(f, "a2a_layers")) << f.message;
    EXPECT_EQ(f.message.find("All-to-all"), std::string::npos) << f.message;
  }
  const AnalyzedRun allreduce = analyze_scenario("serialized_allreduce", {.steps = kSteps});
  for (const Finding& f : allreduce.findings("exposed_collective")) {
    EXPECT_FALSE(has_evidence(f, "a2a_layers")) << f.message;
    EXPECT_NE(f.message.find("DDP bucketing"), std::string::npos) << f.message;
  }
}

// ---- exposed all-to-all of sharded embedding tables (recommendation models) ------------------------

TEST(EmbeddingAllToAllScenario, ExposedEmbeddingAllToAllsNameTheTablesNotExperts) {
  const AnalyzedRun a = analyze_scenario("recsys_exposed_a2a", {.steps = kSteps});
  const auto found = a.findings("exposed_collective");
  ASSERT_GE(found.size(), static_cast<size_t>(kSteps - 1)) << describe_findings(a.result);
  int judged = 0;
  for (const Finding& f : found) {
    SCOPED_TRACE(f.message);
    // Every step's all-to-alls are SendRecv kernels: without their launch ranges (launched before the
    // capture) nothing names them, and no step calls them MoE layers either way.
    EXPECT_FALSE(has_evidence(f, "a2a_layers"));
    EXPECT_EQ(f.message.find("expert"), std::string::npos);
    if (!has_evidence(f, "a2a_purpose")) continue;
    ++judged;
    EXPECT_EQ(evidence<std::string>(f, "a2a_purpose"), "embedding_sharding");
    // 3 ms forward (the interaction waits), 3 ms backward (the tables' update waits): all exposed.
    EXPECT_NEAR(evidence<double>(f, "embeddings_forward_exposed_ms"), 3.0, 0.01);
    EXPECT_NEAR(evidence<double>(f, "embeddings_backward_exposed_ms"), 3.0, 0.01);
    EXPECT_EQ(evidence<int64_t>(f, "embeddings_a2a_kernels"), 2);
    // The next batch's sparse features, a batch ahead, hidden by backward.
    EXPECT_EQ(evidence<int64_t>(f, "sparse_features_a2a_kernels"), 2);
    EXPECT_NEAR(evidence<double>(f, "sparse_features_a2a_ms"), 0.8, 0.01);
    EXPECT_LT(evidence<double>(f, "sparse_features_exposed_ms"), 0.05);
    EXPECT_EQ(evidence<int64_t>(f, "sparse_features_ahead"), 1);
    EXPECT_NE(f.message.find("All-to-all of sharded embedding tables (TorchRec)"), std::string::npos);
    EXPECT_NE(f.message.find("EmbeddingShardingPlanner"), std::string::npos);
    EXPECT_EQ(evidence<std::vector<std::string>>(f, "collectives"), std::vector<std::string>{"SendRecv"});
  }
  EXPECT_GE(judged, 5);
}

TEST(EmbeddingAllToAllScenario, PipelinedEmbeddingAllToAllsAreSilent) {
  const AnalyzedRun a = analyze_scenario("recsys_overlapped_a2a", {.steps = kSteps});
  for (const StepView& v : a.result.steps) {
    if (v.step >= kFirstFullyLaunchedStep) {  // premise: the all-to-alls are there, and named
      EXPECT_EQ(v.all_to_all.embeddings_forward.kernels, 1) << describe_step(v);
      EXPECT_EQ(v.all_to_all.embeddings_backward.kernels, 1) << describe_step(v);
      EXPECT_EQ(v.all_to_all.sparse_features.kernels, 2) << describe_step(v);
      EXPECT_EQ(v.all_to_all.layered.kernels, 0) << describe_step(v);
    }
    EXPECT_LE(v.all_to_all.exposed_ns, v.all_to_all.a2a_ns / 100) << describe_step(v);
  }
  EXPECT_TRUE(a.result.findings.empty()) << describe_findings(a.result);
}

// ---- throttle with NVML samples --------------------------------------------------------------------

struct ClockPlan {
  int64_t from_step = 7;        // steps >= from_step get the `after` values
  int64_t clock_before_mhz = 1980;
  int64_t clock_after_mhz = 1980;
  uint64_t reasons_after = 0;
  int64_t period_ns = 10'000'000;  // sampling period
};

// Adds the NVML sampler's events over the whole run, as the live sampler submits them.
void add_nvml_samples(synthetic::SyntheticRun& run, const ClockPlan& plan) {
  const int64_t first = run.truth.front().start_ns - 200'000'000;
  const int64_t last = run.truth.back().end_ns + 200'000'000;
  int64_t after_from = last;
  for (const synthetic::StepTruth& t : run.truth) {
    if (t.step == plan.from_step) after_from = t.start_ns;
  }
  auto sample = [&](GpuMetric m, int64_t t, uint64_t value) {
    Event& e = run.trace.add(EventKind::kRange, gpu_sample_name(m), t, t);
    e.bytes = value;
    e.device = run.config.device;
  };
  for (int64_t t = first; t < last; t += plan.period_ns) {
    const bool after = t >= after_from;
    sample(GpuMetric::kSmClockMhz, t, static_cast<uint64_t>(after ? plan.clock_after_mhz : plan.clock_before_mhz));
    sample(GpuMetric::kMaxSmClockMhz, t, 1980);
    sample(GpuMetric::kTemperatureC, t, after && plan.reasons_after != 0 ? 87 : 62);
    sample(GpuMetric::kPowerMw, t, after && plan.reasons_after != 0 ? 700'000 : 540'000);
    if (after && plan.reasons_after != 0) sample(GpuMetric::kClockEventReasons, t, plan.reasons_after);
  }
}

AnalyzedRun throttled_run(double factor, const ClockPlan& plan) {
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  synthetic::inject_throttle(run, plan.from_step, factor);
  add_nvml_samples(run, plan);
  AnalyzedRun a{std::move(run), {}};
  a.result = analyze(a.run.trace);
  return a;
}

TEST(ThrottleNvmlScenario, AClockDropConfirmsTheSlowdownAndTheFindingCitesIt) {
  const AnalyzedRun a = throttled_run(1.3, {.clock_after_mhz = 1410, .reasons_after = clock_reason::kSwPowerCap});
  const auto found = a.findings("throttle");
  ASSERT_GE(found.size(), 5u) << describe_findings(a.result);
  for (const Finding& f : found) {
    SCOPED_TRACE(f.message);
    EXPECT_GE(f.step, 7);
    EXPECT_EQ(evidence<int64_t>(f, "sm_clock_mhz"), 1410);
    EXPECT_EQ(evidence<int64_t>(f, "sm_clock_min_mhz"), 1410);
    EXPECT_EQ(evidence<int64_t>(f, "reference_sm_clock_mhz"), 1980);
    EXPECT_EQ(evidence<int64_t>(f, "max_clock_mhz"), 1980);
    EXPECT_EQ(evidence<int64_t>(f, "temperature_c"), 87);
    EXPECT_NEAR(evidence<double>(f, "power_w"), 700.0, 1e-9);
    EXPECT_EQ(evidence<std::string>(f, "throttle_reasons"), "sw_power_cap");
    EXPECT_NE(f.message.find("NVML: SM clock 1410 MHz"), std::string::npos);
    EXPECT_NE(f.message.find("sw_power_cap"), std::string::npos);
  }
}

TEST(ThrottleNvmlScenario, SlowSamplingStillGivesEveryStepItsClock) {
  // 10 Hz: most ~33 ms steps hold no sample; they take the samples within one period around them.
  const AnalyzedRun a = throttled_run(1.3, {.clock_after_mhz = 1410, .period_ns = 100'000'000});
  const auto found = a.findings("throttle");
  ASSERT_GE(found.size(), 5u) << describe_findings(a.result);
  for (const Finding& f : found) {
    EXPECT_GE(evidence<int64_t>(f, "clock_samples"), 1);
    EXPECT_LT(evidence<int64_t>(f, "sm_clock_mhz"), 1980) << f.message;
  }
  for (const StepView& v : a.result.steps) EXPECT_GE(v.gpu_clocks.samples, 1) << describe_step(v);
}

TEST(ThrottleNvmlScenario, SlowerKernelsAtASteadyClockAreNotThrottling) {
  // The same slowdown with the clock at its baseline and no throttle reason: something else.
  const AnalyzedRun a = throttled_run(1.3, {});
  EXPECT_EQ(a.findings_of("throttle"), 0u) << describe_findings(a.result);
  const AnalyzedRun without = throttled_run(1.0, {});  // and no slowdown at all
  EXPECT_TRUE(without.result.findings.empty()) << describe_findings(without.result);
}

TEST(ThrottleNvmlScenario, ALowerClockWithoutSlowerKernelsIsSilent) {
  const AnalyzedRun a = throttled_run(1.0, {.clock_after_mhz = 1410, .reasons_after = clock_reason::kSwPowerCap});
  EXPECT_EQ(a.findings_of("throttle"), 0u) << describe_findings(a.result);
}

TEST(ThrottleNvmlScenario, HealthyScenariosWithSamplesStaySilent) {
  for (const char* name : {"gpu_bound", "ddp_overlap", "moe_overlapped_a2a", "recsys_overlapped_a2a"}) {
    synthetic::SyntheticRun run = synthetic::make_scenario(name, {.steps = kSteps});
    add_nvml_samples(run, {});
    const RankResult r = analyze(run.trace);
    EXPECT_TRUE(r.findings.empty()) << name << "\n" << describe_findings(r);
    for (const StepView& v : r.steps) EXPECT_EQ(v.gpu_clocks.sm_clock_median_mhz, 1980) << name;
  }
}

}  // namespace
}  // namespace stepwatch::scenario
