// host_bound on hand-built StepViews: the cost is the host part of long gaps only, the message names
// what the host was doing, the fix fits the stack; silent on dispatch gaps, syncs, input and a fed GPU.
#include <gtest/gtest.h>

#include <string>

#include "detector_test_support.h"
#include "stepwatch/core/run_summary.h"

namespace stepwatch {
namespace {

using testing::make;

std::vector<Finding> judge(const StepView& v) {
  auto d = make("host_bound");
  FindingCollector sink;
  d->on_step(v, sink);
  return sink.findings;
}

GapRecord gap(int64_t start_ns, int64_t length_ns, IdleCause cause, GapRule rule = GapRule::kHostActivity) {
  GapRecord g;
  g.start_ns = start_ns;
  g.end_ns = start_ns + length_ns;
  g.counted_ns = length_ns;
  g.rule = rule;
  g.parts[cause] = length_ns;
  return g;
}

// A 220 ms DDP step with 22% GPU busy: 160 ms of host work in two gaps (hta-nccl_parser_config-like).
StepView host_bound_step() {
  StepView v;
  v.step = 7;
  v.end_ns = 220'000'000;
  v.source = StepSource::kRange;
  v.gaps.push_back(gap(10'000'000, 100'000'000, IdleCause::kHost));
  v.gaps.push_back(gap(150'000'000, 60'000'000, IdleCause::kHost));
  v.idle[IdleCause::kHost] = 160'000'000;
  v.busy_ns = v.compute_ns = 60'000'000;
  v.host_activity = {{"unflatten_dense_tensors", 120'000'000}, {"", 30'000'000}, {"aten::copy_", 10'000'000}};
  return v;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

TEST(HostBound, CostIsTheHostPartOfLongGapsAndTheMessageNamesTheActivity) {
  StepView v = host_bound_step();
  // 300 dispatch gaps of 100 µs between kernels that start right after their launch, launch calls
  // 9% of the step: per-op launch overhead (launch_bound's domain), not this detector's.
  for (int i = 0; i < 300; ++i) v.gaps.push_back(gap(110'000'000 + i * 120'000, 100'000, IdleCause::kHost));
  v.launched_kernels = v.prompt_kernels = 300;
  v.launch_api_ns = 20'000'000;
  const auto f = judge(v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 160.0);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].tax_share, TaxShare::kOwn);
  EXPECT_TRUE(contains(f[0].message, "in 2 gaps (largest 100.0 ms)")) << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "unflatten_dense_tensors 120.0 ms, no profiler range 30.0 ms, aten::copy_ 10.0 ms"))
      << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "torch.compile(mode=\"reduce-overhead\")")) << f[0].message;
  const auto& names = std::get<std::vector<std::string>>(f[0].evidence[3].second);
  EXPECT_EQ(f[0].evidence[3].first, "host_activity");
  EXPECT_EQ(names.front(), "unflatten_dense_tensors");
}

TEST(HostBound, PlainCudaProgramsGetAFixWithoutPyTorch) {
  StepView v = host_bound_step();
  v.stack.framework = Framework::kNone;
  const auto f = judge(v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(contains(f[0].message, "torch")) << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "overlap the CPU work with GPU work")) << f[0].message;
}

// 1000 kernels, each after a short host gap of `host_us` µs (a 40 ms step): launch calls taking
// `launch_api_ms` in all, every kernel starting right after its launch.
StepView short_gap_step(int64_t host_us, int64_t launch_api_ms) {
  StepView v;
  v.end_ns = 40'000'000;
  for (int i = 0; i < 1000; ++i) v.gaps.push_back(gap(i * 40'000, host_us * 1'000, IdleCause::kHost));
  v.idle[IdleCause::kHost] = 1000 * host_us * 1'000;
  v.busy_ns = v.compute_ns = v.end_ns - v.idle.total();
  v.kernels = v.launches = v.launched_kernels = v.prompt_kernels = 1000;
  v.launch_api_ns = launch_api_ms * 1'000'000;
  v.dispatch_activity = {{"aten::view", 12'000'000}, {"", 8'000'000}};
  return v;
}

TEST(HostBound, ShortGapsWithoutLaunchLagEvidenceAreHostWork) {
  // Launch calls 2% of the step: the host is not dispatching, it is doing CPU work between kernels
  // (DDP's unflatten: many small CPU ops each launching a tiny copy). launch_bound stays silent.
  const StepView v = short_gap_step(20, 1);
  const auto f = judge(v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 20.0);
  EXPECT_TRUE(contains(f[0].message, "in 1000 short gaps between kernels (20.0 ms)")) << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "aten::view 12.0 ms")) << f[0].message;
  auto launch = make("launch_bound");
  FindingCollector sink;
  launch->on_step(v, sink);
  EXPECT_TRUE(sink.findings.empty());
}

TEST(HostBound, SilentOnDispatchGapsSyncsInputAndAFedGpu) {
  // The same gaps with launch calls 15% of the step: per-op dispatch, launch_bound's alone.
  const StepView dispatch = short_gap_step(20, 6);
  EXPECT_TRUE(judge(dispatch).empty());
  auto launch = make("launch_bound");
  FindingCollector sink;
  launch->on_step(dispatch, sink);
  EXPECT_EQ(sink.findings.size(), 1u);

  StepView drained = host_bound_step();
  for (GapRecord& g : drained.gaps) {
    g.rule = GapRule::kHostBlocked;
    g.parts = {};
    g.parts[IdleCause::kSync] = g.counted_ns;
  }
  EXPECT_TRUE(judge(drained).empty());

  StepView starving = host_bound_step();
  for (GapRecord& g : starving.gaps) {
    g.parts = {};
    g.parts[IdleCause::kInput] = g.counted_ns;
  }
  EXPECT_TRUE(judge(starving).empty());

  StepView fed;
  fed.end_ns = 40'000'000;
  fed.busy_ns = fed.compute_ns = 40'000'000;
  EXPECT_TRUE(judge(fed).empty());

  // Below the common rule: a 1.5 ms host gap in a 100 ms step.
  StepView small;
  small.end_ns = 100'000'000;
  small.gaps.push_back(gap(0, 1'500'000, IdleCause::kHost));
  EXPECT_TRUE(judge(small).empty());
}

TEST(Refinements, TheUmbrellaPointsToTheRefinementOfItsStep) {
  Finding umbrella;
  umbrella.detector = "hidden_sync";
  umbrella.message = "GPU idle 4.0 ms while the host was blocked in 3x cudaFree. Fix: something.";
  Finding refinement;
  refinement.detector = "allocator_churn";
  refinement.tax_share = TaxShare::kRefinement;
  refinement.refines = "hidden_sync";
  Finding other;
  other.detector = "input_starvation";
  other.message = "GPU idle. Fix: workers.";
  std::vector<Finding> step = {umbrella, refinement, other};
  link_refinements(step);
  EXPECT_EQ(step[0].message, "GPU idle 4.0 ms while the host was blocked in 3x cudaFree (see allocator_churn). Fix: something.");
  ASSERT_EQ(step[0].evidence.size(), 1u);
  EXPECT_EQ(step[0].evidence[0].first, "refined_by");
  EXPECT_EQ(step[2].message, "GPU idle. Fix: workers.");
}

TEST(Refinements, ARefinementWithoutItsUmbrellaCountsAsTheStepsOwn) {
  // A synchronous copy that kept the copy engine busy: sync_memcpy fires, hidden_sync (no idle) not.
  Finding refinement;
  refinement.detector = "sync_memcpy";
  refinement.cost_ms = 6.0;
  refinement.tax_share = TaxShare::kRefinement;
  refinement.refines = "hidden_sync";
  std::vector<Finding> step = {refinement};
  link_refinements(step);
  EXPECT_EQ(step[0].tax_share, TaxShare::kOwn);
  // With its umbrella it stays nested.
  Finding umbrella;
  umbrella.detector = "hidden_sync";
  umbrella.cost_ms = 8.0;
  std::vector<Finding> both = {umbrella, refinement};
  link_refinements(both);
  EXPECT_EQ(both[1].tax_share, TaxShare::kRefinement);
  // The run's totals: the detector that stood alone on a step is its own, and so is its tax.
  RunSummaryBuilder b(0);
  StepView v;
  v.end_ns = 40'000'000;
  b.add_step(v, StepStatus::kJudged, step);
  b.add_step(v, StepStatus::kJudged, both);
  const RunSummary s = b.build();
  EXPECT_EQ(s.findings.at("sync_memcpy").tax_share, TaxShare::kOwn);
  EXPECT_TRUE(s.findings.at("sync_memcpy").refines.empty());  // not nested under an umbrella
  EXPECT_DOUBLE_EQ(s.tax_ms, 6.0 + 8.0);
}

}  // namespace
}  // namespace stepwatch
