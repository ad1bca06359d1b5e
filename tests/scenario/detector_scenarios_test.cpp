// Each core detector against the synthetic scenarios: it fires on its fault on (nearly) every
// step with the model's magnitude, stays silent on healthy loops, and stays silent on the other
// faults' scenarios.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "scenario_support.h"

namespace stepwatch::scenario {
namespace {

constexpr int kSteps = 8;

// "Nearly every step": at most one captured step may escape (a fault that straddles a window edge).
void expect_fires_on_nearly_every_step(const AnalyzedRun& a, const std::string& detector) {
  const std::set<int64_t> flagged = a.steps_flagged_by(detector);
  EXPECT_GE(flagged.size(), a.run.truth.size() - 1)
      << detector << " fired on " << flagged.size() << " of " << a.run.truth.size() << " steps\n"
      << describe_findings(a.result);
}

void expect_silent(const AnalyzedRun& a, const std::string& detector) {
  EXPECT_EQ(a.findings_of(detector), 0u) << detector << " fired on " << a.run.config.scenario << ":\n"
                                         << describe_findings(a.result);
}

// ---- healthy loops ----------------------------------------------------------------------------

TEST(HealthyScenarios, NoDetectorFires) {
  for (const char* name : {"gpu_bound", "ddp_overlap"}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(std::string(name) + " seed " + std::to_string(seed));
      const AnalyzedRun a = analyze_scenario(name, {.steps = kSteps, .seed = seed});
      EXPECT_TRUE(a.result.findings.empty()) << describe_findings(a.result);
      ASSERT_EQ(a.result.steps.size(), static_cast<size_t>(kSteps));
    }
  }
}

TEST(HealthyScenarios, DdpOverlapHidesAllButTheLastBucket) {
  const AnalyzedRun a = analyze_scenario("ddp_overlap", {.steps = kSteps});
  for (size_t i = 0; i < a.run.truth.size(); ++i) {
    const StepView& v = a.result.steps[i];
    SCOPED_TRACE(describe_step(v));
    EXPECT_GT(v.comm_ns, 5'000'000);
    EXPECT_TRUE(within_5_percent(v.exposed_comm_ns, a.run.truth[i].exposed_comm_ns));
    EXPECT_LT(v.exposed_comm_ns, 1'000'000);
    EXPECT_EQ(v.idle.total(), 0);
  }
}

// ---- input_starvation -------------------------------------------------------------------------

TEST(InputStarvation, FiresOnSlowDataloaderWithTheIdleTheWaitCaused) {
  const AnalyzedRun a = analyze_scenario("slow_dataloader", {.steps = kSteps});
  expect_fires_on_nearly_every_step(a, "input_starvation");
  for (size_t i = 0; i < a.run.truth.size(); ++i) {
    const StepView& v = a.result.steps[i];
    const synthetic::StepTruth& t = a.run.truth[i];
    SCOPED_TRACE(describe_step(v));
    EXPECT_GE(t.data_wait_ns * 10, v.duration_ns() * 3) << "premise: the wait is >= 30% of the step";
    EXPECT_TRUE(within_5_percent(v.idle[IdleCause::kInput], t.input_idle_ns));
    EXPECT_EQ(v.data_wait_ns, t.data_wait_ns);
  }
  for (const Finding& f : a.result.findings) {
    if (f.detector != "input_starvation") continue;
    const auto& truth = a.run.truth[static_cast<size_t>(f.step - a.run.config.first_step)];
    EXPECT_NEAR(f.cost_ms, double(truth.input_idle_ns) / 1e6, 0.05 * double(truth.input_idle_ns) / 1e6 + 0.001);
    EXPECT_EQ(f.severity, Severity::kCritical) << "~60% of the step is input idle";
  }
}

TEST(InputStarvation, SilentWhenTheLaunchQueueHidesTheWait) {
  // 3 ms of data wait in a GPU-bound loop: the GPU never runs dry.
  const AnalyzedRun a = analyze_scenario("slow_dataloader", {.steps = kSteps, .magnitude = 0.1});
  expect_silent(a, "input_starvation");
  for (const synthetic::StepTruth& t : a.run.truth) EXPECT_EQ(t.input_idle_ns, 0);
}

TEST(InputStarvation, SilentOnOtherFaults) {
  for (const char* name : {"item_sync", "pageable_copy", "serialized_allreduce"}) {
    expect_silent(analyze_scenario(name, {.steps = kSteps}), "input_starvation");
  }
}

// ---- hidden_sync --------------------------------------------------------------------------------

TEST(HiddenSync, FiresOnItemSyncsThatDrainTheQueue) {
  const AnalyzedRun a = analyze_scenario("item_sync", {.steps = kSteps});
  expect_fires_on_nearly_every_step(a, "hidden_sync");
  for (size_t i = 0; i < a.run.truth.size(); ++i) {
    const StepView& v = a.result.steps[i];
    const synthetic::StepTruth& t = a.run.truth[i];
    SCOPED_TRACE(describe_step(v));
    EXPECT_GT(t.sync_idle_ns, 0);
    EXPECT_TRUE(within_5_percent(v.idle[IdleCause::kSync], t.sync_idle_ns));
    // Both forms of `.item()`: the pageable async copy and the stream sync after a pinned copy.
    bool saw_pageable_copy = false;
    bool saw_stream_sync = false;
    for (const BlockingCallStat& b : v.blocking) {
      saw_pageable_copy |= b.api_class == ApiClass::kMemcpyAsync && b.host_memory == MemoryKind::kPageable;
      saw_stream_sync |= b.api_class == ApiClass::kStreamSync;
    }
    EXPECT_TRUE(saw_pageable_copy);
    EXPECT_TRUE(saw_stream_sync);
  }
}

TEST(HiddenSync, FiresOnABlockingPageableInputCopy) {
  const AnalyzedRun a = analyze_scenario("pageable_copy", {.steps = kSteps});
  expect_fires_on_nearly_every_step(a, "hidden_sync");
  for (size_t i = 0; i < a.run.truth.size(); ++i) {
    const StepView& v = a.result.steps[i];
    const synthetic::StepTruth& t = a.run.truth[i];
    SCOPED_TRACE(describe_step(v));
    EXPECT_TRUE(within_5_percent(v.idle[IdleCause::kSync], t.sync_idle_ns));
    EXPECT_EQ(v.copy_only_ns, t.copy_only_ns);
    ASSERT_FALSE(v.blocking.empty());
    bool saw_copy = false;
    for (const BlockingCallStat& b : v.blocking) {
      if (b.api_class != ApiClass::kMemcpyAsync) continue;
      saw_copy = true;
      EXPECT_EQ(b.host_memory, MemoryKind::kPageable);
      EXPECT_EQ(b.copy_kind, CopyKind::kHtoD);
      EXPECT_EQ(b.bytes, 64ull << 20);
    }
    EXPECT_TRUE(saw_copy);
  }
}

TEST(HiddenSync, FiresOnASynchronousCudaMemcpyToo) {
  synthetic::WorkloadConfig c = synthetic::scenario_config("pageable_copy", {.steps = kSteps});
  c.input_copy = synthetic::InputCopy::kPageableSync;
  AnalyzedRun a{synthetic::generate(c), {}};
  a.result = analyze(a.run.trace);
  expect_fires_on_nearly_every_step(a, "hidden_sync");
}

TEST(HiddenSync, SilentWhenTheHostRestartsRightAway) {
  // Syncs that drain the queue but are followed at once by new launches cost ~30 µs each.
  const AnalyzedRun a = analyze_scenario("item_sync", {.steps = kSteps, .magnitude = 0.0});
  expect_silent(a, "hidden_sync");
}

TEST(HiddenSync, SilentOnOtherFaults) {
  for (const char* name : {"slow_dataloader", "serialized_allreduce"}) {
    expect_silent(analyze_scenario(name, {.steps = kSteps}), "hidden_sync");
  }
}

// ---- exposed_collective -------------------------------------------------------------------------

TEST(ExposedCollective, FiresOnAnAllReduceSerializedAfterBackward) {
  const AnalyzedRun a = analyze_scenario("serialized_allreduce", {.steps = kSteps});
  expect_fires_on_nearly_every_step(a, "exposed_collective");
  for (size_t i = 0; i < a.run.truth.size(); ++i) {
    const StepView& v = a.result.steps[i];
    const synthetic::StepTruth& t = a.run.truth[i];
    SCOPED_TRACE(describe_step(v));
    EXPECT_TRUE(within_5_percent(v.exposed_comm_ns, t.exposed_comm_ns));
    ASSERT_FALSE(v.collectives.empty());
    EXPECT_EQ(v.collectives[0].type, CollectiveType::kAllReduce);  // from mangled ncclDevKernel names
  }
  for (const Finding& f : a.result.findings) {
    if (f.detector != "exposed_collective") continue;
    EXPECT_NE(f.message.find("AllReduce"), std::string::npos) << f.message;
  }
}

TEST(ExposedCollective, CriticalWhenTheAllReduceDominates) {
  const AnalyzedRun a = analyze_scenario("serialized_allreduce", {.steps = kSteps, .magnitude = 2.5});
  expect_fires_on_nearly_every_step(a, "exposed_collective");
  for (const Finding& f : a.result.findings) {
    if (f.detector == "exposed_collective") {
      EXPECT_EQ(f.severity, Severity::kCritical) << f.cost_pct;
    }
  }
}

TEST(ExposedCollective, SilentOnOverlappedCommAndOtherFaults) {
  // slow_dataloader runs DDP with overlapped buckets (legacy ncclKernel_ names).
  for (const char* name : {"ddp_overlap", "slow_dataloader", "item_sync", "pageable_copy"}) {
    const AnalyzedRun a = analyze_scenario(name, {.steps = kSteps});
    expect_silent(a, "exposed_collective");
  }
}

// ---- no_step_marks ------------------------------------------------------------------------------

TEST(NoStepMarks, FiresWhenTheTraceHasNoStepRanges) {
  const AnalyzedRun a = analyze_scenario("no_marks", {.steps = kSteps});
  // Steps are inferred (from the optimizer ranges); the finding says so, once.
  EXPECT_EQ(a.result.segmentation.source, StepSource::kInferred);
  EXPECT_EQ(a.findings_of("no_step_marks"), 1u) << describe_findings(a.result);
}

TEST(NoStepMarks, FiresOnFaultyScenariosWithoutRangesToo) {
  for (const char* name : {"item_sync+no_marks", "serialized_allreduce+no_marks"}) {
    const AnalyzedRun a = analyze_scenario(name, {.steps = kSteps});
    EXPECT_EQ(a.findings_of("no_step_marks"), 1u) << name << "\n" << describe_findings(a.result);
  }
}

TEST(NoStepMarks, SilentWhenStepsAreMarked) {
  for (const std::string& name : synthetic::scenario_names()) {
    if (name == "no_marks") continue;
    expect_silent(analyze_scenario(name, {.steps = 4}), "no_step_marks");
  }
}

// ---- one table: which detector fires where ------------------------------------------------------

// Among the core detectors, each fault scenario triggers its own only. (Refinements such as a
// pageable-copy detector may add records next to their umbrella; they are not judged here.)
TEST(DetectorMatrix, EachFaultScenarioTriggersExactlyItsCoreDetector) {
  const std::set<std::string> core = {"input_starvation", "hidden_sync", "exposed_collective", "no_step_marks"};
  const std::map<std::string, std::string> expected = {
      {"slow_dataloader", "input_starvation"},
      {"item_sync", "hidden_sync"},
      {"pageable_copy", "hidden_sync"},
      {"serialized_allreduce", "exposed_collective"},
  };
  for (const auto& [scenario, detector] : expected) {
    const AnalyzedRun a = analyze_scenario(scenario, {.steps = kSteps});
    for (const Finding& f : a.result.findings) {
      if (!core.count(f.detector)) continue;
      EXPECT_EQ(f.detector, detector) << scenario << ": unexpected finding\n" << describe_findings(a.result);
    }
    EXPECT_GE(a.steps_flagged_by(detector).size(), static_cast<size_t>(kSteps - 1)) << scenario;
  }
}

}  // namespace
}  // namespace stepwatch::scenario
