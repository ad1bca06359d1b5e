// StepView: the per-step timeline analysis — where did the step's wall time go.
//
// Built from a Timeline (indexed events) and a StepWindow. Self-contained: detectors see only
// this, never events, names or vendor types. Invariant (tested on every corpus file):
//   compute_ns + exposed_comm_ns + copy_only_ns + idle.total() == duration_ns()
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stepwatch/core/data_loss.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

// Causes of GPU idle time, ARCHITECTURE.md "Timeline analysis of one step".
enum class IdleCause : uint8_t { kInput, kSync, kLaunch, kHost, kOther };
inline constexpr std::array<IdleCause, 5> kIdleCauses = {IdleCause::kInput, IdleCause::kSync, IdleCause::kLaunch,
                                                         IdleCause::kHost, IdleCause::kOther};
std::string_view to_string(IdleCause);

struct IdleBreakdown {
  std::array<int64_t, 5> ns{};
  int64_t& operator[](IdleCause c) { return ns[static_cast<size_t>(c)]; }
  int64_t operator[](IdleCause c) const { return ns[static_cast<size_t>(c)]; }
  int64_t total() const { return ns[0] + ns[1] + ns[2] + ns[3] + ns[4]; }
};

// Which attribution rule decided a gap.
enum class GapRule : uint8_t {
  kQueuedEarlier = 1,  // rule 1: the next work was queued before the GPU went idle -> other
  kHostBlocked = 2,    // rule 2: a blocking call drained the queue -> sync
  kHostActivity = 3,   // rule 3: split by host evidence -> input / launch / host
};

struct GapRecord {
  int64_t start_ns = 0;  // where the GPU really went idle (may lie before the window)
  int64_t end_ns = 0;    // where it really resumed (may lie past the window)
  int64_t counted_ns = 0;  // the part inside the window
  GapRule rule = GapRule::kHostActivity;
  IdleBreakdown parts;     // the counted part, by cause
  std::string blocking_call;  // rule 2: the call the host was blocked in
};

struct BlockingCallStat {
  std::string name;
  ApiClass api_class = ApiClass::kOther;
  int count = 0;
  int64_t host_ns = 0;      // time the host spent inside these calls (in the window)
  int64_t gpu_idle_ns = 0;  // part of that time with the GPU idle
  uint64_t bytes = 0;       // copies: bytes moved
  MemoryKind host_memory = MemoryKind::kUnknown;  // copies: the host side's memory kind
  CopyKind copy_kind = CopyKind::kUnknown;
  int64_t no_compute_ns = 0;  // host time inside these calls with no compute kernel running
  int64_t copy_gpu_ns = 0;    // copies: GPU time of the copies they launched
  // Copies: host time inside these calls from the start of their copy on the GPU to the return,
  // with no compute kernel running (the whole call when the copy record is missing). The copy's
  // own cost: the wait for work queued before it is the drain that hidden_sync judges.
  int64_t transfer_no_compute_ns = 0;
};

// Where the step's blocking calls were made (call_sites.h): one row per site and call.
struct CallSiteStat {
  std::string where;          // "train.py:142 in train_step", "log_metrics() defined at train.py:40"
  std::string call;           // what the site called on the way: "Tensor.item()"; empty when not known
  std::string blocking_call;  // the blocking call it led to (the one of most GPU idle): "cudaMemcpyAsync"
  int calls = 0;
  int64_t host_ns = 0;      // time the host spent blocked in them (in the window)
  int64_t gpu_idle_ns = 0;  // part of that time with the GPU idle
};

// Kernels of one name in the step (the heaviest names only).
struct KernelStat {
  std::string name;
  int count = 0;
  int64_t total_ns = 0;
  int overlapped_count = 0;        // instances that overlapped an NCCL kernel
  int64_t overlapped_total_ns = 0; // their total duration
};

// One GPU copy starting in the step (the largest only).
struct CopyRecord {
  CopyKind kind = CopyKind::kUnknown;
  MemoryKind src = MemoryKind::kUnknown;
  MemoryKind dst = MemoryKind::kUnknown;
  uint64_t bytes = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  bool async = false;
  int64_t exposed_ns = 0;  // the part of the copy with no compute or NCCL kernel running (whole copy)
  double gb_per_s() const { return duration_ns > 0 ? double(bytes) / double(duration_ns) : 0.0; }
};

// What the launching thread was doing while the GPU sat idle with no data wait, blocking call or
// launch to explain it (rule 3's host part): its innermost host range or CUDA call, by time.
struct HostActivityStat {
  std::string name;  // display name; empty: no range covers it (plain Python, or untraced waiting)
  int64_t ns = 0;
};

// Allocation activity in the step (caching allocators should make it rare after warm-up).
struct AllocationStat {
  int calls = 0;               // cudaMalloc/cudaFree-class API calls starting in the window
  int64_t host_ns = 0;         // host time inside them
  int64_t max_call_ns = 0;
  std::string slowest_call;
  int64_t gpu_idle_ns = 0;     // part of host_ns with the GPU idle (nothing running on it)
  int driver_events = 0;       // device allocations/releases recorded by the tracer (MEMORY2)
  uint64_t bytes = 0;          // bytes allocated (driver events)
};

struct CollectiveStat {
  CollectiveType type = CollectiveType::kNone;
  int kernels = 0;
  int64_t busy_ns = 0;     // |N_type ∩ W|
  int64_t exposed_ns = 0;  // |N_type \ C| within W
  uint64_t bytes = 0;      // message bytes of its kernels starting in W, where known (live: NCCL's NVTX ranges)
};

// All-to-all "layers" (MoE / expert parallelism): the all-to-all kernels starting in the window, in
// start order, taken in pairs — dispatch, then combine — and the compute between a dispatch's end
// and its combine's start: the expert matmuls (the reference's "AllToAll blocks between expert
// matmuls each layer").
//
// All-to-alls whose launch ranges name another purpose (classify.h AllToAllPurpose: the sharded
// embedding tables of a recommendation model) are counted in the totals and in their own part, not
// paired into layers.
struct AllToAllPart {
  int kernels = 0;
  int64_t ns = 0;          // GPU time, summed per kernel (clipped to the window)
  int64_t exposed_ns = 0;  // the part with no compute kernel running
};
struct AllToAllStat {
  int kernels = 0;               // all-to-all kernels starting in the window
  int layers = 0;                // dispatch/combine pairs (an unpaired last kernel counts as one)
  int64_t a2a_ns = 0;            // their GPU time (each kernel clipped to the window)
  int64_t exposed_ns = 0;        // the part with no compute kernel running
  int64_t expert_compute_ns = 0; // |C| between each dispatch and its combine
  int exposed_kernels = 0;       // layered all-to-alls more than half exposed
  int64_t max_exposed_ns = 0;    // the most exposed single layered all-to-all (the worst layer)
  AllToAllPart layered;          // the all-to-alls of no named purpose: the ones paired into layers
  // Embedding sharding (TorchRec): the input distribution of sparse features (`ahead`: issued a
  // batch ahead by the pipeline), the output distribution of embeddings, forward and backward.
  AllToAllPart sparse_features;
  bool sparse_features_ahead = false;
  AllToAllPart embeddings_forward;
  AllToAllPart embeddings_backward;
  int64_t embedding_exposed_ns() const {
    return sparse_features.exposed_ns + embeddings_forward.exposed_ns + embeddings_backward.exposed_ns;
  }
};

// NVML samples (live only; see gpu_samples.h) inside the window, of the devices that ran GPU
// work in it. samples == 0: none (offline data, NVML absent or off).
struct GpuClockStat {
  int samples = 0;                 // SM clock samples
  int64_t sm_clock_min_mhz = 0;
  int64_t sm_clock_median_mhz = 0;
  int64_t max_sm_clock_mhz = 0;    // the device's maximum SM clock (0: not read)
  int64_t temperature_max_c = 0;   // 0: not read
  int64_t power_median_mw = 0;     // 0: not read
  uint64_t clock_event_reasons = 0;  // OR of the reason masks sampled
};

// The program's software stack as its trace shows it, so that a fix names knobs the program has:
// PyTorch (profiler ops, at::native kernels) or a plain CUDA/HIP program, on CUDA or ROCm (hip*
// calls). kUnknown (a StepView built by hand) reads as PyTorch on CUDA.
enum class Framework : uint8_t { kUnknown, kPyTorch, kNone };
// A serving engine running the PyTorch model, whose own settings a fix names: vLLM (its custom ops
// `vllm::…`, its per-iteration annotation `execute_context_…`), SGLang (`sglang::…` ops, its
// `step[DECODE bs=32]` spans).
enum class Engine : uint8_t { kNone, kVllm, kSglang };
struct ProgramStack {
  Framework framework = Framework::kUnknown;
  bool rocm = false;
  Engine engine = Engine::kNone;
  bool pytorch() const { return framework != Framework::kNone; }
};

struct StepView {
  int rank = 0;
  int64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  StepSource source = StepSource::kWholeTrace;
  std::string_view inferred_from;  // kInferred: Segmentation::inferred_from (set by analyze_rank)
  int32_t inferred_period = 0;     // kInferred from the kernel period: GPU records per step
  ProgramStack stack;              // set by the step pipeline from what the data showed so far

  int64_t compute_ns = 0;       // |C|
  int64_t comm_ns = 0;          // |N|
  int64_t exposed_comm_ns = 0;  // |N \ C|
  int64_t copy_ns = 0;          // |M|
  int64_t copy_only_ns = 0;     // |M \ (C ∪ N)|
  int64_t busy_ns = 0;          // |C ∪ N ∪ M|
  IdleBreakdown idle;
  int64_t blocked_idle_ns = 0;  // |B \ (C ∪ N ∪ M)|, B = host time inside blocking calls
  int64_t data_wait_ns = 0;     // |data-wait evidence ∩ W| (DataLoader ranges, data phases)

  int kernels = 0;          // kernels starting in the window
  int syncs = 0;            // blocking calls starting in the window
  int launches = 0;         // launch calls starting in the window
  // Launch lag: kernels starting in the window whose launch call is in the data, and those of them
  // that started within kPromptStartNs of the call's return — the GPU had nothing else queued and
  // ran each kernel as soon as the host issued it (the launch-bound signature).
  int launched_kernels = 0;
  int prompt_kernels = 0;
  int64_t launch_api_ns = 0;
  int64_t median_kernel_ns = 0;  // of kernels starting in the window
  int64_t gc_ns = 0;             // |host ranges named "gc" ∩ W| (the Python shim's GC phases)

  std::vector<GapRecord> gaps;  // every idle gap overlapping the window, in time order
  // Rule 3's host part of the gaps longer than kDispatchGapNs (host work of its own: host_bound)
  // and of the shorter ones (per-op dispatch between kernels: launch_bound), top kTopHostActivity.
  std::vector<HostActivityStat> host_activity;
  std::vector<HostActivityStat> dispatch_activity;
  // The long gaps' host part by the program's innermost Python function (Kineto with_stack=True:
  // "collate() defined at data.py:12"); empty without frames.
  std::vector<HostActivityStat> host_python;
  std::vector<BlockingCallStat> blocking;  // by call name, largest host time first
  std::vector<CallSiteStat> blocking_sites; // where they were made, most GPU idle first (top kTopSites)
  std::vector<CollectiveStat> collectives; // by type, largest exposed first
  std::vector<KernelStat> top_kernels;     // at most kTopKernels names, largest total first
  std::vector<CopyRecord> copies;          // at most kMaxCopies copies, largest first
  AllocationStat allocations;
  AllToAllStat all_to_all;
  GpuClockStat gpu_clocks;
  // Everything lost before this step was judged (records the tracer dropped, records the importer
  // left out): the data_loss detector reports changes. Shared between steps (null: nothing known).
  std::shared_ptr<const LossSnapshot> losses;

  static constexpr size_t kTopKernels = 16;
  static constexpr size_t kTopHostActivity = 5;
  static constexpr size_t kTopSites = 5;
  // A host-activity gap up to this long (from where the GPU went idle to where it resumed) is
  // per-op dispatch overhead — Python and the launch call between two kernels; a longer one is
  // host work of its own (optimizer on the CPU, data preparation, GC, compilation).
  static constexpr int64_t kDispatchGapNs = 1'000'000;
  // A kernel starting this soon after its launch call returned ran as soon as it was issued.
  static constexpr int64_t kPromptStartNs = 50'000;
  static constexpr size_t kMaxCopies = 32;

  int64_t duration_ns() const { return end_ns - start_ns; }
  double duty_cycle() const { return duration_ns() > 0 ? double(busy_ns) / double(duration_ns()) : 0.0; }
};

}  // namespace stepwatch
