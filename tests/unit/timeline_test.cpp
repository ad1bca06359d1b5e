// Gap attribution rules and the per-step breakdown, on hand-built timelines whose answer is
// known exactly (ARCHITECTURE.md "Timeline analysis of one step").
#include <gtest/gtest.h>

#include "stepwatch/core/timeline.h"
#include "trace_builder.h"

namespace stepwatch {
namespace {

using testing::TraceBuilder;
using testing::us;

StepView analyze(Trace& t, double start_us, double end_us, const AnalysisConfig& config = {}) {
  static AnalysisConfig keep;  // Timeline keeps a reference; tests analyze right away.
  keep = config;
  const Timeline tl(t.events, t.names, keep);
  StepWindow w{us(start_us), us(end_us), 1, StepSource::kRange};
  return analyze_step(w, tl, 0);
}

void expect_partition(const StepView& v) {
  EXPECT_EQ(v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total(), v.duration_ns());
}

TEST(GapAttribution, Rule1WorkQueuedBeforeTheGapIsOther) {
  TraceBuilder b;
  b.launch(0, 5, 1).kernel(10, 100, 1);
  b.launch(20, 25, 2).kernel(200, 300, 2);  // launched at 20, long before the GPU idled at 100
  const StepView v = analyze(b.trace, 0, 300);
  EXPECT_EQ(v.idle[IdleCause::kOther], us(100));
  // [0,10): nothing before it, its kernel was launched at 0 = the window start: rule 3.
  EXPECT_EQ(v.idle[IdleCause::kLaunch], us(5));
  EXPECT_EQ(v.idle[IdleCause::kHost], us(5));
  expect_partition(v);
}

TEST(GapAttribution, Rule1LaunchMissingFromDataIsQueuedEarlier) {
  TraceBuilder b;
  b.kernel(0, 100, 1).kernel(200, 300, 99);  // correlation 99 has no launch call in the data
  const StepView v = analyze(b.trace, 0, 300);
  EXPECT_EQ(v.idle[IdleCause::kOther], us(100));
  ASSERT_EQ(v.gaps.size(), 1u);
  EXPECT_EQ(v.gaps[0].rule, GapRule::kQueuedEarlier);
}

TEST(GapAttribution, Rule2BlockingCallThatDrainedTheQueueIsSync) {
  TraceBuilder b;
  b.kernel(0, 100);
  b.api(60, 150, "cudaStreamSynchronize");  // started before the GPU idled, returned after
  b.launch(160, 170, 2).kernel(200, 300, 2);
  const StepView v = analyze(b.trace, 0, 300);
  EXPECT_EQ(v.idle[IdleCause::kSync], us(100));
  EXPECT_EQ(v.blocked_idle_ns, us(50));  // host blocked [100,150) while idle
  ASSERT_EQ(v.gaps.size(), 1u);
  EXPECT_EQ(v.gaps[0].blocking_call, "cudaStreamSynchronize");
  EXPECT_EQ(v.syncs, 1);
  expect_partition(v);
}

TEST(GapAttribution, Rule2SlackAcceptsACallReturningJustBeforeTheGap) {
  TraceBuilder b;
  b.kernel(0, 1000).api(500, 970, "cudaDeviceSynchronize").launch(1160, 1170, 2).kernel(1200, 1300, 2);
  EXPECT_EQ(analyze(b.trace, 0, 1300).idle[IdleCause::kSync], us(200));  // returned 30 µs before: within 50 µs
  TraceBuilder late;
  late.kernel(0, 1000).api(500, 900, "cudaDeviceSynchronize").launch(1160, 1170, 2).kernel(1200, 1300, 2);
  EXPECT_EQ(analyze(late.trace, 0, 1300).idle[IdleCause::kSync], 0);  // 100 µs before: not the cause
}

TEST(GapAttribution, Rule2BlockingCallStartingAfterTheGPUIdledDidNotCauseIt) {
  TraceBuilder b;
  b.kernel(0, 100).api(120, 130, "cudaDeviceSynchronize").launch(190, 195, 2).kernel(200, 300, 2);
  const StepView v = analyze(b.trace, 0, 300);
  EXPECT_EQ(v.idle[IdleCause::kSync], 0);
  EXPECT_EQ(v.idle[IdleCause::kLaunch], us(5));
  EXPECT_EQ(v.idle[IdleCause::kHost], us(95));
  EXPECT_EQ(v.blocked_idle_ns, us(10));  // still reported next to the breakdown
}

TEST(GapAttribution, Rule3SplitsByDataWaitThenLaunchThenHost) {
  TraceBuilder b;
  b.kernel(0, 100);
  b.range(110, 180, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
  b.launch(185, 195, 2).kernel(200, 300, 2);
  const StepView v = analyze(b.trace, 0, 300);
  EXPECT_EQ(v.idle[IdleCause::kInput], us(70));
  EXPECT_EQ(v.idle[IdleCause::kLaunch], us(10));
  EXPECT_EQ(v.idle[IdleCause::kHost], us(20));
  EXPECT_EQ(v.data_wait_ns, us(70));
  expect_partition(v);
}

TEST(GapAttribution, Rule3LaunchEvidenceComesFromTheLaunchingThreadOnly) {
  TraceBuilder b;
  b.kernel(0, 100);
  b.api(120, 180, "cudaLaunchKernel", 50, /*thread=*/9);  // another thread launching elsewhere
  b.launch(185, 195, 2, /*thread=*/1).kernel(200, 300, 2);
  const StepView v = analyze(b.trace, 0, 300);
  EXPECT_EQ(v.idle[IdleCause::kLaunch], us(10));
  EXPECT_EQ(v.idle[IdleCause::kHost], us(90));
}

TEST(GapAttribution, GapCutByWindowEdgeIsAttributedAsAWholeButCountedInside) {
  TraceBuilder b;
  b.kernel(0, 100);
  b.api(60, 150, "cudaStreamSynchronize");
  b.launch(160, 170, 2).kernel(200, 300, 2);
  const StepView v = analyze(b.trace, 150, 300);  // window starts mid-gap
  EXPECT_EQ(v.idle[IdleCause::kSync], us(50));
  ASSERT_EQ(v.gaps.size(), 1u);
  EXPECT_EQ(v.gaps[0].start_ns, us(100));  // the real gap start, before the window
  EXPECT_EQ(v.gaps[0].counted_ns, us(50));
  expect_partition(v);
}

TEST(GapAttribution, WindowWithoutGpuWorkIsOneGapFromEdgeToEdge) {
  TraceBuilder b;
  b.range(0, 50, "DataLoader");
  b.api(60, 70, "cudaGetDevice");
  const StepView v = analyze(b.trace, 0, 100);
  EXPECT_EQ(v.idle[IdleCause::kInput], us(50));
  EXPECT_EQ(v.idle[IdleCause::kHost], us(50));
  expect_partition(v);
}

TEST(StepBreakdown, ExposedCommIsCommWithNoComputeRunning) {
  TraceBuilder b;
  b.kernel(0, 100).nccl(50, 150).nccl(140, 160, 0, "ncclKernel_AllGather_RING_LL_Sum_int8_t");
  const StepView v = analyze(b.trace, 0, 160);
  EXPECT_EQ(v.compute_ns, us(100));
  EXPECT_EQ(v.comm_ns, us(110));
  EXPECT_EQ(v.exposed_comm_ns, us(60));
  ASSERT_EQ(v.collectives.size(), 2u);
  EXPECT_EQ(v.collectives[0].type, CollectiveType::kAllReduce);  // 50 µs exposed
  EXPECT_EQ(v.collectives[0].exposed_ns, us(50));
  EXPECT_EQ(v.collectives[1].exposed_ns, us(20));
  expect_partition(v);
}

TEST(StepBreakdown, CopyOnlyIsCopyWithNoKernelRunning) {
  TraceBuilder b;
  b.kernel(0, 100).copy(80, 130, 0, "Memcpy DtoD (Device -> Device)");
  const StepView v = analyze(b.trace, 0, 150);
  EXPECT_EQ(v.copy_ns, us(50));
  EXPECT_EQ(v.copy_only_ns, us(30));
  EXPECT_EQ(v.busy_ns, us(130));
  EXPECT_NEAR(v.duty_cycle(), 130.0 / 150.0, 1e-9);
  expect_partition(v);
}

TEST(BlockingCalls, AsyncCopyFromPageableMemoryBlocksAndPinnedDoesNot) {
  TraceBuilder pageable;
  pageable.kernel(0, 100);
  // The copy runs right after the kernel; the call returns only once it is done.
  pageable.api(50, 110, "cudaMemcpyAsync", 5).copy(100, 108, 5, "Memcpy DtoH (Device -> Pageable)", 4);
  pageable.launch(170, 175, 6).kernel(200, 300, 6);
  const StepView v = analyze(pageable.trace, 0, 300);
  EXPECT_EQ(v.syncs, 1);
  EXPECT_EQ(v.idle[IdleCause::kSync], us(92));  // [108,200): drained by the blocking copy
  ASSERT_FALSE(v.blocking.empty());
  EXPECT_EQ(v.blocking[0].host_memory, MemoryKind::kPageable);
  EXPECT_EQ(v.blocking[0].bytes, 4u);

  TraceBuilder pinned;
  pinned.kernel(0, 100);
  pinned.api(50, 60, "cudaMemcpyAsync", 5).copy(100, 108, 5, "Memcpy DtoH (Device -> Pinned)", 4);
  pinned.launch(170, 175, 6).kernel(200, 300, 6);
  EXPECT_EQ(analyze(pinned.trace, 0, 300).syncs, 0);
}

TEST(BlockingCalls, SyncRecordDuplicatingAnApiCallCountsOnce) {
  TraceBuilder b;
  b.kernel(0, 100).api(60, 150, "cudaStreamSynchronize", 42);
  Event& rec = b.trace.add(EventKind::kSync, "Stream Sync", us(61), us(149));
  rec.correlation = 42;
  rec.detail = static_cast<uint8_t>(SyncKind::kStream);
  b.launch(160, 170, 2).kernel(200, 300, 2);
  const StepView v = analyze(b.trace, 0, 300);
  EXPECT_EQ(v.syncs, 1);
  EXPECT_EQ(v.idle[IdleCause::kSync], us(100));
}

TEST(HtaOverlap, DropsKernelsLaunchedInTheLastStep) {
  TraceBuilder b;
  b.launch(0, 1, 1).kernel(0, 100, 1).launch(1, 2, 2).nccl(50, 150, 2);
  b.launch(300, 301, 3).nccl(300, 400, 3);  // launched in the last step: ignored
  b.range(0, 200, "ProfilerStep#1").range(300, 400, "ProfilerStep#2");
  AnalysisConfig config;
  const Timeline tl(b.trace.events, b.trace.names, config);
  const Segmentation seg = StepAssembler(config).segment(b.trace.events, b.trace.names);
  ASSERT_EQ(seg.steps.size(), 2u);
  EXPECT_NEAR(hta_comm_comp_overlap_pct(tl, seg), 50.0, 1e-9);
}

}  // namespace
}  // namespace stepwatch

namespace stepwatch {
namespace {

TEST(GapAttribution, ALaunchStillInFlightWhenTheGpuIdledIsLaunchTimeNotOther) {
  testing::TraceBuilder b;
  b.launch(0, 5, 1).kernel(6, 14, 1);
  b.launch(10, 20, 2).kernel(21, 29, 2);  // its launch began before the GPU idled at 14, ended after
  const StepView v = [&] {
    AnalysisConfig config;
    const Timeline tl(b.trace.events, b.trace.names, config);
    return analyze_step(StepWindow{testing::us(6), testing::us(29), 1, StepSource::kRange}, tl, 0);
  }();
  EXPECT_EQ(v.idle[IdleCause::kOther], 0);
  EXPECT_EQ(v.idle[IdleCause::kLaunch], testing::us(6));  // [14,20) inside the launch call
  EXPECT_EQ(v.idle[IdleCause::kHost], testing::us(1));    // [20,21)
}

}  // namespace
}  // namespace stepwatch

namespace stepwatch {
namespace {

TEST(GapAttribution, OsWaitsOfTheLaunchingThreadAreInputEvidence) {
  testing::TraceBuilder b;
  b.kernel(0, 100);
  b.range(110, 150, "osrt:poll", /*thread=*/1);     // the launching thread waits on a queue
  b.range(150, 170, "osrt:read", /*thread=*/9);     // another thread's read is not evidence
  b.launch(185, 195, 2, /*thread=*/1).kernel(200, 300, 2);
  AnalysisConfig config;
  const Timeline tl(b.trace.events, b.trace.names, config);
  const StepView v = analyze_step(StepWindow{0, testing::us(300), 1, StepSource::kRange}, tl, 0);
  EXPECT_EQ(v.idle[IdleCause::kInput], testing::us(40));
  EXPECT_EQ(v.idle[IdleCause::kLaunch], testing::us(10));
  EXPECT_EQ(v.idle[IdleCause::kHost], testing::us(50));
}

}  // namespace
}  // namespace stepwatch
