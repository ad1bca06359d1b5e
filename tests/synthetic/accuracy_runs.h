// Synthetic runs for the accuracy cases of real traces (issue 14): data that is not a training loop
// of marked steps — a single forward pass, serving engines' step ranges, a profiler's closing empty
// step, one-off initialization in the capture, RCCL's generic collective kernels, a gradual
// slowdown. Each is built from the workload model (workload.h) plus a transform whose truth is
// known by construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synthetic/workload.h"

namespace stepwatch::synthetic {

// One forward pass of `layers` layers (5 kernels each, ~150 µs, the host launching far ahead of the
// GPU), no step ranges, ending with the result copied to the host; `stall_ns` > 0 first copies the
// input with a synchronous cudaMemcpy from pageable memory that takes that long (a 493 ms stall).
SyntheticRun single_forward(int layers, int64_t stall_ns = 0);

// The run's ProfilerStep ranges renamed as SGLang names its forward steps: `step[DECODE bs=32]`,
// every third one `step[EXTEND bs=15 toks=15360]`.
void to_sglang_step_ranges(SyntheticRun& run);
// The same with vLLM V1's per-iteration annotation, a decode of 32 requests:
// "execute_context_0(0)_generation_32(32)" (vllm/v1/worker/gpu_worker.py, Worker.annotate_profile).
void to_vllm_iterations(SyntheticRun& run);

// A closing ProfilerStep#N+1 of 49 µs after the host's last event, holding no GPU work and no CUDA
// call (the profiler's last `step()` before it stopped).
void add_trailing_empty_step(SyntheticRun& run);

// One-off initialization in the capture, before the first step: the first CUDA call creating the
// context (`context_ns`), a cudaFree setting up the allocator, stream creation. With
// `module_load_ns` > 0, the first step also holds a lazy module load of that long (a host stall
// inside it, in a cuModuleLoadData call). Returns the GPU-idle time of those calls (the truth).
int64_t add_initialization(SyntheticRun& run, int64_t context_ns, int64_t module_load_ns);

// RCCL's naming: every NCCL kernel becomes ncclDevKernel_Generic (its name tells no operation) and
// each launch of one sits inside a PyTorch `nccl:all_reduce` op range.
void to_rccl_generic(SyntheticRun& run);

// A gradual slowdown: every compute kernel of the k-th captured step (from 0) runs 1 + per_step × k
// times as long (the same kernels, no new gaps: linear drift).
void inject_linear_drift(SyntheticRun& run, double per_step);

// The same program written without PyTorch: kernels renamed (no at::native), ProfilerStep#N ranges
// as NVTX `step N` ranges, DataLoader ranges as `data` phases, no optimizer ranges; with `rocm`,
// cuda* calls as their hip* counterparts.
void to_plain_program(SyntheticRun& run, bool rocm);

}  // namespace stepwatch::synthetic
