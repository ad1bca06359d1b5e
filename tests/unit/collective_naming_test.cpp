// Collectives named on RCCL traces whose kernels are ncclDevKernel_Generic (issue 14, item 6):
// every naming source — the kernel's `Collective name` arg (Kineto), PyTorch's `nccl:<op>` ops and
// NCCL/RCCL call ranges around the launch (core/nccl_join.h) — instead of "Other".
#include <gtest/gtest.h>

#include <vector>

#include "core/nccl_join.h"
#include "stepwatch/core/classify.h"
#include "stepwatch/import/kineto_importer.h"
#include "trace_builder.h"

namespace stepwatch {
namespace {

using testing::TraceBuilder;

TEST(CollectiveNaming, PyTorchOperationNames) {
  EXPECT_EQ(classify_collective_op("allreduce"), CollectiveType::kAllReduce);
  EXPECT_EQ(classify_collective_op("_allgather_base"), CollectiveType::kAllGather);
  EXPECT_EQ(classify_collective_op("reduce_scatter_tensor"), CollectiveType::kReduceScatter);
  EXPECT_EQ(classify_collective_op("all_to_all"), CollectiveType::kAllToAll);
  EXPECT_EQ(classify_collective_op("broadcast"), CollectiveType::kBroadcast);
  EXPECT_EQ(classify_collective_op("send"), CollectiveType::kSendRecv);
  EXPECT_EQ(classify_collective_op("reduce"), CollectiveType::kReduce);
  EXPECT_EQ(classify_collective_op("wait"), CollectiveType::kOther);
  EXPECT_EQ(classify_collective_op(""), CollectiveType::kOther);
}

TEST(CollectiveNaming, KinetoKernelArgsNameAGenericKernel) {
  const Trace t = import_kineto_json(R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "pid": 0,
     "tid": 7, "ts": 100, "dur": 50, "args": {"correlation": 5, "Collective name": "allreduce"}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "pid": 0,
     "tid": 7, "ts": 200, "dur": 50, "args": {"correlation": 6}}]})json",
                                     "rccl.json");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].collective, CollectiveType::kAllReduce);
  EXPECT_EQ(t.events[1].collective, CollectiveType::kOther);  // nothing names it (yet: see the ranges)
}

TEST(CollectiveNaming, PyTorchNcclOpsAroundTheLaunchNameTheKernel) {
  TraceBuilder b;
  b.range(90, 160, "nccl:all_reduce").api(100, 110, "hipExtLaunchKernel", 5);
  b.kernel(120, 500, 5, "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)");
  b.range(600, 700, "ncclGroupEnd").api(610, 620, "hipExtLaunchKernel", 6);
  b.kernel(630, 900, 6, "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)");
  std::vector<Event>& events = b.trace.events;
  ASSERT_EQ(events[2].collective, CollectiveType::kOther);
  EXPECT_EQ(attach_nccl_ranges(events), 0u);  // without names, only decoded NVTX payloads count
  EXPECT_EQ(attach_nccl_ranges(events, &b.trace.names), 1u);
  EXPECT_EQ(events[2].collective, CollectiveType::kAllReduce);
  EXPECT_EQ(events[2].bytes, 0u);                          // an op range carries no size
  EXPECT_EQ(events[5].collective, CollectiveType::kOther);  // ncclGroupEnd names no operation
}

// PyTorch's record_param_comms op around the launch gives the kernel its size offline
// ("In msg nelems" x the dtype's width) and its operation; unknown dtypes give no size.
TEST(CollectiveNaming, RecordParamCommsSizesTheKernelItLaunches) {
  Trace t = import_kineto_json(R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 9, "ts": 100, "dur": 40,
     "args": {"In msg nelems": 2049000, "Out msg nelems": 2049000, "dtype": "Float", "Collective name": "allreduce"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 9, "ts": 110, "dur": 10,
     "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 7, "ts": 150, "dur": 500, "args": {"correlation": 5, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 9, "ts": 700, "dur": 40,
     "args": {"In msg nelems": 10, "dtype": "SomeNewType", "Collective name": "allreduce"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 9, "ts": 710, "dur": 10,
     "args": {"correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 7, "ts": 750, "dur": 500, "args": {"correlation": 6, "device": 0, "stream": 7}}]})json",
                               "comms.json");
  ASSERT_EQ(t.events.size(), 6u);
  EXPECT_EQ(t.events[0].collective, CollectiveType::kAllReduce);
  EXPECT_EQ(t.events[0].bytes, 2049000u * 4u);
  EXPECT_EQ(t.events[3].bytes, 0u);
  EXPECT_EQ(attach_nccl_ranges(t.events, &t.names), 1u);
  EXPECT_EQ(t.events[2].bytes, 2049000u * 4u);
  EXPECT_EQ(t.events[5].bytes, 0u);  // a dtype of unknown width: no size rather than a wrong one
}

}  // namespace
}  // namespace stepwatch
