// The catalog's batch-A detectors on hand-built StepViews: what counts as cost, the signature's
// conditions, the thresholds, and messages that name the signature and the fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepwatch/core/detector.h"
#include "stepwatch/detectors/registry.h"
#include "detector_test_support.h"

namespace stepwatch {
namespace {

using testing::make;

StepView step_ms(double dur_ms, int64_t number = 4) {
  StepView v;
  v.step = number;
  v.rank = 1;
  v.start_ns = 0;
  v.end_ns = static_cast<int64_t>(dur_ms * 1e6);
  v.source = StepSource::kRange;
  return v;
}

std::vector<Finding> judge(std::string_view id, const StepView& v, const AnalysisConfig& config = {}) {
  auto d = make(id, config);
  EXPECT_NE(d, nullptr) << id;
  if (!d) return {};
  FindingCollector sink;
  d->on_step(v, sink);
  d->on_finish(RunView{}, sink);
  return sink.findings;
}

const EvidenceValue& evidence(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.evidence) {
    if (k == key) return v;
  }
  ADD_FAILURE() << "no evidence " << key;
  static const EvidenceValue none;
  return none;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

TEST(CatalogARegistry, ListsTheBatchADetectors) {
  std::vector<std::string> ids;
  for (const DetectorInfo& d : registered_detectors()) ids.emplace_back(d.id);
  for (const char* id : {"launch_bound", "sync_memcpy", "pageable_memcpy", "slow_h2d", "allocator_churn"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
}

// ---- launch_bound -------------------------------------------------------------------------------

GapRecord host_gap(int64_t start_ns, int64_t length_ns, int64_t launch_ns) {
  GapRecord g;
  g.start_ns = start_ns;
  g.end_ns = start_ns + length_ns;
  g.counted_ns = length_ns;
  g.rule = GapRule::kHostActivity;
  g.parts[IdleCause::kLaunch] = launch_ns;
  g.parts[IdleCause::kHost] = length_ns - launch_ns;
  return g;
}

// 40 ms: 1,000 gaps of 20 µs (6 µs launch + 14 µs Python) between 8 µs kernels.
StepView launch_bound_step() {
  StepView v = step_ms(40);
  v.kernels = 1000;
  v.launches = 1000;
  v.launched_kernels = 1000;
  v.prompt_kernels = 950;  // each kernel starts as soon as its launch returns
  v.median_kernel_ns = 8'000;
  v.launch_api_ns = 6'000'000;
  for (int i = 0; i < 1000; ++i) {
    v.gaps.push_back(host_gap(int64_t{i} * 40'000, 20'000, 6'000));
    v.idle[IdleCause::kLaunch] += 6'000;
    v.idle[IdleCause::kHost] += 14'000;
  }
  v.busy_ns = v.duration_ns() - v.idle.total();
  v.compute_ns = v.busy_ns;
  return v;
}

TEST(LaunchBound, CostIsTheLaunchAndHostIdleOfShortGaps) {
  StepView v = launch_bound_step();
  // A 5 ms host gap (optimizer on the CPU) is host work of its own, and a 3 ms gap ended by one
  // slow launch (lazy module loading) is not per-kernel overhead: neither is counted.
  v.end_ns += 8'000'000;
  v.gaps.push_back(host_gap(40'000'000, 5'000'000, 10'000));
  v.gaps.push_back(host_gap(45'000'000, 3'000'000, 3'000'000));
  v.idle[IdleCause::kLaunch] += 3'010'000;
  v.idle[IdleCause::kHost] += 4'990'000;
  auto f = judge("launch_bound", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 6.0 + 14.0);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "kernels")), 1000);
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "median_kernel_us")), 8.0);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "launch_calls")), 1000);
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "launch_api_ms")), 6.0);
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "launch_idle_ms")), 6.0);
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "dispatch_host_idle_ms")), 14.0);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "dispatch_gaps")), 1000);
  EXPECT_TRUE(contains(f[0].message, "between 1000 kernels (median 8.0 µs), 95% of them starting within 50 µs"))
      << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "Fix: capture the step in CUDA graphs (torch.compile(mode=\"reduce-overhead\")"))
      << f[0].message;
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "prompt_start_pct")), 95.0);
  EXPECT_EQ(format_log_line(f[0]).rfind("[stepwatch][rank 1][step 4] launch_bound: GPU idle 20.0 ms", 0), 0u);
}

TEST(LaunchBound, JudgesTheLaunchLagNotTheKernelLength) {
  // A torch.compile'd model: 21.6 µs kernels (over the catalog's 20 µs), still started as soon as
  // the Python wrapper launched each one: launch-bound.
  StepView compiled = launch_bound_step();
  compiled.median_kernel_ns = 21'600;
  compiled.prompt_kernels = 620;
  ASSERT_EQ(judge("launch_bound", compiled).size(), 1u);

  // Kernels queued far ahead of their start (the GPU had work): not waiting on the launches.
  StepView queued = launch_bound_step();
  queued.prompt_kernels = 200;
  EXPECT_TRUE(judge("launch_bound", queued).empty());

  // Launch calls not in the data (launched before the capture): no lag evidence.
  StepView unknown = launch_bound_step();
  unknown.launched_kernels = unknown.prompt_kernels = 10;
  EXPECT_TRUE(judge("launch_bound", unknown).empty());

  // The plain-CUDA and ROCm forms of the fix.
  StepView cuda = launch_bound_step();
  cuda.stack.framework = Framework::kNone;
  auto f = judge("launch_bound", cuda);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(contains(f[0].message, "Fix: capture the loop in a CUDA graph (cudaStreamBeginCapture")) << f[0].message;
  StepView rocm = cuda;
  rocm.stack.rocm = true;
  f = judge("launch_bound", rocm);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(contains(f[0].message, "HIP graph (hipStreamBeginCapture")) << f[0].message;
  EXPECT_FALSE(contains(f[0].message, "torch")) << f[0].message;
}

TEST(LaunchBound, NeedsKernelsAndALargeLaunchApiShare) {
  StepView few_launch_calls = launch_bound_step();
  few_launch_calls.launch_api_ns = 1'900'000;  // 4.75% of the step
  EXPECT_TRUE(judge("launch_bound", few_launch_calls).empty());

  StepView no_kernels = launch_bound_step();
  no_kernels.kernels = 0;
  no_kernels.launched_kernels = no_kernels.prompt_kernels = 0;
  no_kernels.median_kernel_ns = 0;
  EXPECT_TRUE(judge("launch_bound", no_kernels).empty());
}

TEST(LaunchBound, SilentWhenOtherIdleDominates) {
  // The same tiny kernels, but most of the idle is a 60 ms host gap (compile, GC, CPU work).
  StepView v = launch_bound_step();
  v.end_ns += 60'000'000;
  v.gaps.push_back(host_gap(40'000'000, 60'000'000, 0));
  v.idle[IdleCause::kHost] += 60'000'000;
  EXPECT_TRUE(judge("launch_bound", v).empty());

  // Or the GPU waited with work queued (rule 1, "other"): not a launch problem.
  StepView other = launch_bound_step();
  other.end_ns += 40'000'000;
  other.idle[IdleCause::kOther] = 40'000'000;
  EXPECT_TRUE(judge("launch_bound", other).empty());
}

TEST(LaunchBound, SilentWhenTheGpuIsFed) {
  // ns_resolution-like: tiny kernels, launch calls blocking on a full queue (55% of the step), no idle.
  StepView v = step_ms(95);
  v.kernels = 870;
  v.launches = 870;
  v.median_kernel_ns = 15'000;
  v.launch_api_ns = 52'000'000;
  v.idle[IdleCause::kOther] = 1'100'000;
  EXPECT_TRUE(judge("launch_bound", v).empty());
}

// ---- sync_memcpy / pageable_memcpy --------------------------------------------------------------

BlockingCallStat copy_call(std::string name, ApiClass cls, MemoryKind host_memory, CopyKind kind, int count,
                           uint64_t bytes, int64_t copy_gpu_ns, int64_t host_ns, int64_t transfer_ns) {
  BlockingCallStat c;
  c.name = std::move(name);
  c.api_class = cls;
  c.host_memory = host_memory;
  c.copy_kind = kind;
  c.count = count;
  c.bytes = bytes;
  c.copy_gpu_ns = copy_gpu_ns;
  c.host_ns = host_ns;
  c.no_compute_ns = host_ns;
  c.transfer_no_compute_ns = transfer_ns;
  return c;
}

TEST(SyncMemcpy, CostIsTheCopysOwnTimeWhateverTheMemoryKind) {
  StepView v = step_ms(40);
  v.blocking.push_back(copy_call("cudaMemcpy", ApiClass::kMemcpySync, MemoryKind::kPinned, CopyKind::kHtoD, 1,
                                 128ull << 20, 6'711'000, 34'000'000, 6'720'000));
  auto f = judge("sync_memcpy", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 6.72);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(f[0].message, "1x cudaMemcpy (synchronous HtoD, 128.0 MiB at 20.0 GB/s, pinned host memory)"))
      << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "Fix: cudaMemcpyAsync from pinned memory")) << f[0].message;
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "calls")), 1);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "bytes")), int64_t{128} << 20);
  EXPECT_EQ(std::get<std::string>(evidence(f[0], "direction")), "HtoD");
  EXPECT_NEAR(std::get<double>(evidence(f[0], "gb_per_s")), 20.0, 0.01);
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "host_ms")), 34.0);
  EXPECT_EQ(std::get<std::vector<std::string>>(evidence(f[0], "api")), std::vector<std::string>{"cudaMemcpy"});
}

TEST(SyncMemcpy, SumsDriverAndRuntimeCallsAndDirections) {
  StepView v = step_ms(20);
  v.blocking.push_back(copy_call("cuMemcpyDtoH_v2", ApiClass::kMemcpySync, MemoryKind::kPageable, CopyKind::kDtoH, 3,
                                 3ull << 20, 1'000'000, 1'500'000, 1'200'000));
  v.blocking.push_back(copy_call("cudaMemcpy", ApiClass::kMemcpySync, MemoryKind::kPageable, CopyKind::kHtoD, 2,
                                 2ull << 20, 500'000, 900'000, 800'000));
  auto f = judge("sync_memcpy", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 2.0);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "calls")), 5);
  EXPECT_EQ(std::get<std::string>(evidence(f[0], "direction")), "DtoH/HtoD");
  EXPECT_TRUE(contains(f[0].message, "5x cuMemcpyDtoH_v2, cudaMemcpy")) << f[0].message;
}

TEST(SyncMemcpy, SilentWhenTheCallOnlyWaitedForQueuedWork) {
  // A 4-byte copy whose call sat 10 ms behind an exposed all-reduce: the wait is the queue's
  // (hidden_sync / exposed_collective), the copy itself took microseconds.
  StepView v = step_ms(80);
  v.blocking.push_back(copy_call("cudaMemcpy", ApiClass::kMemcpySync, MemoryKind::kPageable, CopyKind::kDtoH, 10, 40,
                                 20'000, 10'000'000, 30'000));
  EXPECT_TRUE(judge("sync_memcpy", v).empty());
  // Async copies are not this detector's.
  StepView pageable = step_ms(40);
  pageable.blocking.push_back(copy_call("cudaMemcpyAsync", ApiClass::kMemcpyAsync, MemoryKind::kPageable,
                                        CopyKind::kHtoD, 1, 64ull << 20, 11'000'000, 30'000'000, 11'000'000));
  EXPECT_TRUE(judge("sync_memcpy", pageable).empty());
}

TEST(PageableMemcpy, FiresOnAsyncCopiesWithPageableMemoryOnly) {
  StepView v = step_ms(45);
  v.blocking.push_back(copy_call("cudaMemcpyAsync", ApiClass::kMemcpyAsync, MemoryKind::kPageable, CopyKind::kHtoD, 1,
                                 64ull << 20, 11'185'000, 39'000'000, 11'193'000));
  v.blocking.push_back(copy_call("cudaMemcpy", ApiClass::kMemcpySync, MemoryKind::kPageable, CopyKind::kHtoD, 1,
                                 64ull << 20, 11'185'000, 20'000'000, 11'193'000));
  auto f = judge("pageable_memcpy", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 11.193);
  EXPECT_TRUE(contains(f[0].message, "1x cudaMemcpyAsync (HtoD with pageable memory, 64.0 MiB at 6.0 GB/s)"))
      << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "Fix: pin_memory=True")) << f[0].message;
  EXPECT_EQ(std::get<std::string>(evidence(f[0], "direction")), "HtoD");

  StepView below = step_ms(45);
  below.blocking.push_back(copy_call("cudaMemcpyAsync", ApiClass::kMemcpyAsync, MemoryKind::kPageable,
                                     CopyKind::kDtoH, 10, 40, 20'000, 12'000'000, 900'000));
  EXPECT_TRUE(judge("pageable_memcpy", below).empty()) << "< 1 ms";
}

// ---- slow_h2d -------------------------------------------------------------------------------------

CopyRecord h2d(uint64_t bytes, double gb_per_s, MemoryKind src = MemoryKind::kPinned, int64_t exposed_ns = -1) {
  CopyRecord c;
  c.kind = CopyKind::kHtoD;
  c.src = src;
  c.dst = MemoryKind::kDevice;
  c.bytes = bytes;
  c.duration_ns = static_cast<int64_t>(double(bytes) / gb_per_s);
  c.exposed_ns = exposed_ns < 0 ? c.duration_ns : exposed_ns;
  return c;
}

TEST(SlowH2d, JudgesAgainstTheBestRateSeenSoFar) {
  auto d = make("slow_h2d");
  FindingCollector sink;
  StepView fast = step_ms(40, 1);
  fast.copies.push_back(h2d(64ull << 20, 20.0));
  d->on_step(fast, sink);
  EXPECT_TRUE(sink.findings.empty());

  StepView slow = step_ms(50, 2);
  slow.copies.push_back(h2d(64ull << 20, 4.0));
  slow.copies.push_back(h2d(512 << 10, 0.5));  // < 1 MB: not judged
  CopyRecord dtoh = h2d(64ull << 20, 1.0);
  dtoh.kind = CopyKind::kDtoH;                 // other directions: not judged
  slow.copies.push_back(dtoh);
  d->on_step(slow, sink);
  ASSERT_EQ(sink.findings.size(), 1u);
  const Finding& f = sink.findings[0];
  const double extra_ms = (double(64ull << 20) / 4.0 - double(64ull << 20) / 20.0) / 1e6;
  EXPECT_NEAR(f.cost_ms, extra_ms, 0.001);
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(std::get<int64_t>(evidence(f, "copies")), 1);
  EXPECT_NEAR(std::get<double>(evidence(f, "gb_per_s")), 4.0, 0.001);
  EXPECT_NEAR(std::get<double>(evidence(f, "best_gb_per_s")), 20.0, 0.001);
  EXPECT_TRUE(contains(f.message, "1 HtoD copy of 64.0 MiB ran at 4.0 GB/s, below 1/3 of the 20.0 GB/s")) << f.message;
  EXPECT_TRUE(contains(f.message, "Fix: pinned host memory; check the process's NUMA affinity")) << f.message;

  // A copy at 1/2 of the best rate is within the rule.
  StepView half = step_ms(45, 3);
  half.copies.push_back(h2d(64ull << 20, 10.0));
  d->on_step(half, sink);
  EXPECT_EQ(sink.findings.size(), 1u);
}

TEST(SlowH2d, AFastCopyInTheSameStepSetsTheBaseline) {
  StepView v = step_ms(60);
  v.copies.push_back(h2d(16ull << 20, 24.0));
  v.copies.push_back(h2d(64ull << 20, 6.0));
  auto f = judge("slow_h2d", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(std::get<double>(evidence(f[0], "best_gb_per_s")), 24.0, 0.001);
}

TEST(SlowH2d, CostIsOnlyTheExposedPartOfTheExtraTime) {
  StepView v = step_ms(30);
  v.copies.push_back(h2d(16ull << 20, 20.0));
  v.copies.push_back(h2d(64ull << 20, 4.0, MemoryKind::kPinned, 2'000'000));  // mostly under compute
  auto f = judge("slow_h2d", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 2.0);
  v.copies[1].exposed_ns = 0;  // fully hidden: costs nothing
  EXPECT_TRUE(judge("slow_h2d", v).empty());
}

TEST(SlowH2d, PageableCopiesAreNeitherBaselineNorJudged) {
  auto d = make("slow_h2d");
  FindingCollector sink;
  StepView pageable_fast = step_ms(40, 1);
  pageable_fast.copies.push_back(h2d(64ull << 20, 25.0, MemoryKind::kPageable));
  d->on_step(pageable_fast, sink);
  StepView pinned = step_ms(40, 2);
  pinned.copies.push_back(h2d(64ull << 20, 6.0));        // would be < 1/3 of a pageable 25 GB/s
  pinned.copies.push_back(h2d(64ull << 20, 2.0, MemoryKind::kPageable));  // slow, but pageable
  d->on_step(pinned, sink);
  EXPECT_TRUE(sink.findings.empty());
}

TEST(SlowH2d, BelowAnyPcieLinkEvenWithoutABaseline) {
  StepView v = step_ms(100);
  v.copies.push_back(h2d(64ull << 20, 1.5, MemoryKind::kUnknown));
  auto f = judge("slow_h2d", v);
  ASSERT_EQ(f.size(), 1u);
  const double extra_ms = (double(64ull << 20) / 1.5 - double(64ull << 20) / 3.0) / 1e6;
  EXPECT_NEAR(f[0].cost_ms, extra_ms, 0.001);
  EXPECT_TRUE(contains(f[0].message, "below the 3.0 GB/s any PCIe link sustains")) << f[0].message;
}

// ---- allocator_churn ------------------------------------------------------------------------------

StepView allocation_step(double dur_ms, int calls, int64_t host_ns, int64_t idle_ns, int64_t max_ns) {
  StepView v = step_ms(dur_ms);
  v.allocations.calls = calls;
  v.allocations.host_ns = host_ns;
  v.allocations.gpu_idle_ns = idle_ns;
  v.allocations.max_call_ns = max_ns;
  v.allocations.slowest_call = "cudaMalloc";
  return v;
}

TEST(AllocatorChurn, CostIsTheGpuIdleInsideAllocatorCalls) {
  StepView v = allocation_step(40, 8, 32'000'000, 3'200'000, 24'000'000);
  v.allocations.driver_events = 4;
  v.allocations.bytes = 256ull << 20;
  auto f = judge("allocator_churn", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 3.2);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "calls")), 8);
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "host_ms")), 32.0);
  EXPECT_EQ(std::get<std::string>(evidence(f[0], "slowest_call")), "cudaMalloc");
  EXPECT_DOUBLE_EQ(std::get<double>(evidence(f[0], "slowest_call_ms")), 24.0);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "driver_events")), 4);
  EXPECT_EQ(std::get<int64_t>(evidence(f[0], "bytes")), int64_t{256} << 20);
  EXPECT_TRUE(contains(f[0].message, "8 cudaMalloc/cudaFree-class calls mid-step")) << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "4 device allocation events, 256.0 MiB allocated")) << f[0].message;
  EXPECT_TRUE(contains(f[0].message, "Fix: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")) << f[0].message;

  // The same host time with the GPU kept busy by its queue costs nothing.
  EXPECT_TRUE(judge("allocator_churn", allocation_step(40, 8, 32'000'000, 0, 24'000'000)).empty());
  // Below the common rule.
  EXPECT_TRUE(judge("allocator_churn", allocation_step(40, 2, 900'000, 900'000, 600'000)).empty());
}

TEST(AllocatorChurn, AHundredMillisecondStallIsReportedWhateverItsShare) {
  // 110 ms of a 5 s step: 2.2%, below the 5% rule, still a stall.
  auto f = judge("allocator_churn", allocation_step(5000, 1, 110'000'000, 105'000'000, 110'000'000));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 105.0);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(f[0].message, "slowest cudaMalloc 110.0 ms: an allocation stall")) << f[0].message;
  // 90 ms is not a stall: the common rule applies.
  EXPECT_TRUE(judge("allocator_churn", allocation_step(5000, 1, 90'000'000, 90'000'000, 90'000'000)).empty());
}

TEST(AllocatorChurn, NotJudgedOnAWholeTracePseudoStep) {
  // The pseudo-step includes start-up: cudaFree(0) creating the context, the allocator warming up.
  StepView v = allocation_step(2000, 16, 985'000'000, 985'000'000, 715'000'000);
  v.source = StepSource::kWholeTrace;
  EXPECT_TRUE(judge("allocator_churn", v).empty());
}

}  // namespace
}  // namespace stepwatch
