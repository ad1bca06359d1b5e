#include <gtest/gtest.h>

#include "stepwatch/core/classify.h"

namespace stepwatch {
namespace {

TEST(ClassifyApi, RuntimeDriverAndHipNames) {
  EXPECT_EQ(classify_api("cudaLaunchKernel"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cudaLaunchKernel_v7000"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("__cudaLaunchKernel_v13000"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("__cudaLaunchKernel_ptsz_v13000"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cuLaunchKernelEx"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cudaGraphLaunch"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("hipLaunchKernel"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("hipExtModuleLaunchKernel"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cudaStreamSynchronize"), ApiClass::kStreamSync);
  EXPECT_EQ(classify_api("cuStreamSynchronize_ptsz"), ApiClass::kStreamSync);
  EXPECT_EQ(classify_api("cudaDeviceSynchronize"), ApiClass::kDeviceSync);
  EXPECT_EQ(classify_api("cuCtxSynchronize_v2"), ApiClass::kDeviceSync);
  EXPECT_EQ(classify_api("cudaEventSynchronize"), ApiClass::kEventSync);
  EXPECT_EQ(classify_api("cudaStreamWaitEvent"), ApiClass::kStreamWait);
  EXPECT_EQ(classify_api("cudaMemcpy"), ApiClass::kMemcpySync);
  EXPECT_EQ(classify_api("cudaMemcpy_v3020"), ApiClass::kMemcpySync);
  EXPECT_EQ(classify_api("cuMemcpyDtoH_v2"), ApiClass::kMemcpySync);
  EXPECT_EQ(classify_api("hipMemcpyWithStream"), ApiClass::kMemcpySync);
  EXPECT_EQ(classify_api("cudaMemcpyAsync"), ApiClass::kMemcpyAsync);
  EXPECT_EQ(classify_api("cuMemcpyHtoDAsync_v2"), ApiClass::kMemcpyAsync);
  EXPECT_EQ(classify_api("cudaMemsetAsync"), ApiClass::kMemsetAsync);
  EXPECT_EQ(classify_api("cudaMemset"), ApiClass::kMemsetSync);
  EXPECT_EQ(classify_api("cudaMalloc"), ApiClass::kMalloc);
  EXPECT_EQ(classify_api("cuMemAlloc_v2"), ApiClass::kMalloc);
  EXPECT_EQ(classify_api("cudaFree"), ApiClass::kFree);
  EXPECT_EQ(classify_api("hipFree"), ApiClass::kFree);
  EXPECT_EQ(classify_api("cudaMallocAsync"), ApiClass::kOther);
  EXPECT_EQ(classify_api("cudaFreeAsync"), ApiClass::kOther);
  EXPECT_EQ(classify_api("cudaEventQuery"), ApiClass::kQuery);
  EXPECT_EQ(classify_api("cudaGetDevice"), ApiClass::kOther);
  EXPECT_EQ(classify_api("aten::mm"), ApiClass::kOther);
  EXPECT_EQ(classify_api("hipHostFree"), ApiClass::kFree);
  EXPECT_EQ(classify_api("hipHostMalloc"), ApiClass::kMalloc);
  // Libraries whose names start like the CUDA families are not CUDA API calls.
  EXPECT_EQ(classify_api("cudnnLaunchSomething"), ApiClass::kOther);
  EXPECT_EQ(classify_api("cublasSgemm_v2"), ApiClass::kOther);
  EXPECT_EQ(classify_api("cufftExecC2C"), ApiClass::kOther);
}

TEST(ClassifyCollective, NcclKernelNamesOldNewMangled) {
  EXPECT_EQ(classify_collective("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), CollectiveType::kAllReduce);
  EXPECT_EQ(classify_collective("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            CollectiveType::kAllReduce);
  EXPECT_EQ(classify_collective("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), CollectiveType::kAllReduce);
  EXPECT_EQ(classify_collective("ncclKernel_AllGather_RING_LL_Sum_int8_t"), CollectiveType::kAllGather);
  EXPECT_EQ(classify_collective("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), CollectiveType::kReduceScatter);
  EXPECT_EQ(classify_collective("ncclSymkDevKernel_AllGather_LL"), CollectiveType::kAllGather);
  EXPECT_EQ(classify_collective("ncclDevKernel_SendRecv"), CollectiveType::kSendRecv);
  EXPECT_EQ(classify_collective("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"), CollectiveType::kSendRecv);
  EXPECT_EQ(classify_collective("ncclDevKernel_Broadcast_RING_LL"), CollectiveType::kBroadcast);
  EXPECT_EQ(classify_collective("ncclDevKernel_Reduce_Sum_f32_RING_LL"), CollectiveType::kReduce);
  // PyTorch's record_param_comms annotations: the same reading as the kernels'.
  EXPECT_EQ(classify_collective("nccl:recv 0<-1"), CollectiveType::kSendRecv);
  EXPECT_EQ(classify_collective("nccl:send 0->1"), CollectiveType::kSendRecv);
  EXPECT_EQ(classify_collective("nccl:broadcast"), CollectiveType::kBroadcast);
  EXPECT_EQ(classify_collective("nccl:reduce"), CollectiveType::kReduce);
  EXPECT_EQ(classify_collective("nccl:_reduce_scatter_base"), CollectiveType::kReduceScatter);
  EXPECT_EQ(classify_collective("nccl:alltoall"), CollectiveType::kAllToAll);
  EXPECT_EQ(classify_collective("ncclDevKernel_Generic"), CollectiveType::kOther);
  EXPECT_EQ(classify_collective("nccl:all_reduce"), CollectiveType::kAllReduce);
  EXPECT_EQ(classify_collective("volta_sgemm_64x64_tn"), CollectiveType::kNone);
  EXPECT_EQ(classify_collective("void at::native::vectorized_elementwise_kernel<4>"), CollectiveType::kNone);
}

TEST(DescribeCopy, KinetoNames) {
  const CopyDescription h2d = describe_copy("Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(h2d.kind, CopyKind::kHtoD);
  EXPECT_EQ(h2d.src, MemoryKind::kPageable);
  EXPECT_EQ(h2d.dst, MemoryKind::kDevice);
  const CopyDescription d2h = describe_copy("Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(d2h.kind, CopyKind::kDtoH);
  EXPECT_EQ(d2h.dst, MemoryKind::kPinned);
  EXPECT_EQ(describe_copy("Memcpy DtoD (Device -> Device)").kind, CopyKind::kDtoD);
  EXPECT_EQ(describe_copy("garbage").kind, CopyKind::kUnknown);
}

TEST(AllToAllPurposeOfRange, TorchRecsEmbeddingDistributionsAndNothingElse) {
  // The output distribution: TorchRec's autograd functions (comm_ops.py) and the ranges inside.
  EXPECT_EQ(all_to_all_purpose("All2All_Pooled_Req"), AllToAllPurpose::kEmbeddingsForward);
  EXPECT_EQ(all_to_all_purpose("All2All_Seq_Req"), AllToAllPurpose::kEmbeddingsForward);
  EXPECT_EQ(all_to_all_purpose("All2Allv_Req"), AllToAllPurpose::kEmbeddingsForward);
  EXPECT_EQ(all_to_all_purpose("VariableBatchAll2All_Pooled_Req"), AllToAllPurpose::kEmbeddingsForward);
  EXPECT_EQ(all_to_all_purpose("## alltoall_fwd_single ##"), AllToAllPurpose::kEmbeddingsForward);
  EXPECT_EQ(all_to_all_purpose("All2All_Pooled_WaitBackward"), AllToAllPurpose::kEmbeddingsBackward);
  EXPECT_EQ(all_to_all_purpose("autograd::engine::evaluate_function: All2All_Pooled_ReqBackward"),
            AllToAllPurpose::kEmbeddingsBackward);
  EXPECT_EQ(all_to_all_purpose("## alltoall_bwd_single ##"), AllToAllPurpose::kEmbeddingsBackward);
  // The input distribution (dist_data.py), and the pipeline's stage a batch ahead (train_pipeline.py).
  EXPECT_EQ(all_to_all_purpose("## all2all_data:lengths ##"), AllToAllPurpose::kSparseFeatures);
  EXPECT_EQ(all_to_all_purpose("## all2all_data:kjt splits ##"), AllToAllPurpose::kSparseFeatures);
  EXPECT_EQ(all_to_all_purpose("## all2all_tw_data:init ##"), AllToAllPurpose::kSparseFeatures);
  EXPECT_EQ(all_to_all_purpose("## KJTAllToAllSplitsAwaitable wait() ##"), AllToAllPurpose::kSparseFeatures);
  EXPECT_EQ(all_to_all_purpose("## sparse_data_dist ##"), AllToAllPurpose::kSparseFeaturesAhead);
  EXPECT_EQ(all_to_all_purpose("## start_sparse_data_dist ##"), AllToAllPurpose::kSparseFeaturesAhead);
  // Anything else says nothing about what an all-to-all carries.
  for (const char* other : {"nccl:all_to_all", "c10d::alltoall_base_", "record_param_comms", "_AllToAll",
                            "MoEAlltoAllTokenDispatcher", "## forward ##", "ProfilerStep#3", ""}) {
    EXPECT_EQ(all_to_all_purpose(other), AllToAllPurpose::kUnknown) << other;
  }
}

TEST(Blocking, AsyncCopyBlocksOnlyWithPageableMemory) {
  EXPECT_TRUE(is_blocking(ApiClass::kMemcpyAsync, MemoryKind::kPageable));
  EXPECT_FALSE(is_blocking(ApiClass::kMemcpyAsync, MemoryKind::kPinned));
  EXPECT_TRUE(is_blocking(ApiClass::kMemcpySync, MemoryKind::kPinned));
  EXPECT_TRUE(is_blocking(ApiClass::kStreamSync));
  EXPECT_TRUE(is_blocking(ApiClass::kFree));
  EXPECT_FALSE(is_blocking(ApiClass::kLaunch));
  EXPECT_FALSE(is_blocking(ApiClass::kStreamWait));
  EXPECT_TRUE(is_enqueue(ApiClass::kLaunch));
  EXPECT_FALSE(is_enqueue(ApiClass::kStreamSync));
}

}  // namespace
}  // namespace stepwatch
