// The host side of idle time against the synthetic scenarios (issue 14, items 1 and 2): host_bound
// on a step whose host does CPU work of its own, launch_bound judged on the launch lag (a compiled
// model's 22 µs kernels), and rule 2 amended — an inference loop whose iteration ends with a tiny
// DtoH copy and then waits for the DataLoader is input-starved, not hidden-synced. Each fires with
// the model's truth as its cost and stays silent on the other scenarios.
#include <gtest/gtest.h>

#include <string>

#include "evidence_support.h"
#include "scenario_support.h"

namespace stepwatch::scenario {
namespace {

constexpr int kSteps = 8;

void expect_silent(const AnalyzedRun& a, const std::string& detector) {
  EXPECT_EQ(a.findings_of(detector), 0u) << detector << " fired on " << a.run.config.scenario << ":\n"
                                         << describe_findings(a.result);
}

const synthetic::StepTruth& truth_of(const AnalyzedRun& a, int64_t step) {
  return a.run.truth.at(static_cast<size_t>(step - a.run.config.first_step));
}

TEST(HostBoundScenario, FiresWithTheHostWorkAsCostAndNamesIt) {
  const AnalyzedRun a = analyze_scenario("host_bound", {.steps = kSteps});
  const auto found = a.findings("host_bound");
  EXPECT_GE(found.size(), static_cast<size_t>(kSteps - 1)) << describe_findings(a.result);
  for (const Finding& f : found) {
    const int64_t truth = truth_of(a, f.step).host_work_idle_ns;
    EXPECT_GT(truth, 0);
    EXPECT_NEAR(f.cost_ms, double(truth) / 1e6, 0.10 * double(truth) / 1e6) << f.message;
    const auto names = evidence<std::vector<std::string>>(f, "host_activity");
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names.front(), "unflatten_dense_tensors") << f.message;
    EXPECT_NE(f.message.find("unflatten_dense_tensors"), std::string::npos) << f.message;
  }
  for (const char* other : {"launch_bound", "hidden_sync", "input_starvation", "recompilation", "gc_pause"}) {
    expect_silent(a, other);
  }
}

TEST(HostBoundScenario, SilentBelowTheCommonRuleAndOnEveryOtherScenario) {
  // 2 ms of host work is hidden by the queued GPU work.
  expect_silent(analyze_scenario("host_bound", {.steps = kSteps, .magnitude = 0.05}), "host_bound");
  for (const std::string& name : synthetic::scenario_names()) {
    if (name == "host_bound") continue;
    expect_silent(analyze_scenario(name, {.steps = 4}), "host_bound");
  }
}

// CPU work chopped into pieces between kernels: 400 µs of Python before each 80 µs kernel, the
// launch call itself 6 µs (1.5% of the step). No launch-lag evidence: the short gaps are host work
// (host_bound), not per-op dispatch (launch_bound).
TEST(HostBoundScenario, CpuWorkBetweenEveryKernelIsHostBoundNotLaunchBound) {
  synthetic::WorkloadConfig c = synthetic::scenario_config("gpu_bound", {.steps = kSteps});
  c.kernel_ns = 80'000;
  c.host_gap_ns = 400'000;
  AnalyzedRun a{synthetic::generate(c), {}};
  a.result = analyze(a.run.trace);
  const auto found = a.findings("host_bound");
  EXPECT_GE(found.size(), static_cast<size_t>(kSteps - 1)) << describe_findings(a.result);
  for (const Finding& f : found) {
    const int64_t truth = truth_of(a, f.step).launch_idle_ns;  // the GPU idle while the host issued work
    EXPECT_NEAR(f.cost_ms, double(truth) / 1e6, 0.10 * double(truth) / 1e6) << f.message;
    EXPECT_GT(evidence<double>(f, "short_gap_host_ms"), 0.9 * f.cost_ms) << f.message;
  }
  expect_silent(a, "launch_bound");
}

TEST(LaunchBoundScenario, JudgesTheLaunchLagOfACompiledModel) {
  const AnalyzedRun a = analyze_scenario("compiled_launch_bound", {.steps = kSteps});
  const auto found = a.findings("launch_bound");
  EXPECT_GE(found.size(), static_cast<size_t>(kSteps - 1)) << describe_findings(a.result);
  for (const Finding& f : found) {
    EXPECT_GT(evidence<double>(f, "median_kernel_us"), 20.0);  // over the catalog's 20 µs
    EXPECT_GE(evidence<double>(f, "prompt_start_pct"), 50.0);
    const int64_t truth = truth_of(a, f.step).launch_idle_ns;
    EXPECT_NEAR(f.cost_ms, double(truth) / 1e6, 0.10 * double(truth) / 1e6) << f.message;
  }
  expect_silent(a, "host_bound");
  // The same model with the host ahead of the GPU (no Python wrapper): GPU-bound, silent.
  expect_silent(analyze_scenario("compiled_launch_bound", {.steps = kSteps, .magnitude = 0.0}), "launch_bound");
}

TEST(InputAfterSync, AnInferenceLoopWaitingForDataIsInputStarvedNotHiddenSynced) {
  const AnalyzedRun a = analyze_scenario("inference_input", {.steps = kSteps});
  const auto found = a.findings("input_starvation");
  EXPECT_GE(found.size(), static_cast<size_t>(kSteps - 1)) << describe_findings(a.result);
  for (const Finding& f : found) {
    const synthetic::StepTruth& t = truth_of(a, f.step);
    EXPECT_GT(f.cost_ms, 100.0);
    EXPECT_NEAR(f.cost_ms, double(t.input_idle_ns) / 1e6, 0.05 * double(t.input_idle_ns) / 1e6) << f.message;
  }
  for (const StepView& v : a.result.steps) {
    EXPECT_LT(v.idle[IdleCause::kSync], 1'000'000) << describe_step(v);
    EXPECT_EQ(v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total(), v.duration_ns());
  }
  expect_silent(a, "hidden_sync");
}

}  // namespace
}  // namespace stepwatch::scenario
