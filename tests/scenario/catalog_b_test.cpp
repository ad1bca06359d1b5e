// The catalog's trend and periodic faults — recompilation, gc_pause, checkpoint_stall,
// epoch_boundary_stall, step_variance — injected into generated runs by the trace transforms
// (synthetic/transforms.h), with known truth: each detector fires on its fault at the right
// steps with the injected cost, and stays silent on healthy loops and on the faults it does not
// name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "scenario_support.h"
#include "synthetic/transforms.h"
#include "evidence_support.h"

namespace stepwatch::scenario {
namespace {

using synthetic::InjectedStall;
using synthetic::StepTruth;
using synthetic::SyntheticRun;

constexpr int kSteps = 12;
constexpr int64_t kMs = 1'000'000;
const char* const kCatalogB[] = {"recompilation", "gc_pause", "checkpoint_stall", "epoch_boundary_stall",
                                 "step_variance"};

struct FaultRun {
  AnalyzedRun a;
  std::vector<InjectedStall> stalls;
};

FaultRun analyzed(SyntheticRun run, std::vector<InjectedStall> stalls) {
  FaultRun f{{std::move(run), {}}, std::move(stalls)};
  f.a.result = analyze(f.a.run.trace);
  return f;
}

const StepTruth& truth_of(const AnalyzedRun& a, int64_t step) {
  return a.run.truth.at(static_cast<size_t>(step - a.run.config.first_step));
}
const StepView& view_of(const AnalyzedRun& a, int64_t step) {
  return a.result.steps.at(static_cast<size_t>(step - a.run.config.first_step));
}

::testing::AssertionResult within_10_percent(double cost_ms, int64_t truth_ns) {
  const double truth_ms = double(truth_ns) / 1e6;
  if (std::fabs(cost_ms - truth_ms) <= 0.1 * truth_ms) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "cost " << cost_ms << " ms, injected truth " << truth_ms << " ms";
}

void expect_silent(const AnalyzedRun& a, const std::string& detector, const std::string& what) {
  EXPECT_EQ(a.findings_of(detector), 0u) << detector << " fired on " << what << ":\n" << describe_findings(a.result);
}

// A GPU-bound loop whose host runs only ~6 ms (32 launches) ahead of the GPU — as in any loop
// that syncs once a step (loss.item()). In `gpu_bound` the host runs a full 1024-record queue
// (~200 ms) ahead, which hides any host stall shorter than that from the GPU.
SyntheticRun shallow_queue_gpu_bound(int steps = kSteps, uint64_t seed = 1) {
  synthetic::WorkloadConfig c = synthetic::scenario_config("gpu_bound", {.steps = steps, .seed = seed});
  c.launch_queue_depth = 32;
  return synthetic::generate(c);
}

// ---- the fault runs -------------------------------------------------------------------------------

// Two recompilations, 20x the median step, in a gpu_bound run (~200 ms of queued work hides the
// first 200 ms of the first one from the GPU).
FaultRun recompilation_run() {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto stalls = synthetic::inject_recompilation(run, {4, 9}, 20.0);
  return analyzed(std::move(run), std::move(stalls));
}

// 40 ms GC pauses on an irregular subset of steps.
FaultRun gc_run(bool gc_ranges) {
  SyntheticRun run = shallow_queue_gpu_bound();
  auto stalls = synthetic::inject_gc_pauses(run, {4, 7, 8, 11}, 40 * kMs, gc_ranges);
  return analyzed(std::move(run), std::move(stalls));
}

// A checkpoint every 4 steps: 8 x 128 MiB device-to-pageable copies (~180 ms) + a 100 ms write.
FaultRun checkpoint_run() {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto stalls = synthetic::inject_checkpoints(run, synthetic::every_nth_step(run, 4));
  return analyzed(std::move(run), std::move(stalls));
}

// An epoch every 4 steps, the workers re-created at each boundary (400 ms).
FaultRun epoch_run(const char* base = "gpu_bound", int64_t respawn_ns = 400 * kMs) {
  SyntheticRun run = synthetic::make_scenario(base, {.steps = kSteps});
  auto stalls = synthetic::inject_epoch_boundaries(run, synthetic::every_nth_step(run, 4), respawn_ns);
  return analyzed(std::move(run), std::move(stalls));
}

// Step-time jitter: GPU-side delays of 4–30 ms on 7 of 12 steps (CV ~0.2–0.25).
FaultRun jitter_run(double scale = 1.0) {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  std::vector<std::pair<int64_t, int64_t>> delays = {{2, 12}, {4, 25}, {5, 4}, {7, 18}, {9, 30}, {10, 8}, {12, 15}};
  for (auto& [step, d] : delays) d = static_cast<int64_t>(double(d * kMs) * scale);
  auto stalls = synthetic::inject_gpu_jitter(run, delays);
  return analyzed(std::move(run), std::move(stalls));
}

std::map<std::string, FaultRun> all_fault_runs() {
  std::map<std::string, FaultRun> runs;
  runs.emplace("recompilation", recompilation_run());
  runs.emplace("gc_pause", gc_run(false));
  runs.emplace("gc_pause+gc_ranges", gc_run(true));
  runs.emplace("checkpoint", checkpoint_run());
  runs.emplace("epoch_boundary", epoch_run());
  runs.emplace("jitter", jitter_run());
  return runs;
}

// The generated fault scenarios: every step alike, nothing periodic or irregular.
const char* const kSteadyFaults[] = {"slow_dataloader", "item_sync", "pageable_copy", "serialized_allreduce"};

// ---- the transforms keep the truth ----------------------------------------------------------------

TEST(CatalogBTransforms, StepViewsMatchTheTruthAndTheBreakdownAddsUp) {
  for (auto& [name, f] : all_fault_runs()) {
    SCOPED_TRACE(name);
    const AnalyzedRun& a = f.a;
    ASSERT_EQ(a.result.steps.size(), a.run.truth.size());
    for (size_t i = 0; i < a.run.truth.size(); ++i) {
      const StepView& v = a.result.steps[i];
      const StepTruth& t = a.run.truth[i];
      SCOPED_TRACE(describe_step(v));
      EXPECT_EQ(v.start_ns, t.start_ns);
      EXPECT_EQ(v.end_ns, t.end_ns);
      EXPECT_EQ(v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total(), v.duration_ns());
      EXPECT_TRUE(within_5_percent(v.busy_ns, t.busy_ns));
      EXPECT_TRUE(within_5_percent(v.idle.total(), t.idle_ns));
      EXPECT_TRUE(within_5_percent(v.idle[IdleCause::kInput], t.input_idle_ns));
      EXPECT_EQ(v.data_wait_ns, t.data_wait_ns);
    }
    // Every GPU record still starts after its launch call was issued: after an enqueueing call
    // ended, after a blocking copy call began (that call returns once the copy ran).
    std::unordered_map<uint64_t, const Event*> call;
    for (const Event& e : a.run.trace.events) {
      if (e.kind == EventKind::kApiCall && e.correlation != 0) call[e.correlation] = &e;
    }
    for (const Event& e : a.run.trace.events) {
      if (!e.is_gpu_record() || !call.count(e.correlation)) continue;
      const Event& c = *call[e.correlation];
      const bool blocking = c.end_ns > e.end_ns;
      ASSERT_GE(e.start_ns, blocking ? c.start_ns : c.end_ns) << "record before its launch";
    }
  }
}

TEST(CatalogBTransforms, AHostStallShorterThanTheQueuedWorkLeavesNoGpuIdle) {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  const auto stalls = synthetic::inject_gc_pauses(run, {5}, 40 * kMs, false);
  EXPECT_EQ(stalls[0].gpu_delay_ns, 0);
  const StepTruth& t = run.truth[4];
  EXPECT_EQ(t.idle_ns, 0);
  EXPECT_GT(t.duration_ns(), 70 * kMs) << "the host window still grew by the stall";
}

// ---- recompilation ------------------------------------------------------------------------------

TEST(RecompilationScenario, FiresOnTheSawtoothStepsWithTheStallAsCost) {
  const FaultRun f = recompilation_run();
  const auto found = f.a.findings("recompilation");
  EXPECT_EQ(f.a.steps_flagged_by("recompilation"), (std::set<int64_t>{4, 9})) << describe_findings(f.a.result);
  for (const Finding& x : found) {
    const InjectedStall& s = x.step == 4 ? f.stalls[0] : f.stalls[1];
    const StepView& v = view_of(f.a, x.step);
    SCOPED_TRACE(describe_step(v));
    EXPECT_TRUE(within_10_percent(x.cost_ms, s.host_ns));
    EXPECT_EQ(x.severity, Severity::kCritical);
    EXPECT_GE(evidence<double>(x, "ratio"), 20.0);
    EXPECT_NEAR(evidence<double>(x, "host_idle_ms"), double(v.idle[IdleCause::kHost]) / 1e6, 0.001);
    EXPECT_NE(x.message.find("recompilation"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("Fix: pad or bucket input shapes"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("torch._dynamo.mark_dynamic"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("TORCH_LOGS=recompiles"), std::string::npos) << x.message;
  }
  // The first one: ~200 ms of queued work ran during the stall; the rest of it was host idle.
  EXPECT_LT(view_of(f.a, 4).idle[IdleCause::kHost], f.stalls[0].host_ns * 3 / 4);
  EXPECT_TRUE(within_5_percent(view_of(f.a, 4).idle[IdleCause::kHost], f.stalls[0].gpu_delay_ns));
}

TEST(RecompilationScenario, SilentBelowTenTimesTheMedian) {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto stalls = synthetic::inject_recompilation(run, {5, 9}, 8.0);
  const FaultRun f = analyzed(std::move(run), std::move(stalls));
  expect_silent(f.a, "recompilation", "8x steps");
}

TEST(RecompilationScenario, SilentOnOtherFaults) {
  for (auto& [name, f] : all_fault_runs()) {
    if (name != "recompilation") expect_silent(f.a, "recompilation", name);
  }
  for (const char* name : kSteadyFaults) expect_silent(analyze_scenario(name, {.steps = kSteps}), "recompilation", name);
}

// ---- gc_pause -------------------------------------------------------------------------------------

TEST(GcPauseScenario, FiresOnIrregularHostStallsWithTheGpuIdleAsCost) {
  const FaultRun f = gc_run(false);
  EXPECT_EQ(f.a.steps_flagged_by("gc_pause"), (std::set<int64_t>{4, 7, 8, 11})) << describe_findings(f.a.result);
  for (const Finding& x : f.a.findings("gc_pause")) {
    SCOPED_TRACE(describe_step(view_of(f.a, x.step)));
    // The base loop has no idle: the step's idle is the stall's.
    EXPECT_TRUE(within_10_percent(x.cost_ms, truth_of(f.a, x.step).idle_ns));
    EXPECT_EQ(evidence<int64_t>(x, "gc_confirmed"), 0);
    EXPECT_NE(x.message.find("GC pause"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("Fix: gc.disable() and gc.collect() at step boundaries"), std::string::npos);
  }
}

TEST(GcPauseScenario, ConfirmedByThePythonShimsGcPhases) {
  const FaultRun f = gc_run(true);
  EXPECT_EQ(f.a.steps_flagged_by("gc_pause"), (std::set<int64_t>{4, 7, 8, 11})) << describe_findings(f.a.result);
  for (const Finding& x : f.a.findings("gc_pause")) {
    EXPECT_EQ(evidence<int64_t>(x, "gc_confirmed"), 1);
    EXPECT_DOUBLE_EQ(evidence<double>(x, "gc_ms"), 40.0);
    EXPECT_NE(x.message.find("inside a Python GC phase"), std::string::npos) << x.message;
  }
}

TEST(GcPauseScenario, OnceTheShimReportsGcAStallWithoutAGcPhaseIsNotGc) {
  SyntheticRun run = shallow_queue_gpu_bound();
  auto stalls = synthetic::inject_gc_pauses(run, {4}, 40 * kMs, true);
  const auto unmarked = synthetic::inject_gc_pauses(run, {9}, 40 * kMs, false);
  stalls.insert(stalls.end(), unmarked.begin(), unmarked.end());
  const FaultRun f = analyzed(std::move(run), std::move(stalls));
  EXPECT_EQ(f.a.steps_flagged_by("gc_pause"), (std::set<int64_t>{4})) << describe_findings(f.a.result);
}

TEST(GcPauseScenario, SilentWhenTheLaunchQueueHidesThePause) {
  // gpu_bound's host runs ~200 ms ahead: a 40 ms pause costs the GPU nothing.
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto stalls = synthetic::inject_gc_pauses(run, {4, 7, 8, 11}, 40 * kMs, false);
  const FaultRun f = analyzed(std::move(run), std::move(stalls));
  for (int64_t step : {4, 7, 8, 11}) EXPECT_EQ(truth_of(f.a, step).idle_ns, 0);
  expect_silent(f.a, "gc_pause", "hidden pauses");
}

TEST(GcPauseScenario, SilentWhenEveryStepStallsTheLoopIsHostBound) {
  SyntheticRun run = shallow_queue_gpu_bound();
  std::vector<int64_t> every;
  for (const StepTruth& t : run.truth) every.push_back(t.step);
  auto stalls = synthetic::inject_gc_pauses(run, every, 20 * kMs, false);
  const FaultRun f = analyzed(std::move(run), std::move(stalls));
  expect_silent(f.a, "gc_pause", "a stall on every step");
}

TEST(GcPauseScenario, SilentOnOtherFaults) {
  for (auto& [name, f] : all_fault_runs()) {
    if (name.rfind("gc_pause", 0) != 0) expect_silent(f.a, "gc_pause", name);
  }
  for (const char* name : kSteadyFaults) expect_silent(analyze_scenario(name, {.steps = kSteps}), "gc_pause", name);
}

// ---- checkpoint_stall -----------------------------------------------------------------------------

TEST(CheckpointStallScenario, FiresFromTheSecondCheckpointOnWithPeriodAndTax) {
  const FaultRun f = checkpoint_run();
  EXPECT_EQ(f.a.steps_flagged_by("checkpoint_stall"), (std::set<int64_t>{8, 12})) << describe_findings(f.a.result);
  for (const Finding& x : f.a.findings("checkpoint_stall")) {
    const InjectedStall& s = x.step == 8 ? f.stalls[1] : f.stalls[2];
    SCOPED_TRACE(describe_step(view_of(f.a, x.step)));
    EXPECT_TRUE(within_10_percent(x.cost_ms, s.host_ns));
    EXPECT_EQ(evidence<int64_t>(x, "period_steps"), 4);
    EXPECT_EQ(evidence<int64_t>(x, "dtoh_bytes"), int64_t{8} * (128 << 20));
    const double interval_ns = double(truth_of(f.a, x.step).start_ns - truth_of(f.a, x.step - 4).start_ns);
    EXPECT_NEAR(evidence<double>(x, "interval_ms"), interval_ns / 1e6, 0.001);
    EXPECT_NEAR(evidence<double>(x, "tax_pct"), 100.0 * x.cost_ms * 1e6 / interval_ns, 0.01);
    EXPECT_NE(x.message.find("every 4 steps"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find("Fix: asynchronous/sharded checkpointing"), std::string::npos) << x.message;
  }
  // The umbrella still reports the drained queue on every checkpoint, the first one included.
  for (int64_t step : {4, 8, 12}) EXPECT_TRUE(f.a.steps_flagged_by("hidden_sync").count(step)) << step;
}

TEST(CheckpointStallScenario, SilentOnASingleCheckpoint) {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto stalls = synthetic::inject_checkpoints(run, {6});
  expect_silent(analyzed(std::move(run), std::move(stalls)).a, "checkpoint_stall", "one checkpoint");
}

TEST(CheckpointStallScenario, AnOccurrenceOffThePeriodIsNotReported) {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 16});
  auto stalls = synthetic::inject_checkpoints(run, {4, 10, 12, 16});
  const FaultRun f = analyzed(std::move(run), std::move(stalls));
  // 10 establishes a period of 6; 12 (2 steps) and 16 (4 steps) do not continue it.
  EXPECT_EQ(f.a.steps_flagged_by("checkpoint_stall"), (std::set<int64_t>{10})) << describe_findings(f.a.result);
}

TEST(CheckpointStallScenario, SilentOnOtherFaults) {
  for (auto& [name, f] : all_fault_runs()) {
    if (name != "checkpoint") expect_silent(f.a, "checkpoint_stall", name);
  }
  // item_sync copies 4-byte scalars device-to-host on every step.
  for (const char* name : kSteadyFaults) {
    expect_silent(analyze_scenario(name, {.steps = kSteps}), "checkpoint_stall", name);
  }
}

// ---- epoch_boundary_stall -------------------------------------------------------------------------

TEST(EpochBoundaryStallScenario, FiresFromTheSecondEpochOnWithTheInputIdleAsCost) {
  const FaultRun f = epoch_run();
  EXPECT_EQ(f.a.steps_flagged_by("epoch_boundary_stall"), (std::set<int64_t>{8, 12})) << describe_findings(f.a.result);
  for (const Finding& x : f.a.findings("epoch_boundary_stall")) {
    SCOPED_TRACE(describe_step(view_of(f.a, x.step)));
    EXPECT_TRUE(within_10_percent(x.cost_ms, truth_of(f.a, x.step).input_idle_ns));
    EXPECT_EQ(evidence<int64_t>(x, "period_steps"), 4);
    EXPECT_NE(x.message.find("persistent_workers=True"), std::string::npos) << x.message;
  }
  // input_starvation, the umbrella, reports each boundary's idle too.
  for (int64_t step : {4, 8, 12}) EXPECT_TRUE(f.a.steps_flagged_by("input_starvation").count(step)) << step;
}

TEST(EpochBoundaryStallScenario, OnTopOfALoopStarvedOnEveryStepOnlyTheSpikeCounts) {
  const FaultRun f = epoch_run("slow_dataloader");
  EXPECT_EQ(f.a.steps_flagged_by("epoch_boundary_stall"), (std::set<int64_t>{8, 12})) << describe_findings(f.a.result);
  EXPECT_GE(f.a.steps_flagged_by("input_starvation").size(), static_cast<size_t>(kSteps - 1));
  std::vector<int64_t> usual;
  for (const StepTruth& t : f.a.run.truth) {
    if ((t.step - f.a.run.config.first_step + 1) % 4 != 0) usual.push_back(t.input_idle_ns);
  }
  std::sort(usual.begin(), usual.end());
  const int64_t typical_ns = (usual[usual.size() / 2 - 1] + usual[usual.size() / 2]) / 2;
  ASSERT_GT(typical_ns, 10 * kMs) << "premise: every step waits for data";
  for (const Finding& x : f.a.findings("epoch_boundary_stall")) {
    EXPECT_TRUE(within_10_percent(x.cost_ms, truth_of(f.a, x.step).input_idle_ns - typical_ns));
  }
}

TEST(EpochBoundaryStallScenario, SilentOnASingleEpochBoundary) {
  SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = kSteps});
  auto stalls = synthetic::inject_epoch_boundaries(run, {6}, 400 * kMs);
  expect_silent(analyzed(std::move(run), std::move(stalls)).a, "epoch_boundary_stall", "one boundary");
}

TEST(EpochBoundaryStallScenario, SilentWhenTheLaunchQueueHidesTheRespawn) {
  // gpu_bound's host runs ~200 ms ahead; the three respawns together (the queue does not refill
  // in the transformed run) stay below that.
  const FaultRun f = epoch_run("gpu_bound", 50 * kMs);
  for (int64_t step : {4, 8, 12}) EXPECT_EQ(truth_of(f.a, step).input_idle_ns, 0);
  expect_silent(f.a, "epoch_boundary_stall", "hidden respawns");
}

TEST(EpochBoundaryStallScenario, SilentOnOtherFaults) {
  for (auto& [name, f] : all_fault_runs()) {
    if (name != "epoch_boundary") expect_silent(f.a, "epoch_boundary_stall", name);
  }
  for (const char* name : kSteadyFaults) {
    expect_silent(analyze_scenario(name, {.steps = kSteps}), "epoch_boundary_stall", name);
  }
}

// ---- step_variance --------------------------------------------------------------------------------

double population_cv(const std::vector<double>& x) {
  double mean = 0;
  for (double v : x) mean += v;
  mean /= double(x.size());
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  return std::sqrt(var / double(x.size())) / mean;
}

TEST(StepVarianceScenario, FiresOnceWhereTheJitterIsEstablished) {
  const FaultRun f = jitter_run();
  const auto found = f.a.findings("step_variance");
  ASSERT_EQ(found.size(), 1u) << describe_findings(f.a.result);
  // Where the truth says: the first step with >= 5 steps after the first one and CV >= 0.2.
  std::vector<double> window;
  int64_t established = -1;
  double truth_cv = 0;
  for (size_t i = 1; i < f.a.run.truth.size() && established < 0; ++i) {
    window.push_back(double(f.a.run.truth[i].duration_ns()));
    if (window.size() >= 5 && (truth_cv = population_cv(window)) >= 0.2) established = f.a.run.truth[i].step;
  }
  ASSERT_GT(established, 0) << "premise: the jitter reaches CV 0.2";
  EXPECT_EQ(found[0].step, established);
  EXPECT_NEAR(evidence<double>(found[0], "cv"), truth_cv, 0.001);
  EXPECT_EQ(evidence<int64_t>(found[0], "steps"), static_cast<int64_t>(window.size()));
  EXPECT_LT(evidence<double>(found[0], "slow_busy_share_pct"), 50.0);
  EXPECT_NE(found[0].message.find("slower by GPU idle time"), std::string::npos) << found[0].message;
  EXPECT_NE(found[0].message.find("Fix: find what makes the slow steps slow"), std::string::npos);
  // No per-step catalog detector claims a GPU-side delay.
  for (const char* id : {"recompilation", "gc_pause", "checkpoint_stall", "epoch_boundary_stall"}) {
    expect_silent(f.a, id, "jitter");
  }
}

TEST(StepVarianceScenario, ReportsEachCatalogStallOnceAsTheTrend) {
  for (auto& [name, f] : all_fault_runs()) {
    EXPECT_EQ(f.a.findings_of("step_variance"), 1u) << name << "\n" << describe_findings(f.a.result);
  }
}

TEST(StepVarianceScenario, SilentOnSteadyLoopsAndMildJitter) {
  for (const char* name : {"gpu_bound", "ddp_overlap"}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      expect_silent(analyze_scenario(name, {.steps = 24, .seed = seed}), "step_variance", name);
    }
  }
  for (const char* name : kSteadyFaults) expect_silent(analyze_scenario(name, {.steps = kSteps}), "step_variance", name);
  expect_silent(jitter_run(0.25).a, "step_variance", "jitter x 0.25");
}

// ---- healthy loops --------------------------------------------------------------------------------

TEST(CatalogBHealthy, SilentOnLongHealthyRunsAndOnTheShallowQueueBase) {
  for (const char* name : {"gpu_bound", "ddp_overlap"}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      const AnalyzedRun a = analyze_scenario(name, {.steps = 24, .seed = seed});
      for (const char* id : kCatalogB) expect_silent(a, id, name);
    }
  }
  const FaultRun base = analyzed(shallow_queue_gpu_bound(24), {});
  for (const char* id : kCatalogB) expect_silent(base.a, id, "gpu_bound with a 32-record queue");
}

}  // namespace
}  // namespace stepwatch::scenario
