// The synthetic workload: a small discrete-event model of a training loop — one host (Python)
// thread executing a step program, GPU streams running their queued work in FIFO order — that
// produces a `Trace` with known ground truth.
//
// The model decides when every record runs, so it knows, without any analysis code, when the
// GPU was busy and with what, how long the host waited for data, and which idle time each
// injected fault caused. Scenario tests compare the real pipeline's StepViews and findings
// against that truth (ARCHITECTURE.md "Testing tiers", tier 2).
//
// Timing rules of the model:
//  - a GPU record starts at max(its launching call's end, the previous record's end on its
//    stream, any cross-stream dependency) and runs for its modeled duration;
//  - the launch queue is bounded (`launch_queue_depth` records not yet completed, all streams);
//    a launch call that finds it full blocks until a slot frees, so a GPU-bound loop has the
//    host running ahead by a full queue;
//  - blocking calls (cudaStreamSynchronize, pageable cudaMemcpyAsync, cudaMemcpy) return
//    `return_latency_ns` after the GPU work they wait for has finished;
//  - a collective waits on a compute-stream point (cudaStreamWaitEvent semantics), and the
//    optimizer waits on the last collective.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepwatch/core/trace.h"
#include "synthetic/spans.h"

namespace stepwatch::synthetic {

enum class CommMode : uint8_t {
  kNone,
  kOverlappedBuckets,  // DDP: one all-reduce per gradient bucket, launched as backward produces it
  kSerialized,         // one all-reduce after backward's last kernel: nothing left to overlap with
};

// NCCL kernel names differ across versions; scenarios mix them so the classifier sees all three.
enum class NcclNaming : uint8_t {
  kDevKernel,         // ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)  (NCCL >= 2.19)
  kDevKernelMangled,  // _Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE
  kLegacy,            // ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)
};

// How the step copies its input batch to the GPU.
enum class InputCopy : uint8_t {
  kPinnedAsync,    // pin_memory + non_blocking: cudaMemcpyAsync from pinned memory, enqueues
  kPageableAsync,  // .to(device) from pageable memory: cudaMemcpyAsync that blocks until done
  kPageableSync,   // cudaMemcpy from pageable memory: blocking
  kPinnedSync,     // cudaMemcpy from pinned memory: a synchronous copy blocks whatever the memory kind
};

struct WorkloadConfig {
  std::string scenario = "custom";
  int steps = 8;               // captured steps
  int warmup_steps = 10;       // run before the capture begins (fill the launch queue); not recorded
  int64_t first_step = 1;      // number of the first captured step ("ProfilerStep#<first_step>")
  int rank = 0;
  uint64_t seed = 1;
  bool step_ranges = true;     // false: the `no_marks` variant, no ProfilerStep ranges
  size_t launch_queue_depth = 1024;
  int64_t origin_ns = 5'000'000'000;  // the data's clock origin (kept far below 2^52 ns)

  // Host thread.
  uint32_t host_thread = 4242;       // PyTorch's main thread: pid == tid
  int64_t launch_call_ns = 6'000;    // a launch call when the queue has room
  int64_t host_gap_ns = 14'000;      // Python between two launches
  int64_t return_latency_ns = 8'000; // a blocking call returns this long after its GPU work ended

  // Step program.
  int64_t data_wait_ns = 200'000;    // DataLoader wait at the start of each step
  int64_t data_wait_jitter_ns = 0;   // plus a uniform draw in [0, this)
  InputCopy input_copy = InputCopy::kPinnedAsync;
  uint64_t input_bytes = 16ull << 20;
  int64_t post_copy_host_ns = 0;     // host work between the input copy and the first forward launch
  int forward_kernels = 48;
  int backward_kernels = 96;
  int optimizer_kernels = 16;
  int64_t kernel_ns = 200'000;       // mean compute kernel duration (drawn from 0.5x..1.5x)
  int item_syncs = 0;                // `.item()` syncs per step, spread over forward and backward
  int64_t post_sync_host_ns = 0;     // host work after each `.item()` (metric logging) before the next launch
  bool end_of_step_sync = false;     // the step ends with its result copied to the host (inference: `.cpu()`)
  // torch.profiler(with_stack=True): python_function frames on the host thread — each step inside
  // "train.py(30): train_step", the host work inside "train.py(61): sync_gradients", each `.item()`
  // inside "train.py(40): log_metrics" and the built-in
  // "<built-in method item of Tensor object at 0x…>" it calls (lines are the functions' def lines,
  // as Kineto writes them).
  bool python_stack = false;
  // CPU work of the host's own after backward (DDP's unflatten, an optimizer on the CPU), inside a
  // host range of that name; no launch, no data wait, no blocking call. 0 = none.
  int64_t host_work_ns = 0;
  std::string host_work_range = "unflatten_dense_tensors";

  CommMode comm = CommMode::kNone;
  int buckets = 4;                   // kOverlappedBuckets
  int64_t allreduce_ns = 6'000'000;  // all-reduce GPU time per step (all buckets together)
  NcclNaming nccl_naming = NcclNaming::kDevKernel;
  // Multi-rank runs (multi_rank.h): the k-th all-reduce of the run (warm-up included) ends no
  // earlier than this, the collective's end on every rank; empty = a single rank.
  std::vector<int64_t> allreduce_end_floor_ns;

  // MoE / expert parallelism: `moe_layers` forward layers each dispatch their tokens with an
  // all-to-all, run `expert_kernels` expert matmuls, and combine with a second all-to-all of
  // `a2a_ns` (PyTorch's "nccl:all_to_all" range around an NCCL SendRecv kernel: NCCL runs
  // all-to-all as grouped send/recv). Exposed: the experts wait for the dispatch and the layer's
  // next kernel for the combine. Overlapped (`a2a_overlapped`, pipelined dispatch): the compute
  // stream never waits for them.
  int moe_layers = 0;
  int expert_kernels = 4;
  int64_t a2a_ns = 600'000;
  bool a2a_overlapped = false;
  // A recommendation model's sharded embedding tables (TorchRec with TrainPipelineSparseDist):
  // `embedding_a2a_ns` > 0 adds, per step, the output distribution's all-to-all in forward — after
  // the embedding lookup, inside "All2All_Pooled_Req" — which the next forward kernel waits for;
  // its gradients' all-to-all halfway through backward — inside "All2All_Pooled_WaitBackward" —
  // which the embedding backward waits for; and after forward the next batch's input distribution,
  // two all-to-alls of `sparse_a2a_ns` inside "## sparse_data_dist ##" / "## all2all_data:... ##"
  // that nothing in this step waits for (backward hides them). `a2a_overlapped`
  // (TrainPipelineSemiSync): nothing waits for the output distribution either.
  int64_t embedding_a2a_ns = 0;
  // Lazy module loading (CUDA >= 12.2, HIP): the first launch of each kernel name in the run stalls
  // this long in the launch call, under a CUPTI "Lazy Function Loading" overhead record (Kineto's
  // `overhead` event). With warmup_steps = 0 the first captured step holds every first launch.
  int64_t lazy_load_ns = 0;
  bool lazy_load_records = true;  // false: the stalls without the tracer's records
  int64_t sparse_a2a_ns = 400'000;

  double pinned_gb_per_s = 20.0;     // bytes per ns == GB/s
  double pageable_gb_per_s = 6.0;
  // PCIe path surprise: every `slow_copy_every`-th step (counting warm-up steps from 0, the
  // (N-1)-th, (2N-1)-th, …) copies its pinned input at 1/slow_copy_factor of the pinned rate.
  // 0 = never.
  int slow_copy_every = 0;
  double slow_copy_factor = 5.0;

  // Allocator churn: per step, `allocator_misses` caching-allocator misses spread over forward.
  // Each is a cudaFree of cached blocks (implicitly synchronizing: waits for all queued work,
  // then takes `free_ns`) followed by a cudaMalloc of `malloc_ns`. On every
  // `malloc_stall_every`-th step (counted like slow_copy_every) the first cudaMalloc takes
  // `malloc_stall_ns` instead. 0 = never.
  int allocator_misses = 0;
  int64_t free_ns = 300'000;
  int64_t malloc_ns = 500'000;
  int malloc_stall_every = 0;
  int64_t malloc_stall_ns = 120'000'000;
  uint32_t compute_stream = 7;
  uint32_t comm_stream = 21;
  int16_t device = 0;
};

// What the model knows about one captured step, computed from its own schedule (never from the
// analysis code). Window = the ProfilerStep range; all quantities are clipped to it.
struct StepTruth {
  int64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t compute_ns = 0;       // |C|: compute kernels busy
  int64_t comm_ns = 0;          // |N|: NCCL kernels busy
  int64_t exposed_comm_ns = 0;  // |N \ C|: comm with no compute kernel running
  int64_t copy_ns = 0;          // |M|: copies and memsets busy
  int64_t copy_only_ns = 0;     // |M \ (C ∪ N)|
  int64_t busy_ns = 0;          // |C ∪ N ∪ M|
  int64_t idle_ns = 0;          // window - busy
  int64_t data_wait_ns = 0;     // injected DataLoader wait
  int64_t input_idle_ns = 0;    // the part of the data wait with the GPU idle
  int64_t sync_idle_ns = 0;     // GPU idle after a blocking call drained the queue, until the GPU resumed
  int64_t blocked_idle_ns = 0;  // host inside blocking calls with the GPU idle
  int kernels = 0;              // kernels (compute + comm) starting in the window
  int comm_kernels = 0;
  int blocking_calls = 0;       // blocking calls the model issued that start in the window
  // GPU idle while the host was issuing work (Python between CUDA calls, non-blocking calls),
  // outside data waits and drained gaps: the launch-bound loop's overhead.
  int64_t launch_idle_ns = 0;
  int64_t host_work_idle_ns = 0;  // GPU idle while the host ran `host_work_ns` of CPU work
  // Host time inside synchronous memcpy calls from their copy's start on the GPU to the return,
  // with no compute kernel running (the copy's own cost, without the drain before it).
  int64_t sync_copy_ns = 0;
  int64_t pageable_copy_ns = 0;  // the same for async copies with pageable host memory
  int slow_h2d_copies = 0;       // slowed pinned H2D copies starting (on the GPU) in the window
  int64_t slow_h2d_extra_ns = 0; // their time beyond the pinned rate
  int allocator_calls = 0;       // cudaMalloc/cudaFree calls starting in the window
  int64_t allocator_host_ns = 0; // their host time (whole calls)
  int64_t allocator_idle_ns = 0; // the part of it with the GPU idle
  int64_t allocator_max_call_ns = 0;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// The model's intervals for everything the trace contains, kept so that truth can be computed
// for any window (e.g. the whole-trace pseudo-step of `no_marks`). Spans are merged.
struct GroundTruthTimeline {
  Spans compute, comm, copy, busy;
  Spans data_wait;   // host DataLoader waits
  Spans blocking;    // host time inside blocking calls
  Spans fault_idle;  // GPU idle gaps caused by a blocking call that drained the queue
  std::vector<int64_t> compute_kernel_starts, comm_kernel_starts, blocking_call_starts;  // sorted
  // Host activities the catalog detectors judge. Host spans: a transform that moves the host
  // must move them too.
  Spans dispatch;                // Python between CUDA calls and non-blocking CUDA calls
  Spans host_work;               // the host's own CPU work (`host_work_ns`)
  Spans sync_copy_transfer;      // synchronous memcpy calls, from their copy's GPU start to the return
  Spans pageable_copy_transfer;  // the same for async copies with pageable memory
  std::vector<std::pair<int64_t, int64_t>> allocator_calls;  // cudaMalloc/cudaFree [start, end), sorted
  struct SlowCopy {
    int64_t start_ns = 0;     // GPU start
    int64_t duration_ns = 0;
    int64_t normal_ns = 0;    // at the pinned rate
  };
  std::vector<SlowCopy> slow_h2d;  // sorted by start
};

// One all-reduce as the model ran it: when this rank's kernel started (its arrival) and the
// collective's own duration once every rank has arrived.
struct AllreduceRun {
  int64_t start_ns = 0;
  int64_t own_ns = 0;
};

struct SyntheticRun {
  WorkloadConfig config;
  Trace trace;
  std::vector<StepTruth> truth;  // one per captured step, in order
  GroundTruthTimeline timeline;
  std::vector<AllreduceRun> allreduces;  // every all-reduce the model ran, warm-up included, in order

  StepTruth truth_for_window(int64_t start_ns, int64_t end_ns, int64_t step = 0) const;
};

// Runs the model.
SyntheticRun generate(const WorkloadConfig& config);

// Scenario factory. Healthy: `gpu_bound`, `ddp_overlap`, `moe_overlapped_a2a`, `recsys_overlapped_a2a`.
// Faulty: `moe_exposed_a2a`, `recsys_exposed_a2a`, `slow_dataloader`, `item_sync`, `pageable_copy`,
// `serialized_allreduce`, `launch_bound`, `sync_copy`, `slow_h2d`, `allocator_churn` and the rest of
// scenarios.cpp. `no_marks` is `gpu_bound` without step ranges; any name with the suffix
// `+no_marks` (e.g. `item_sync+no_marks`) drops the ranges of that scenario.
// `magnitude` scales the injected fault (1.0 = the documented size). Throws std::invalid_argument
// for an unknown name.
struct ScenarioOptions {
  int steps = 8;
  double magnitude = 1.0;
  uint64_t seed = 1;
  int64_t first_step = 1;
  int rank = 0;
};
WorkloadConfig scenario_config(std::string_view name, const ScenarioOptions& options = {});
SyntheticRun make_scenario(std::string_view name, const ScenarioOptions& options = {});

// Every scenario name the factory knows (without the `+no_marks` variants).
const std::vector<std::string>& scenario_names();
// One line per scenario: what it models and which detector it targets.
std::string_view scenario_description(std::string_view name);

}  // namespace stepwatch::synthetic
