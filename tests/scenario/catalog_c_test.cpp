// The catalog's kernel-duration faults — throttle, overlap_slowdown, straggler — injected into
// generated runs by the stretch transforms (synthetic/transforms_c.h), and automatic step
// inference on runs whose step ranges (and optimizer ranges) were removed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "scenario_support.h"
#include "synthetic/transforms_c.h"
#include "evidence_support.h"

namespace stepwatch::scenario {
namespace {

using synthetic::InjectedSlowdown;
using synthetic::StepTruth;
using synthetic::SyntheticRun;

constexpr int kSteps = 12;
constexpr std::string_view kOptimizerRange = "Optimizer.step#AdamW.step";

struct FaultRun {
  AnalyzedRun a;
  std::vector<InjectedSlowdown> injected;
  // Injected extra GPU time by the step whose window the record starts in.
  std::map<int64_t, int64_t> extra_by_step() const {
    std::map<int64_t, int64_t> m;
    for (const InjectedSlowdown& s : injected) m[s.step] += s.extra_ns;
    return m;
  }
};

FaultRun analyzed(SyntheticRun run, std::vector<InjectedSlowdown> injected) {
  FaultRun f{{std::move(run), {}}, std::move(injected)};
  f.a.result = analyze(f.a.run.trace);
  return f;
}

::testing::AssertionResult within(double cost_ms, int64_t truth_ns, double tolerance) {
  const double truth_ms = double(truth_ns) / 1e6;
  if (std::fabs(cost_ms - truth_ms) <= tolerance * truth_ms) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "cost " << cost_ms << " ms, injected " << truth_ms << " ms";
}

void expect_silent(const AnalyzedRun& a, const std::string& detector, const std::string& what) {
  EXPECT_EQ(a.findings_of(detector), 0u) << detector << " fired on " << what << ":\n" << describe_findings(a.result);
}

const char* const kSteadyFaults[] = {"slow_dataloader", "item_sync", "pageable_copy", "serialized_allreduce",
                                     "launch_bound", "sync_copy", "allocator_churn"};

FaultRun throttle_run(double factor, int64_t from_step = 7) {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto injected = synthetic::inject_throttle(run, from_step, factor);
  return analyzed(std::move(run), std::move(injected));
}

FaultRun overlap_run(double factor) {
  SyntheticRun run = synthetic::make_scenario("ddp_overlap", {.steps = kSteps});
  auto injected = synthetic::inject_overlap_slowdown(run, factor);
  return analyzed(std::move(run), std::move(injected));
}

FaultRun straggler_run(double factor, const std::vector<int64_t>& steps = {6, 10}) {
  SyntheticRun run = synthetic::make_scenario("ddp_overlap", {.steps = kSteps});
  auto injected = synthetic::inject_straggler(run, steps, factor);
  return analyzed(std::move(run), std::move(injected));
}

// ---- the transforms keep the truth ---------------------------------------------------------------

TEST(CatalogCTransforms, StepViewsMatchTheTruthAfterStretching) {
  for (FaultRun f : {throttle_run(1.3), overlap_run(1.6), straggler_run(3.0)}) {
    const AnalyzedRun& a = f.a;
    SCOPED_TRACE(a.run.config.scenario);
    ASSERT_EQ(a.result.steps.size(), a.run.truth.size());
    for (size_t i = 0; i < a.run.truth.size(); ++i) {
      const StepView& v = a.result.steps[i];
      const StepTruth& t = a.run.truth[i];
      SCOPED_TRACE(describe_step(v));
      EXPECT_EQ(v.start_ns, t.start_ns);
      EXPECT_EQ(v.end_ns, t.end_ns);
      EXPECT_EQ(v.compute_ns, t.compute_ns);
      EXPECT_EQ(v.comm_ns, t.comm_ns);
      EXPECT_TRUE(within_5_percent(v.idle.total(), t.idle_ns));
    }
  }
}

// ---- throttle --------------------------------------------------------------------------------------

TEST(ThrottleScenario, FiresOnTheUniformlySlowerStepsWithTheExtraKernelTimeAsCost) {
  const FaultRun f = throttle_run(1.3);
  const auto flagged = f.a.steps_flagged_by("throttle");
  const auto extra = f.extra_by_step();
  for (int64_t s : flagged) EXPECT_GE(s, 7) << describe_findings(f.a.result);
  EXPECT_GE(flagged.size(), 5u) << describe_findings(f.a.result);
  for (const Finding& x : f.a.findings("throttle")) {
    // The reference is a median of noisy per-step means (±50% per launch): the cost is within 30%.
    EXPECT_TRUE(within(x.cost_ms, extra.at(x.step), 0.3)) << "step " << x.step;
    EXPECT_GE(evidence<int64_t>(x, "slowed_kernels"), 2 * evidence<int64_t>(x, "compared_kernels") / 3);
    EXPECT_GE(evidence<double>(x, "median_slowdown_pct"), 15.0);
    EXPECT_LE(evidence<double>(x, "median_slowdown_pct"), 50.0);
    EXPECT_NE(x.message.find("throttling"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("nvidia-smi dmon -s puct"), std::string::npos) << x.message;
  }
}

TEST(ThrottleScenario, SilentBelowFifteenPercent) {
  expect_silent(throttle_run(1.08).a, "throttle", "an 8% slowdown");
}

TEST(ThrottleScenario, SilentWhenTheSlowerStepsAlsoGrowIdle) {
  // The same slowdown, plus a GPU-side wait in each slow step: not a clock problem alone.
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto injected = synthetic::inject_throttle(run, 7, 1.3);
  std::vector<synthetic::Stretch> waits;
  for (const StepTruth& t : run.truth) {
    if (t.step < 7) continue;
    for (const Event& e : run.trace.events) {
      if (e.is_compute_kernel() && e.start_ns >= t.start_ns + t.duration_ns() / 2) {
        waits.push_back({e.start_ns, 0});
        break;
      }
    }
  }
  // A gap on the GPU: move everything from that kernel on by 15 ms (an anchor at its start moves it).
  for (auto& w : waits) w.extra_ns = 15'000'000;
  synthetic::apply_stretches(run, waits);
  const FaultRun f = analyzed(std::move(run), std::move(injected));
  for (int64_t s = 7; s <= kSteps; ++s) {
    EXPECT_GT(f.a.run.truth[static_cast<size_t>(s - 1)].idle_ns, 10'000'000) << "premise: step " << s;
  }
  expect_silent(f.a, "throttle", "slow kernels with new idle");
}

TEST(ThrottleScenario, SilentOnOtherFaults) {
  for (const char* name : kSteadyFaults) expect_silent(analyze_scenario(name, {.steps = kSteps}), "throttle", name);
  expect_silent(overlap_run(1.6).a, "throttle", "overlap_slowdown");
  expect_silent(straggler_run(3.0).a, "throttle", "straggler");
}

// ---- overlap_slowdown ------------------------------------------------------------------------------

TEST(OverlapSlowdownScenario, FiresWhenOverlappedComputeKernelsRunLonger) {
  const FaultRun f = overlap_run(1.6);
  const auto flagged = f.a.steps_flagged_by("overlap_slowdown");
  EXPECT_GE(flagged.size(), static_cast<size_t>(kSteps - 2)) << describe_findings(f.a.result);
  const auto extra = f.extra_by_step();
  for (const Finding& x : f.a.findings("overlap_slowdown")) {
    ASSERT_TRUE(extra.count(x.step)) << x.step;
    EXPECT_TRUE(within(x.cost_ms, extra.at(x.step), 0.35)) << "step " << x.step;
    EXPECT_GE(evidence<double>(x, "overlapped_ratio"), 1.3);
    EXPECT_NE(x.message.find("NCCL_MAX_NCHANNELS"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("stream-priority inversion"), std::string::npos) << x.message;
  }
}

TEST(OverlapSlowdownScenario, SilentOnASmallSlowdownAndWithoutOverlap) {
  expect_silent(overlap_run(1.1).a, "overlap_slowdown", "a 10% slowdown");
  for (const char* name : kSteadyFaults) {
    expect_silent(analyze_scenario(name, {.steps = kSteps}), "overlap_slowdown", name);
  }
  expect_silent(throttle_run(1.3).a, "overlap_slowdown", "throttle");
  expect_silent(straggler_run(3.0).a, "overlap_slowdown", "straggler");
}

// ---- straggler -------------------------------------------------------------------------------------

TEST(StragglerScenario, FiresOnTheStepsWhoseCollectivesWaitedForALatePeer) {
  const FaultRun f = straggler_run(3.0);
  EXPECT_EQ(f.a.steps_flagged_by("straggler"), (std::set<int64_t>{6, 10})) << describe_findings(f.a.result);
  for (const Finding& x : f.a.findings("straggler")) {
    EXPECT_GE(evidence<double>(x, "ratio"), 2.0);
    EXPECT_GT(evidence<double>(x, "best_ms"), 0.0);
    EXPECT_EQ(evidence<std::vector<std::string>>(x, "collectives"), (std::vector<std::string>{"AllReduce"}));
    EXPECT_GT(x.cost_ms, 0.0);
    EXPECT_LE(x.cost_ms, double(f.extra_by_step().at(x.step)) / 1e6 * 1.05);
    EXPECT_NE(x.message.find("late peer"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("other ranks' traces"), std::string::npos) << x.message;
  }
}

TEST(StragglerScenario, SilentOnASmallDelayAndOnSteadyCollectives) {
  expect_silent(straggler_run(1.5).a, "straggler", "1.5x collectives");
  for (const char* name : kSteadyFaults) expect_silent(analyze_scenario(name, {.steps = kSteps}), "straggler", name);
  expect_silent(throttle_run(1.3).a, "straggler", "throttle");
  expect_silent(overlap_run(1.6).a, "straggler", "overlap_slowdown");
}

// ---- no_step_marks: automatic step inference ---------------------------------------------------------

// The inferred windows against the model's: count within ±1, and every inferred window matches a
// truth window to within 10% of a step at both ends.
void expect_aligned(const AnalyzedRun& a, std::string_view method) {
  const RankResult& r = a.result;
  ASSERT_EQ(r.segmentation.source, StepSource::kInferred) << r.segmentation.matched_name;
  EXPECT_EQ(r.segmentation.inferred_from, method) << r.segmentation.matched_name;
  const auto truth_n = static_cast<int64_t>(a.run.truth.size());
  EXPECT_LE(std::llabs(static_cast<int64_t>(r.steps.size()) - truth_n), 1) << r.segmentation.matched_name;
  // The host's windows, or the same steps as the GPU ran them when it runs behind the host.
  const auto gpu_windows = gpu_aligned_truth(a.run);
  for (const StepView& v : r.steps) {
    EXPECT_EQ(v.source, StepSource::kInferred);
    bool matched = false;
    for (size_t k = 0; k < a.run.truth.size(); ++k) {
      const StepTruth& t = a.run.truth[k];
      const double tol = 0.1 * double(t.duration_ns());
      auto near = [&](int64_t s, int64_t e) {
        return std::fabs(double(v.start_ns - s)) <= tol && std::fabs(double(v.end_ns - e)) <= tol;
      };
      if (near(t.start_ns, t.end_ns) || near(gpu_windows[k].first, gpu_windows[k].second)) matched = true;
    }
    EXPECT_TRUE(matched) << "inferred step " << v.step << " [" << v.start_ns << ", " << v.end_ns
                         << ") matches no truth window; " << r.segmentation.matched_name;
  }
  const auto found = a.findings("no_step_marks");
  ASSERT_EQ(found.size(), 1u) << describe_findings(r);
  EXPECT_EQ(found[0].severity, Severity::kInfo);
  EXPECT_EQ(evidence<std::string>(found[0], "inferred_from"), std::string(method));
  EXPECT_EQ(evidence<int64_t>(found[0], "inferred_steps"), static_cast<int64_t>(r.steps.size()));
  EXPECT_NE(found[0].message.find("were inferred from"), std::string::npos) << found[0].message;
}

const char* const kNoMarks[] = {"no_marks",           "item_sync+no_marks",      "serialized_allreduce+no_marks",
                                "ddp_overlap+no_marks", "slow_dataloader+no_marks", "pageable_copy+no_marks",
                                "sync_copy+no_marks",   "launch_bound+no_marks"};

TEST(StepInferenceScenario, OptimizerRangesGiveTheLoopsSteps) {
  for (const char* name : kNoMarks) {
    SCOPED_TRACE(name);
    expect_aligned(analyze_scenario(name, {.steps = 8}), "optimizer_ranges");
  }
}

TEST(StepInferenceScenario, WithoutOptimizerRangesThePeriodOfTheKernelSequenceGivesThem) {
  for (const char* name : kNoMarks) {
    SCOPED_TRACE(name);
    AnalyzedRun a{synthetic::make_scenario(name, {.steps = 8}), {}};
    synthetic::remove_ranges(a.run, kOptimizerRange);
    a.result = analyze(a.run.trace);
    expect_aligned(a, "kernel_period");
    EXPECT_GT(a.result.segmentation.inferred_period, 100) << a.result.segmentation.matched_name;
  }
}

TEST(StepInferenceScenario, TheFaultsAreStillFoundOnInferredSteps) {
  const AnalyzedRun sync = analyze_scenario("item_sync+no_marks", {.steps = 8});
  EXPECT_GE(sync.steps_flagged_by("hidden_sync").size(), 6u) << describe_findings(sync.result);
  AnalyzedRun allreduce{synthetic::make_scenario("serialized_allreduce+no_marks", {.steps = 8}), {}};
  synthetic::remove_ranges(allreduce.run, kOptimizerRange);
  allreduce.result = analyze(allreduce.run.trace);
  EXPECT_GE(allreduce.steps_flagged_by("exposed_collective").size(), 6u) << describe_findings(allreduce.result);
}

TEST(StepInferenceScenario, MarkedRunsAreNotInferred) {
  for (const char* name : {"gpu_bound", "item_sync", "ddp_overlap"}) {
    const AnalyzedRun a = analyze_scenario(name, {.steps = 4});
    EXPECT_EQ(a.result.segmentation.source, StepSource::kRange) << name;
  }
}

}  // namespace
}  // namespace stepwatch::scenario
