// Name-based classification shared by every front end: what an API call does, whether a kernel
// is an NCCL collective and which one, what a copy's name says about its direction and memory.
// The live adapter knows CBIDs and copy kinds directly but falls back to these for names it
// gets from NVTX or from the driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stepwatch/core/event.h"

namespace stepwatch {

// CUDA runtime/driver and HIP API names, with or without version suffixes
// (`cudaMemcpy_v3020`, `cuStreamSynchronize_ptsz`, `__cudaLaunchKernel_v13000`).
ApiClass classify_api(std::string_view name);

// The name a message shows: CUDA/HIP calls without their version suffix (`cudaMemcpy_v3020` ->
// `cudaMemcpy`, `cuLaunchKernel_ptsz` -> `cuLaunchKernel`); any other name unchanged.
std::string_view display_name(std::string_view name);

// NCCL kernels: `ncclDevKernel_*`, `ncclSymkDevKernel_*` (NCCL >= 2.19 / 2.27) and
// `ncclKernel_*` (older), mangled (`_Z38ncclDevKernel_AllReduce_...`) or not.
// Returns kNone for anything that is not an NCCL kernel.
CollectiveType classify_collective(std::string_view kernel_name);

// An NCCL kernel's operation as PyTorch names it in the kernel's args ("Collective name":
// "allreduce", "_allgather_base", "reduce_scatter_tensor", "all_to_all", "send"), for kernels whose
// name tells nothing (RCCL's ncclDevKernel_Generic). kOther when unknown or empty.
CollectiveType classify_collective_op(std::string_view op);

// What an all-to-all carries, read from a host range around its launch. Sharded embedding tables
// (TorchRec / FBGEMM recommendation models) run two: the input distribution sends each batch's
// sparse features (KeyedJaggedTensor ids and lengths) to the ranks that own the tables
// ("## all2all_data:lengths ##", "## all2all_tw_data:init ##", inside TrainPipelineSparseDist's
// "## sparse_data_dist ##" when the pipeline runs it a batch ahead), the output distribution sends
// the looked-up embeddings back (the autograd functions "All2All_Pooled_Req",
// "All2All_Seq_Req", "All2Allv_Req", and in backward "All2All_Pooled_WaitBackward",
// "## alltoall_bwd_single ##"). kUnknown for every other name: an MoE dispatch/combine, sequence
// parallelism, or a range that says nothing.
enum class AllToAllPurpose : uint8_t {
  kUnknown,
  kSparseFeatures,       // the input distribution
  kSparseFeaturesAhead,  // the same, issued a batch ahead by the pipeline ("sparse_data_dist")
  kEmbeddingsForward,    // the output distribution
  kEmbeddingsBackward,   // its gradients
};
inline constexpr size_t kAllToAllPurposes = 5;
AllToAllPurpose all_to_all_purpose(std::string_view range_name);

// The tracer's records of lazy module loading: CUPTI's overhead kinds LAZY_FUNCTION_LOADING and
// RUNTIME_TRIGGERED_MODULE_LOADING, named "Lazy Function Loading" / "Runtime Triggered Module Loading"
// in Kineto's `overhead` events and "CUPTI overhead: lazy function loading" / "...: runtime-triggered
// module loading" by the live adapter.
bool is_module_loading_overhead(std::string_view name);

// Kineto's copy names: "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)".
struct CopyDescription {
  CopyKind kind = CopyKind::kUnknown;
  MemoryKind src = MemoryKind::kUnknown;
  MemoryKind dst = MemoryKind::kUnknown;
};
CopyDescription describe_copy(std::string_view copy_name);

// True when the call makes the host wait for the GPU (rule 2's list). An async copy blocks
// only when one side is pageable host memory, so the copy's memory kinds are needed.
bool is_blocking(ApiClass cls, MemoryKind host_side_memory = MemoryKind::kUnknown);

// The host side of a copy: where pageable memory makes an async copy blocking.
MemoryKind host_side_memory(const Event& copy);

// True when the call enqueues GPU work without blocking (rule 3's "launch" evidence).
bool is_enqueue(ApiClass cls);

}  // namespace stepwatch
