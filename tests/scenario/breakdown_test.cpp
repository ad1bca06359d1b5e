// Every scenario, every step: the StepView's busy sets and breakdown against the model's ground
// truth, and the "where did the step time go" invariant
//   compute_ns + exposed_comm_ns + copy_only_ns + idle.total() == duration_ns().
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "scenario_support.h"

namespace stepwatch::scenario {
namespace {

struct Case {
  std::string scenario;
  synthetic::ScenarioOptions options;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.scenario + "_seed" + std::to_string(info.param.options.seed) + "_mag" +
                  std::to_string(static_cast<int>(info.param.options.magnitude * 10));
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const std::string& name : synthetic::scenario_names()) {
    cases.push_back({name, {.steps = 8}});
    cases.push_back({name, {.steps = 5, .magnitude = 2.0, .seed = 7, .first_step = 100}});
    cases.push_back({name, {.steps = 5, .magnitude = 0.2, .seed = 3}});
  }
  for (const char* name : {"item_sync+no_marks", "serialized_allreduce+no_marks", "slow_dataloader+no_marks"}) {
    cases.push_back({name, {.steps = 4}});
  }
  return cases;
}

class Breakdown : public ::testing::TestWithParam<Case> {};

TEST_P(Breakdown, AddsUpToTheStepOnEveryStep) {
  const AnalyzedRun a = analyze_scenario(GetParam().scenario, GetParam().options);
  ASSERT_FALSE(a.result.steps.empty());
  for (const StepView& v : a.result.steps) {
    SCOPED_TRACE(describe_step(v));
    EXPECT_EQ(v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total(), v.duration_ns());
    EXPECT_EQ(v.busy_ns + v.idle.total(), v.duration_ns());
    int64_t counted_ns = 0;
    for (const GapRecord& g : v.gaps) {
      counted_ns += g.counted_ns;
      EXPECT_EQ(g.parts.total(), g.counted_ns);
    }
    EXPECT_EQ(counted_ns, v.idle.total());
    for (IdleCause c : kIdleCauses) EXPECT_GE(v.idle[c], 0) << to_string(c);
  }
}

// Range-marked scenarios: one StepView per ProfilerStep range, on the model's windows, with the
// model's numbers. The unions are pure interval arithmetic over the same records, so they must
// match exactly; only the attribution of idle time to causes gets the 5% tolerance.
TEST_P(Breakdown, MatchesTheModelsGroundTruth) {
  const AnalyzedRun a = analyze_scenario(GetParam().scenario, GetParam().options);
  if (!a.run.config.step_ranges) {
    // Steps inferred from the optimizer ranges (step_inference.h): compare each with the truth of
    // its window.
    ASSERT_GE(a.result.steps.size(), a.run.truth.size() - 1);
    for (const StepView& v : a.result.steps) {
      SCOPED_TRACE(describe_step(v));
      EXPECT_EQ(v.source, StepSource::kInferred);
      const synthetic::StepTruth t = a.run.truth_for_window(v.start_ns, v.end_ns);
      EXPECT_EQ(v.compute_ns, t.compute_ns);
      EXPECT_EQ(v.comm_ns, t.comm_ns);
      EXPECT_TRUE(within_5_percent(v.exposed_comm_ns, t.exposed_comm_ns));
      EXPECT_EQ(v.copy_only_ns, t.copy_only_ns);
      EXPECT_EQ(v.idle.total(), t.idle_ns);
    }
    return;
  }
  ASSERT_EQ(a.result.steps.size(), a.run.truth.size());
  EXPECT_EQ(a.result.segmentation.source, StepSource::kRange);
  for (size_t i = 0; i < a.run.truth.size(); ++i) {
    const StepView& v = a.result.steps[i];
    const synthetic::StepTruth& t = a.run.truth[i];
    SCOPED_TRACE(describe_step(v));
    EXPECT_EQ(v.step, t.step);
    EXPECT_EQ(v.start_ns, t.start_ns);
    EXPECT_EQ(v.end_ns, t.end_ns);
    EXPECT_EQ(v.compute_ns, t.compute_ns);
    EXPECT_EQ(v.comm_ns, t.comm_ns);
    EXPECT_TRUE(within_5_percent(v.exposed_comm_ns, t.exposed_comm_ns)) << "exposed comm";
    EXPECT_EQ(v.copy_ns, t.copy_ns);
    EXPECT_EQ(v.copy_only_ns, t.copy_only_ns);
    EXPECT_EQ(v.busy_ns, t.busy_ns);
    EXPECT_EQ(v.idle.total(), t.idle_ns);
    EXPECT_EQ(v.data_wait_ns, t.data_wait_ns);
    EXPECT_EQ(v.blocked_idle_ns, t.blocked_idle_ns);
    EXPECT_EQ(v.kernels, t.kernels);
    EXPECT_TRUE(within_5_percent(v.idle[IdleCause::kSync], t.sync_idle_ns)) << "sync idle";
    EXPECT_TRUE(within_5_percent(v.idle[IdleCause::kInput], t.input_idle_ns)) << "input idle";
  }
}

INSTANTIATE_TEST_SUITE_P(AllScenarios, Breakdown, ::testing::ValuesIn(all_cases()), case_name);

TEST(Segmentation, StepNumbersComeFromTheProfilerStepRanges) {
  const AnalyzedRun a = analyze_scenario("gpu_bound", {.steps = 4, .first_step = 250});
  ASSERT_EQ(a.result.steps.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(a.result.steps[i].step, 250 + static_cast<int64_t>(i));
}

// The model itself: a GPU-bound loop keeps the host a full launch queue ahead (launch calls
// block), and a `.item()` drains that queue. Guards the scenarios' premises, not the analysis.
TEST(SyntheticModel, GpuBoundHostRunsAheadUntilTheLaunchQueueIsFull) {
  const synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 4});
  int64_t longest_launch_ns = 0;
  for (const Event& e : run.trace.events) {
    if (e.kind == EventKind::kApiCall && e.api_class() == ApiClass::kLaunch) {
      longest_launch_ns = std::max(longest_launch_ns, e.duration_ns());
    }
  }
  EXPECT_GT(longest_launch_ns, 50'000) << "launch calls should block on the full queue";
  for (const synthetic::StepTruth& t : run.truth) EXPECT_EQ(t.idle_ns, 0) << "step " << t.step;
}

TEST(SyntheticModel, RecordsOnAStreamNeverOverlapAndFollowTheirLaunch) {
  for (const std::string& name : synthetic::scenario_names()) {
    SCOPED_TRACE(name);
    const synthetic::SyntheticRun run = synthetic::make_scenario(name, {.steps = 3});
    std::map<uint64_t, const Event*> calls;
    std::map<uint32_t, std::vector<const Event*>> by_stream;
    for (const Event& e : run.trace.events) {
      if (e.kind == EventKind::kApiCall) calls[e.correlation] = &e;
      if (e.is_gpu_record()) by_stream[e.stream].push_back(&e);
    }
    for (auto& [stream, records] : by_stream) {
      std::sort(records.begin(), records.end(), [](const Event* x, const Event* y) { return x->start_ns < y->start_ns; });
      for (size_t i = 1; i < records.size(); ++i) EXPECT_GE(records[i]->start_ns, records[i - 1]->end_ns);
      for (const Event* r : records) {
        auto it = calls.find(r->correlation);
        if (it != calls.end()) {
          EXPECT_GT(r->start_ns, it->second->start_ns);
        }
      }
    }
  }
}

}  // namespace
}  // namespace stepwatch::scenario
