// Name-based classification shared by every front end: what an API call does, whether a kernel
// is an NCCL collective and which one, what a copy's name says about its direction and memory.
// The live adapter knows CBIDs and copy kinds directly but falls back to these for names it
// gets from NVTX or from the driver.
#pragma once

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
