// throttle, overlap_slowdown, straggler and no_step_marks' inferred steps on hand-built StepView
// sequences, and step inference (core/step_inference) on hand-built traces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepwatch/core/detector.h"
#include "stepwatch/core/step_window.h"
#include "stepwatch/detectors/registry.h"
#include "detector_test_support.h"
#include "trace_builder.h"

namespace stepwatch {
namespace {

constexpr int64_t kMs = 1'000'000;

using testing::make;

// A GPU-bound step of 40 ms: 4 kernel names x `count` instances of `mean_ms` x `scale`.
StepView kernel_step(int64_t number, double scale, int count = 10, double mean_ms = 0.9) {
  StepView v;
  v.step = number;
  v.start_ns = number * 100 * kMs;
  v.source = StepSource::kRange;
  int64_t compute = 0;
  for (const char* name : {"gemm_a", "gemm_b", "softmax", "layernorm"}) {
    KernelStat k;
    k.name = name;
    k.count = count;
    k.total_ns = static_cast<int64_t>(double(count) * mean_ms * scale * 1e6);
    compute += k.total_ns;
    v.top_kernels.push_back(k);
  }
  v.compute_ns = compute;
  v.busy_ns = compute;
  v.end_ns = v.start_ns + compute;
  v.kernels = 4 * count;
  return v;
}

std::vector<Finding> feed(Detector& d, const std::vector<StepView>& steps) {
  FindingCollector sink;
  for (const StepView& v : steps) d.on_step(v, sink);
  d.on_finish(RunView{}, sink);
  return sink.findings;
}

// ---- throttle --------------------------------------------------------------------------------------

TEST(Throttle, FiresWhenMostHeavyKernelsAreSlowerAtTheSameCount) {
  auto d = make("throttle");
  std::vector<StepView> steps;
  for (int64_t i = 1; i <= 6; ++i) steps.push_back(kernel_step(i, 1.0));
  steps.push_back(kernel_step(7, 1.2));
  const auto f = feed(*d, steps);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 7);
  EXPECT_NEAR(f[0].cost_ms, 4 * 10 * 0.9 * 0.2, 0.01);
  EXPECT_EQ(std::get<int64_t>(f[0].evidence[1].second), 4);  // slowed_kernels
  EXPECT_NE(f[0].message.find("Fix: check clocks"), std::string::npos);
}

TEST(Throttle, NeedsABaselineTheSameCountAndNoNewIdle) {
  {  // Too little history: the first step is skipped, two more are not enough.
    auto d = make("throttle");
    EXPECT_TRUE(feed(*d, {kernel_step(1, 1.0), kernel_step(2, 1.0), kernel_step(3, 1.0), kernel_step(4, 1.5)}).empty());
  }
  {  // Twice the launches: different work, not slower clocks.
    auto d = make("throttle");
    std::vector<StepView> steps;
    for (int64_t i = 1; i <= 6; ++i) steps.push_back(kernel_step(i, 1.0));
    steps.push_back(kernel_step(7, 1.3, 20));
    EXPECT_TRUE(feed(*d, steps).empty());
  }
  {  // Slower kernels and 10 ms of new idle: something else waits.
    auto d = make("throttle");
    std::vector<StepView> steps;
    for (int64_t i = 1; i <= 6; ++i) steps.push_back(kernel_step(i, 1.0));
    StepView slow = kernel_step(7, 1.3);
    slow.idle[IdleCause::kHost] = 10 * kMs;
    slow.end_ns += 10 * kMs;
    steps.push_back(slow);
    EXPECT_TRUE(feed(*d, steps).empty());
  }
  {  // Only one of four kernels slower.
    auto d = make("throttle");
    std::vector<StepView> steps;
    for (int64_t i = 1; i <= 6; ++i) steps.push_back(kernel_step(i, 1.0));
    StepView one = kernel_step(7, 1.0);
    one.top_kernels[0].total_ns *= 2;
    steps.push_back(one);
    EXPECT_TRUE(feed(*d, steps).empty());
  }
}

TEST(Throttle, ALastingSlowdownKeepsFiringAndNcclKernelsAreIgnored) {
  auto d = make("throttle");
  std::vector<StepView> steps;
  for (int64_t i = 1; i <= 5; ++i) steps.push_back(kernel_step(i, 1.0));
  for (int64_t i = 6; i <= 16; ++i) {
    StepView v = kernel_step(i, 1.25);
    KernelStat nccl;
    nccl.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    nccl.count = 1;
    nccl.total_ns = 20 * kMs;
    v.top_kernels.push_back(nccl);
    steps.push_back(v);
  }
  EXPECT_EQ(feed(*d, steps).size(), 11u);
}

// ---- overlap_slowdown ------------------------------------------------------------------------------

StepView overlap_step(double overlapped_ratio) {
  StepView v = kernel_step(3, 1.0, 12, 1.0);
  v.comm_ns = 8 * kMs;
  for (KernelStat& k : v.top_kernels) {
    // 4 of 12 overlapped, at `overlapped_ratio` x the others' 1 ms.
    k.overlapped_count = 4;
    k.overlapped_total_ns = static_cast<int64_t>(4.0 * overlapped_ratio * 1e6);
    k.total_ns = 8 * kMs + k.overlapped_total_ns;
  }
  return v;
}

TEST(OverlapSlowdown, FiresWhenOverlappedInstancesAreMuchLonger) {
  auto d = make("overlap_slowdown");
  const auto f = feed(*d, {overlap_step(1.5)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].cost_ms, 4 * 4 * 0.5, 0.01);
  EXPECT_NE(f[0].message.find("CUDA_DEVICE_MAX_CONNECTIONS"), std::string::npos);
}

TEST(OverlapSlowdown, SilentBelowTheRatioWithoutCommOrWithoutBothKinds) {
  auto d = make("overlap_slowdown");
  EXPECT_TRUE(feed(*d, {overlap_step(1.2)}).empty());
  StepView no_comm = overlap_step(1.5);
  no_comm.comm_ns = 0;
  EXPECT_TRUE(feed(*d, {no_comm}).empty());
  StepView all_overlapped = overlap_step(1.5);
  for (KernelStat& k : all_overlapped.top_kernels) k.overlapped_count = k.count;
  EXPECT_TRUE(feed(*d, {all_overlapped}).empty());
}

// ---- straggler -------------------------------------------------------------------------------------

StepView collective_step(int64_t number, int64_t busy_ns, int64_t exposed_ns, double compute_scale = 1.0) {
  StepView v = kernel_step(number, compute_scale);
  CollectiveStat c;
  c.type = CollectiveType::kAllReduce;
  c.kernels = 4;
  c.busy_ns = busy_ns;
  c.exposed_ns = exposed_ns;
  v.collectives.push_back(c);
  v.comm_ns = busy_ns;
  v.exposed_comm_ns = exposed_ns;
  v.end_ns += exposed_ns;
  return v;
}

TEST(Straggler, FiresOnACollectiveTwiceItsBestWithTheRestUnchanged) {
  auto d = make("straggler");
  const auto f = feed(*d, {collective_step(1, 6 * kMs, 1 * kMs), collective_step(2, 7 * kMs, 1 * kMs),
                           collective_step(3, 6 * kMs, 1 * kMs), collective_step(4, 18 * kMs, 9 * kMs),
                           collective_step(5, 6 * kMs, 1 * kMs)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 4);
  EXPECT_NEAR(f[0].cost_ms, 8.0, 0.01);  // min(18 - 6, 9 - 1)
  // One rank cannot name the late rank: the message says what can (the merged analysis over every rank).
  EXPECT_NE(f[0].message.find("other ranks' traces (stepwatch analyze over every rank's trace: late_rank)"), std::string::npos)
      << f[0].message;
}

TEST(Straggler, SilentWhenTheStepGrewOrTheCountChangedOrBelowTwice) {
  {
    auto d = make("straggler");
    EXPECT_TRUE(feed(*d, {collective_step(1, 6 * kMs, kMs), collective_step(2, 6 * kMs, kMs),
                          collective_step(3, 11 * kMs, 5 * kMs)})
                    .empty());
  }
  {  // More compute too: a bigger step, not a late peer.
    auto d = make("straggler");
    EXPECT_TRUE(feed(*d, {collective_step(1, 6 * kMs, kMs), collective_step(2, 6 * kMs, kMs),
                          collective_step(3, 18 * kMs, 9 * kMs, 1.5)})
                    .empty());
  }
  {  // Another kernel count: other buckets.
    auto d = make("straggler");
    StepView more = collective_step(3, 18 * kMs, 9 * kMs);
    more.collectives[0].kernels = 8;
    EXPECT_TRUE(feed(*d, {collective_step(1, 6 * kMs, kMs), collective_step(2, 6 * kMs, kMs), more}).empty());
  }
}

// ---- no_step_marks on inferred steps ---------------------------------------------------------------

TEST(NoStepMarksInferred, ReportsOnceAtTheEndHowStepsWereInferred) {
  auto d = make("no_step_marks");
  std::vector<StepView> steps;
  for (int64_t i = 0; i < 5; ++i) {
    StepView v = kernel_step(i, 1.0);
    v.source = StepSource::kInferred;
    v.inferred_from = "kernel_period";
    v.inferred_period = 40;
    steps.push_back(v);
  }
  const auto f = feed(*d, steps);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 0);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_NE(f[0].message.find("5 steps"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("period of the GPU kernel sequence"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("40 GPU records"), std::string::npos) << f[0].message;
}

// ---- step inference ----------------------------------------------------------------------------------

using testing::TraceBuilder;

// `n` steps of 1 ms: an input copy and kernels k0..k4 (k1 and k2 twice, a layer), launched one by one.
TraceBuilder periodic_trace(int n, bool optimizer_ranges) {
  TraceBuilder b;
  uint64_t corr = 1;
  for (int s = 0; s < n; ++s) {
    const double t0 = 1000.0 * s;
    // 100 µs of data loading, then the copy and 7 kernels, each launched 10 µs before it runs.
    double t = t0 + 100;
    b.api(t, t + 5, "cudaMemcpyAsync", corr);
    b.copy(t + 10, t + 40, corr++, "Memcpy HtoD (Pinned -> Device)", 1 << 20);
    b.trace.events.back().detail = static_cast<uint8_t>(CopyKind::kHtoD);
    t += 50;
    for (const char* k : {"k0", "k1", "k2", "k1", "k2", "k3", "k4"}) {
      b.launch(t, t + 5, corr);
      b.kernel(t + 10, t + 110, corr++, k);
      t += 110;
    }
    if (optimizer_ranges) b.range(t - 220, t - 10, "Optimizer.step#SGD.step");
  }
  return b;
}

TEST(StepInference, OptimizerRangeEndsAreTheBoundaries) {
  TraceBuilder b = periodic_trace(6, true);
  const Segmentation s = StepAssembler(AnalysisConfig{}).segment(b.trace.events, b.trace.names);
  EXPECT_EQ(s.source, StepSource::kInferred);
  EXPECT_EQ(s.inferred_from, "optimizer_ranges");
  ASSERT_GE(s.steps.size(), 5u);
  for (size_t i = 1; i + 1 < s.steps.size(); ++i) EXPECT_EQ(s.steps[i].duration_ns(), testing::us(1000));
}

TEST(StepInference, ThePeriodOfTheLaunchSequenceCutsAtTheInputCopy) {
  TraceBuilder b = periodic_trace(6, false);
  const Segmentation s = StepAssembler(AnalysisConfig{}).segment(b.trace.events, b.trace.names);
  ASSERT_EQ(s.source, StepSource::kInferred) << s.matched_name;
  EXPECT_EQ(s.inferred_from, "kernel_period");
  EXPECT_EQ(s.inferred_period, 8);  // the copy + 7 kernels; the layer (k1 k2) repeats but breaks
  ASSERT_GE(s.steps.size(), 5u);
  // Boundaries: where the host finished the previous step's last launch (its data wait belongs
  // to the step it feeds).
  // The first one starts at its first call (no previous call in the data).
  for (size_t i = 1; i < s.steps.size(); ++i) {
    EXPECT_EQ((s.steps[i].start_ns - testing::us(815)) % testing::us(1000), 0) << s.steps[i].start_ns;
  }
}

TEST(StepInference, NoPeriodKeepsTheWholeTracePseudoStep) {
  TraceBuilder b;
  for (int i = 0; i < 20; ++i) b.kernel(10.0 * i, 10.0 * i + 5, 0, "kernel_" + std::to_string(i));
  const Segmentation s = StepAssembler(AnalysisConfig{}).segment(b.trace.events, b.trace.names);
  EXPECT_EQ(s.source, StepSource::kWholeTrace);
  ASSERT_EQ(s.steps.size(), 1u);
}

}  // namespace
}  // namespace stepwatch
