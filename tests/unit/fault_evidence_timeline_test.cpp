// analyze_step's confirming measurements on hand-built traces: the all-to-all layers (dispatch /
// combine pairs, expert compute between them, SendRecv kernels counted only under an all-to-all
// range) and the NVML samples of a step (devices that ran work, "no reading" values, the reach
// of a step without samples).
#include <gtest/gtest.h>

#include "stepwatch/core/gpu_samples.h"
#include "stepwatch/core/timeline.h"
#include "trace_builder.h"

namespace stepwatch {
namespace {

using testing::TraceBuilder;
using testing::us;

StepView analyze(const Trace& trace, double start_us, double end_us) {
  static const AnalysisConfig config;
  const Timeline tl(trace.events, trace.names, config);
  return analyze_step(StepWindow{us(start_us), us(end_us), 1, StepSource::kRange}, tl, 0);
}

constexpr const char* kSendRecv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";

TEST(AllToAllLayers, PairsOfAllToAllsAroundTheExpertCompute) {
  TraceBuilder b;
  // Layer: dispatch [0,100) exposed, experts [100,250), combine [250,300) exposed, attention [300,400).
  b.range(0, 5, "nccl:all_to_all").launch(1, 2, 1).nccl(0, 100, 1, kSendRecv);
  b.kernel(100, 250, 0, "expert_gemm");
  b.range(10, 15, "nccl:all_to_all").launch(11, 12, 2).nccl(250, 300, 2, kSendRecv);
  b.kernel(300, 400, 0, "attention");
  // A second layer whose dispatch is half hidden by the attention kernel.
  b.range(20, 25, "nccl:all_to_all").launch(21, 22, 3).nccl(350, 450, 3, kSendRecv);
  b.kernel(450, 500, 0, "expert_gemm");
  b.range(30, 35, "nccl:all_to_all").launch(31, 32, 4).nccl(500, 520, 4, kSendRecv);
  const StepView v = analyze(b.trace, 0, 600);
  EXPECT_EQ(v.all_to_all.kernels, 4);
  EXPECT_EQ(v.all_to_all.layers, 2);
  EXPECT_EQ(v.all_to_all.a2a_ns, us(100 + 50 + 100 + 20));
  EXPECT_EQ(v.all_to_all.exposed_ns, us(100 + 50 + 50 + 20));
  EXPECT_EQ(v.all_to_all.exposed_kernels, 3);  // the half-hidden one is not "more than half" exposed
  EXPECT_EQ(v.all_to_all.max_exposed_ns, us(100));
  EXPECT_EQ(v.all_to_all.expert_compute_ns, us(150 + 50));  // not the attention between layers
}

TEST(AllToAllLayers, EmbeddingTablesAllToAllsAreTheirOwnPartsNotLayers) {
  TraceBuilder b;
  // Forward: the pooled embeddings [0,100) (the autograd function around PyTorch's range), exposed.
  b.range(0, 6, "All2All_Pooled_Req").range(1, 5, "nccl:all_to_all").launch(2, 3, 1).nccl(0, 100, 1, kSendRecv);
  b.kernel(100, 200, 0, "interaction");
  // The next batch's sparse features, a batch ahead: two all-to-alls, one half hidden by backward.
  b.range(10, 30, "## sparse_data_dist ##");
  b.range(11, 15, "## all2all_data:lengths ##").range(12, 14, "nccl:all_to_all").launch(12, 13, 2);
  b.nccl(200, 240, 2, kSendRecv);
  b.range(16, 20, "## all2all_data:indices ##").range(17, 19, "nccl:all_to_all").launch(17, 18, 3);
  b.nccl(240, 300, 3, kSendRecv);
  b.kernel(270, 330, 0, "backward");
  // Backward: the embeddings' gradients [330,380), exposed; an MoE-like pair of no named purpose after.
  b.range(40, 46, "All2All_Pooled_WaitBackward").range(41, 45, "nccl:all_to_all").launch(42, 43, 4);
  b.nccl(330, 380, 4, kSendRecv);
  b.range(50, 55, "nccl:all_to_all").launch(51, 52, 5).nccl(400, 410, 5, kSendRecv);
  b.kernel(410, 450, 0, "expert_gemm");
  b.range(60, 65, "nccl:all_to_all").launch(61, 62, 6).nccl(450, 460, 6, kSendRecv);
  const StepView v = analyze(b.trace, 0, 500);
  const AllToAllStat& a = v.all_to_all;
  EXPECT_EQ(a.kernels, 6);
  EXPECT_EQ(a.a2a_ns, us(100 + 40 + 60 + 50 + 10 + 10));
  EXPECT_EQ(a.embeddings_forward.kernels, 1);
  EXPECT_EQ(a.embeddings_forward.exposed_ns, us(100));
  EXPECT_EQ(a.embeddings_backward.kernels, 1);
  EXPECT_EQ(a.embeddings_backward.exposed_ns, us(50));
  EXPECT_EQ(a.sparse_features.kernels, 2);
  EXPECT_EQ(a.sparse_features.ns, us(40 + 60));
  EXPECT_EQ(a.sparse_features.exposed_ns, us(40 + 30));
  EXPECT_TRUE(a.sparse_features_ahead);
  EXPECT_EQ(a.embedding_exposed_ns(), us(100 + 50 + 70));
  // Only the two of no named purpose pair into a layer, with the expert compute between them.
  EXPECT_EQ(a.layered.kernels, 2);
  EXPECT_EQ(a.layers, 1);
  EXPECT_EQ(a.expert_compute_ns, us(40));
  EXPECT_EQ(a.max_exposed_ns, us(10));
  EXPECT_EQ(a.exposed_kernels, 2);
}

TEST(AllToAllLayers, SendRecvWithoutAnAllToAllRangeOrLauncherIsNotOne) {
  TraceBuilder b;
  b.launch(1, 2, 1).nccl(0, 100, 1, kSendRecv);                       // pipeline-parallel send/recv
  b.range(10, 15, "nccl:all_to_all").nccl(150, 200, 9, kSendRecv);    // launched before the capture
  b.range(20, 25, "nccl:all_to_all", 2).launch(21, 22, 3, 1).nccl(250, 300, 3, kSendRecv);  // other thread's range
  b.nccl(320, 340, 0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(analyze(b.trace, 0, 400).all_to_all.kernels, 0);
  TraceBuilder named;
  named.nccl(0, 100, 0, "ncclKernel_AllToAll_RING_LL_Sum_float");  // a kernel named for it needs no range
  EXPECT_EQ(analyze(named.trace, 0, 200).all_to_all.kernels, 1);
}

void sample(Trace& t, GpuMetric m, double at_us, uint64_t value, int16_t device = 0) {
  Event& e = t.add(EventKind::kRange, gpu_sample_name(m), us(at_us), us(at_us));
  e.bytes = value;
  e.device = device;
}

TEST(GpuClocks, TheStepSummarizesTheSamplesOfItsDevices) {
  TraceBuilder b;
  b.kernel(0, 1000);  // device 0
  for (double t : {100.0, 300.0, 500.0}) sample(b.trace, GpuMetric::kSmClockMhz, t, t < 400 ? 1500 : 1410);
  sample(b.trace, GpuMetric::kSmClockMhz, 200, 1980, /*device=*/1);  // another GPU: not this step's
  sample(b.trace, GpuMetric::kMaxSmClockMhz, 100, 1980);
  sample(b.trace, GpuMetric::kTemperatureC, 100, 80);
  sample(b.trace, GpuMetric::kTemperatureC, 300, 84);
  sample(b.trace, GpuMetric::kPowerMw, 100, 690'000);
  sample(b.trace, GpuMetric::kClockEventReasons, 300, clock_reason::kSwPowerCap);
  sample(b.trace, GpuMetric::kClockEventReasons, 500, clock_reason::kHwThermalSlowdown);
  sample(b.trace, GpuMetric::kPowerMw, 200, 0);  // no reading: ignored
  const StepView v = analyze(b.trace, 0, 1000);
  EXPECT_EQ(v.gpu_clocks.samples, 3);
  EXPECT_EQ(v.gpu_clocks.sm_clock_min_mhz, 1410);
  EXPECT_EQ(v.gpu_clocks.sm_clock_median_mhz, 1500);
  EXPECT_EQ(v.gpu_clocks.max_sm_clock_mhz, 1980);
  EXPECT_EQ(v.gpu_clocks.temperature_max_c, 84);
  EXPECT_EQ(v.gpu_clocks.power_median_mw, 690'000);
  EXPECT_EQ(v.gpu_clocks.clock_event_reasons, clock_reason::kSwPowerCap | clock_reason::kHwThermalSlowdown);
  EXPECT_EQ(clock_reasons_text(v.gpu_clocks.clock_event_reasons), "sw_power_cap, hw_thermal_slowdown");
  // Samples are not host activity: no data wait, no input idle.
  EXPECT_EQ(v.data_wait_ns, 0);
}

TEST(GpuClocks, AShortStepTakesTheSamplesWithinOnePeriodAndNoneWithout) {
  TraceBuilder b;
  b.kernel(0, 30'000);
  sample(b.trace, GpuMetric::kSmClockMhz, -50'000, 1700);  // 50 ms before the step
  EXPECT_EQ(analyze(b.trace, 0, 30'000).gpu_clocks.sm_clock_median_mhz, 1700);
  TraceBuilder far;
  far.kernel(0, 30'000);
  sample(far.trace, GpuMetric::kSmClockMhz, -150'000, 1700);  // beyond the reach
  EXPECT_EQ(analyze(far.trace, 0, 30'000).gpu_clocks.samples, 0);
  TraceBuilder none;
  none.kernel(0, 100);
  EXPECT_EQ(analyze(none.trace, 0, 100).gpu_clocks.samples, 0);
  EXPECT_EQ(gpu_metric_of("nvml:power_mw"), GpuMetric::kPowerMw);
  EXPECT_FALSE(gpu_metric_of("nvml:unknown"));
  EXPECT_FALSE(gpu_metric_of("sm_clock_mhz"));
}

}  // namespace
}  // namespace stepwatch
