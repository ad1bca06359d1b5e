#include "synthetic/workload.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "stepwatch/core/classify.h"

namespace stepwatch::synthetic {
namespace {

// splitmix64: deterministic on every platform (std distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

// Kernel names as a PyTorch bf16 transformer step shows them.
constexpr std::array<std::string_view, 5> kForwardKernels = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
    "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
    "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, "
    "false>(pytorch_flash::Flash_fwd_params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
};
constexpr std::array<std::string_view, 4> kBackwardKernels = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, "
    "2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, false, "
    "false, false, false, true, false>(pytorch_flash::Flash_bwd_params)",
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>("
    "c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::"
    "{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul> >(int, at::native::GeluBackwardCUDAKernelImpl("
    "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() "
    "const::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul>)",
};
constexpr std::string_view kOptimizerKernel =
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
    "(at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*>("
    "at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
    "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, "
    "double, bool, float*, float*)";

constexpr std::string_view kExpertKernel =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel";
constexpr std::string_view kAllToAllKernel = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
constexpr std::string_view kAllToAllRange = "nccl:all_to_all";
// TorchRec / FBGEMM: the table-batched embedding kernels and the ranges around the embedding
// all-to-alls (torchrec/distributed/comm_ops.py, dist_data.py, train_pipeline.py).
constexpr std::string_view kEmbeddingForwardKernel =
    "void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 1ul>("
    "at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)";
constexpr std::string_view kEmbeddingBackwardKernel =
    "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, float, float, "
    "1ul>(at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, int>)";
constexpr std::string_view kEmbeddingsForwardRange = "All2All_Pooled_Req";
constexpr std::string_view kEmbeddingsBackwardRange = "All2All_Pooled_WaitBackward";
constexpr std::string_view kSparseDataDistRange = "## sparse_data_dist ##";
constexpr std::array<std::string_view, 2> kSparseFeatureRanges = {"## all2all_data:lengths ##",
                                                                  "## all2all_data:indices ##"};
constexpr std::string_view kDataLoaderRange = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
constexpr std::string_view kOptimizerRange = "Optimizer.step#AdamW.step";

std::string allreduce_kernel_name(NcclNaming naming) {
  switch (naming) {
    case NcclNaming::kDevKernel:
      return "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    case NcclNaming::kDevKernelMangled: {
      const std::string id = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
      return "_Z" + std::to_string(id.size()) + id + "24ncclDevKernelArgsStorageILm4096EE";
    }
    case NcclNaming::kLegacy:
      return "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
  }
  return {};
}

// NCCL >= 2.19 launches through the driver API; older NCCL through the runtime.
std::string_view allreduce_launch_api(NcclNaming naming) {
  return naming == NcclNaming::kLegacy ? "cudaLaunchKernel" : "cuLaunchKernelEx";
}

int64_t transfer_ns(uint64_t bytes, double gb_per_s) {
  return std::max<int64_t>(1'000, static_cast<int64_t>(std::llround(double(bytes) / gb_per_s)));
}

// What each recorded event is to the model: the truth is built from these tags, never from
// the names the analysis classifies.
enum class Role : uint8_t { kNone, kCompute, kComm, kCopy, kDataWait, kBlocking, kAllocator };

enum class CallKind : uint8_t { kSync, kSyncCopy, kPageableCopy, kFree };

struct BlockingCall {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool drained = false;  // the call waited for queued GPU work (it did not find the GPU idle)
  CallKind kind = CallKind::kSync;
  int64_t copy_start_ns = 0;  // copies: when the copy began on the GPU
};

class Model {
 public:
  explicit Model(const WorkloadConfig& config) : cfg_(config), rng_(config.seed * 0x2545F4914F6CDD1Dull + 7) {}

  SyntheticRun run() {
    now_ = cfg_.origin_ns;
    const int total = cfg_.warmup_steps + cfg_.steps;
    std::vector<std::pair<int64_t, int64_t>> windows;
    for (int k = 0; k < total; ++k) {
      const bool captured = k >= cfg_.warmup_steps;
      const int64_t number = cfg_.first_step + (k - cfg_.warmup_steps);
      const int64_t start = now_;
      if (captured && capture_start_ns_ < 0) capture_start_ns_ = start;
      step_index_ = k;
      run_step_program();
      if (captured && cfg_.python_stack) add_frame("train.py(30): train_step", start, now_);
      if (captured) {
        windows.emplace_back(start, now_);
        if (cfg_.step_ranges) {
          add_host(EventKind::kRange, "ProfilerStep#" + std::to_string(number), start, now_, Role::kNone).step =
              number;
        }
      }
    }
    return finish(windows);
  }

 private:
  // ---- recording ------------------------------------------------------------------------------

  Event& record(EventKind kind, std::string_view name, int64_t start, int64_t end, int64_t issued_at, Role role) {
    Event& e = trace_.add(kind, name, start, end);
    issued_at_.push_back(issued_at);
    roles_.push_back(role);
    return e;
  }

  Event& add_host(EventKind kind, std::string_view name, int64_t start, int64_t end, Role role) {
    Event& e = record(kind, name, start, end, start, role);
    e.thread = cfg_.host_thread;
    return e;
  }

  Event& add_api(std::string_view name, int64_t start, int64_t end, Role role = Role::kNone) {
    if (role == Role::kNone) dispatch_.emplace_back(start, end);  // a non-blocking call issues work
    Event& e = add_host(EventKind::kApiCall, name, start, end, role);
    e.detail = static_cast<uint8_t>(classify_api(name));
    e.correlation = next_correlation_++;
    return e;
  }

  Event& add_gpu(EventKind kind, std::string_view name, uint32_t stream, int64_t start, int64_t end,
                 const Event& launcher, Role role) {
    const int64_t launched_at = launcher.start_ns;
    const uint64_t correlation = launcher.correlation;
    Event& e = record(kind, name, start, end, launched_at, role);
    e.device = cfg_.device;
    e.stream = stream;
    e.correlation = correlation;
    if (kind == EventKind::kKernel) e.collective = classify_collective(name);
    tail_[stream] = std::max(tail_[stream], end);
    outstanding_.push(end);
    return e;
  }

  // ---- the launch queue -----------------------------------------------------------------------

  // When a call issued at `t` can enqueue: at once if fewer than `launch_queue_depth` records
  // are still pending, else when enough of them have completed.
  int64_t queue_slot_at(int64_t t) {
    while (!outstanding_.empty() && outstanding_.top() <= t) outstanding_.pop();
    while (outstanding_.size() >= cfg_.launch_queue_depth) {
      t = std::max(t, outstanding_.top());
      outstanding_.pop();
      while (!outstanding_.empty() && outstanding_.top() <= t) outstanding_.pop();
    }
    return t;
  }

  int64_t tail(uint32_t stream) const {
    auto it = tail_.find(stream);
    return it == tail_.end() ? 0 : it->second;
  }

  // ---- host actions ---------------------------------------------------------------------------

  void host(int64_t ns) { now_ += ns; }

  // Python between two CUDA calls (the eager per-op overhead): host time spent issuing work.
  void python(int64_t ns) {
    dispatch_.emplace_back(now_, now_ + ns);
    now_ += ns;
  }

  // An enqueueing call (kernel launch, async memcpy/memset) and the GPU record it creates.
  // Returns the record's end.
  int64_t enqueue(std::string_view api, EventKind kind, std::string_view name, uint32_t stream, int64_t gpu_ns,
                  int64_t dependency_ns, Role role, uint64_t bytes = 0) {
    const int64_t call_start = now_;
    int64_t call_end = queue_slot_at(call_start) + cfg_.launch_call_ns;
    if (cfg_.lazy_load_ns > 0 && kind == EventKind::kKernel && loaded_.insert(std::string(name)).second) {
      // The kernel's first launch loads its module inside the call.
      if (cfg_.lazy_load_records) {
        add_host(EventKind::kOverhead, "Lazy Function Loading", call_end, call_end + cfg_.lazy_load_ns, Role::kNone);
      }
      call_end += cfg_.lazy_load_ns;
    }
    const Event call = add_api(api, call_start, call_end);  // a copy: add_gpu may reallocate
    const int64_t start = std::max({call_end, tail(stream), dependency_ns});
    Event& r = add_gpu(kind, name, stream, start, start + gpu_ns, call, role);
    r.bytes = bytes;
    now_ = call_end;
    return r.end_ns;
  }

  int64_t launch_compute(std::string_view name, int64_t dependency_ns = 0) {
    python(cfg_.host_gap_ns);
    const auto gpu_ns = static_cast<int64_t>(std::llround(double(cfg_.kernel_ns) * (0.5 + rng_.uniform())));
    return enqueue("cudaLaunchKernel", EventKind::kKernel, name, cfg_.compute_stream, gpu_ns, dependency_ns,
                   Role::kCompute);
  }

  // Returns the copy record's index in trace_.events.
  size_t async_copy(CopyKind kind, MemoryKind src, MemoryKind dst, uint64_t bytes, double gb_per_s) {
    python(cfg_.host_gap_ns);
    enqueue("cudaMemcpyAsync", EventKind::kMemcpy, copy_record_name(kind, src, dst), cfg_.compute_stream,
            transfer_ns(bytes, gb_per_s), 0, Role::kCopy, bytes);
    Event& r = trace_.events.back();
    r.detail = static_cast<uint8_t>(kind);
    r.src_memory = src;
    r.dst_memory = dst;
    return trace_.events.size() - 1;
  }

  // A copy whose call returns only after the copy ran (synchronous memcpy, or async with pageable
  // host memory): the copy waits for the stream to drain, then runs, then the call returns.
  void blocking_copy(std::string_view api, CopyKind kind, MemoryKind src, MemoryKind dst, uint64_t bytes,
                     double gb_per_s) {
    python(cfg_.host_gap_ns);
    const int64_t call_start = now_;
    const int64_t issue = queue_slot_at(call_start) + cfg_.launch_call_ns;
    const int64_t copy_start = std::max(issue, tail(cfg_.compute_stream));
    const int64_t copy_end = copy_start + transfer_ns(bytes, gb_per_s);
    const int64_t call_end = copy_end + cfg_.return_latency_ns;
    const Event call = add_api(api, call_start, call_end, Role::kBlocking);  // a copy: add_gpu may reallocate
    Event& r = add_gpu(EventKind::kMemcpy, copy_record_name(kind, src, dst), cfg_.compute_stream, copy_start,
                       copy_end, call, Role::kCopy);
    r.bytes = bytes;
    r.detail = static_cast<uint8_t>(kind);
    r.src_memory = src;
    r.dst_memory = dst;
    const CallKind call_kind = api == "cudaMemcpy" ? CallKind::kSyncCopy : CallKind::kPageableCopy;
    calls_.push_back({call_start, call_end, copy_start > issue, call_kind, copy_start});
    now_ = call_end;
  }

  // cudaStreamSynchronize and its CUPTI synchronization record.
  void stream_synchronize(uint32_t stream) {
    python(2'000);
    const int64_t call_start = now_;
    const int64_t pending_until = tail(stream);
    const int64_t call_end = std::max(call_start + 3'000, pending_until + cfg_.return_latency_ns);
    const uint64_t correlation = add_api("cudaStreamSynchronize", call_start, call_end, Role::kBlocking).correlation;
    Event& sync = record(EventKind::kSync, "Stream Sync", call_start + 1'000, call_end - 1'000, call_start, Role::kNone);
    sync.detail = static_cast<uint8_t>(SyncKind::kStream);
    sync.device = cfg_.device;
    sync.stream = stream;
    sync.thread = cfg_.host_thread;
    sync.correlation = correlation;
    calls_.push_back({call_start, call_end, pending_until > call_start});
    now_ = call_end;
  }

  // `.item()` / `.cpu()` on a scalar: a 4-byte device-to-host copy the host has to wait for.
  // Alternates between the two forms PyTorch traces show: an async copy to pageable memory
  // (which blocks by itself), and an async copy to pinned memory followed by a stream sync.
  void item_sync(int index) {
    const int64_t frame_start = now_;
    if (cfg_.python_stack) python(2'000);  // the call into log_metrics
    const int64_t builtin_start = now_;
    item_sync_calls(index);
    if (cfg_.python_stack) {
      add_frame("<built-in method item of Tensor object at 0x7f3a2c1b9e40>", builtin_start, now_);
      host(cfg_.post_sync_host_ns);
      add_frame("train.py(40): log_metrics", frame_start, now_);
    } else {
      host(cfg_.post_sync_host_ns);
    }
  }

  // A python_function frame on the host thread (a kPythonFrame event, as the importer makes them).
  void add_frame(std::string_view name, int64_t start, int64_t end) {
    add_host(EventKind::kPythonFrame, name, start, end, Role::kNone);
  }

  void item_sync_calls(int index) {
    if (index % 2 == 0) {
      blocking_copy("cudaMemcpyAsync", CopyKind::kDtoH, MemoryKind::kDevice, MemoryKind::kPageable, 4,
                    cfg_.pinned_gb_per_s);
      stream_synchronize(cfg_.compute_stream);  // returns at once: the copy already drained the stream
    } else {
      async_copy(CopyKind::kDtoH, MemoryKind::kDevice, MemoryKind::kPinned, 4, cfg_.pinned_gb_per_s);
      stream_synchronize(cfg_.compute_stream);
    }
  }

  // A DDP gradient all-reduce: record an event on the compute stream, make the NCCL stream wait
  // on it, launch the NCCL kernel. Returns the kernel's end.
  int64_t allreduce(int64_t gpu_ns) {
    python(cfg_.host_gap_ns);
    const int64_t ready = tail(cfg_.compute_stream);
    add_api("cudaEventRecord", now_, now_ + 3'000);
    now_ += 3'000;
    add_api("cudaStreamWaitEvent", now_, now_ + 3'000);
    now_ += 3'000;
    // Multi-rank runs: the kernel starts when this rank arrives and ends no earlier than the
    // collective's end on all ranks (multi_rank.h): it waits inside for a late peer.
    const size_t k = run_allreduces_.size();
    const int64_t floor = k < cfg_.allreduce_end_floor_ns.size() ? cfg_.allreduce_end_floor_ns[k] : 0;
    const int64_t call_start = now_;
    const int64_t call_end = queue_slot_at(call_start) + cfg_.launch_call_ns;
    const Event call = add_api(allreduce_launch_api(cfg_.nccl_naming), call_start, call_end);
    const int64_t start = std::max({call_end, tail(cfg_.comm_stream), ready});
    const int64_t end = std::max(start + gpu_ns, floor);
    add_gpu(EventKind::kKernel, nccl_name_, cfg_.comm_stream, start, end, call, Role::kComm);
    run_allreduces_.push_back({start, gpu_ns});
    now_ = call_end;
    return end;
  }

  // An all-to-all: the "nccl:all_to_all" host range around the NCCL launch (and, when given, the
  // caller's range around that: an autograd function, a pipeline stage), the NCCL stream waiting
  // for the compute stream (the tokens are ready). Returns the kernel's end.
  int64_t all_to_all(int64_t gpu_ns, std::string_view outer = {}) {
    const int64_t outer_start = now_;
    if (!outer.empty()) python(2'000);
    const int64_t range_start = now_;
    python(cfg_.host_gap_ns);
    const int64_t ready = tail(cfg_.compute_stream);
    add_api("cudaEventRecord", now_, now_ + 3'000);
    now_ += 3'000;
    add_api("cudaStreamWaitEvent", now_, now_ + 3'000);
    now_ += 3'000;
    const int64_t end = enqueue("cuLaunchKernelEx", EventKind::kKernel, kAllToAllKernel, cfg_.comm_stream, gpu_ns,
                                ready, Role::kComm);
    add_host(EventKind::kRange, kAllToAllRange, range_start, now_, Role::kNone);
    if (!outer.empty()) add_host(EventKind::kRange, outer, outer_start, now_, Role::kNone);
    return end;
  }

  // The next batch's input distribution (TrainPipelineSparseDist's sparse_data_dist): the sparse
  // features' lengths and ids sent to the tables' ranks; nothing in this step waits for them.
  void sparse_data_dist() {
    const int64_t start = now_;
    for (std::string_view range : kSparseFeatureRanges) all_to_all(cfg_.sparse_a2a_ns, range);
    add_host(EventKind::kRange, kSparseDataDistRange, start, now_, Role::kNone);
  }

  // One MoE expert block: dispatch, expert matmuls, combine. Returns what the layer's next compute
  // kernel waits for (the combine when exposed, nothing when overlapped).
  int64_t moe_block() {
    const int64_t dispatched = all_to_all(cfg_.a2a_ns);
    for (int k = 0; k < cfg_.expert_kernels; ++k) {
      launch_compute(kExpertKernel, k == 0 && !cfg_.a2a_overlapped ? dispatched : 0);
    }
    const int64_t combined = all_to_all(cfg_.a2a_ns);
    return cfg_.a2a_overlapped ? 0 : combined;
  }

  static std::string copy_record_name(CopyKind kind, MemoryKind src, MemoryKind dst) {
    auto word = [](MemoryKind m) -> std::string_view {
      switch (m) {
        case MemoryKind::kPageable: return "Pageable";
        case MemoryKind::kPinned: return "Pinned";
        default: return "Device";
      }
    };
    std::string name = "Memcpy ";
    name += kind == CopyKind::kHtoD ? "HtoD" : kind == CopyKind::kDtoH ? "DtoH" : "DtoD";
    name += " (";
    name += word(src);
    name += " -> ";
    name += word(dst);
    name += ")";
    return name;
  }

  // A caching-allocator miss: cudaFree of cached blocks, which synchronizes the device (waits for
  // all queued work, then unmaps), then cudaMalloc of the new block. Called from inside an op, so
  // no Python runs between the two calls.
  void allocator_miss(int64_t malloc_ns) {
    const int64_t free_start = now_;
    int64_t pending = 0;
    for (const auto& [stream, end] : tail_) pending = std::max(pending, end);
    const int64_t free_end = std::max(free_start, pending + cfg_.return_latency_ns) + cfg_.free_ns;
    add_api("cudaFree", free_start, free_end, Role::kBlocking);
    calls_.push_back({free_start, free_end, pending > free_start, CallKind::kFree, 0});
    allocator_calls_.emplace_back(free_start, free_end);
    add_api("cudaMalloc", free_end, free_end + malloc_ns, Role::kAllocator);
    allocator_calls_.emplace_back(free_end, free_end + malloc_ns);
    now_ = free_end + malloc_ns;
  }

  // Whether this step is one of every `every`-th (the (every-1)-th, (2every-1)-th, … counting from 0).
  bool every_nth_step(int every) const { return every > 0 && step_index_ % every == every - 1; }

  // ---- one training step ----------------------------------------------------------------------

  void run_step_program() {
    // The loop head: next(dataloader). Inside the ProfilerStep range, as in PyTorch.
    const int64_t data_wait_ns =
        cfg_.data_wait_ns + (cfg_.data_wait_jitter_ns > 0 ? scaled_jitter(cfg_.data_wait_jitter_ns) : 0);
    if (data_wait_ns > 0) {
      add_host(EventKind::kRange, kDataLoaderRange, now_, now_ + data_wait_ns, Role::kDataWait);
      host(data_wait_ns);
    }
    switch (cfg_.input_copy) {
      case InputCopy::kPinnedAsync: {
        const bool slow = every_nth_step(cfg_.slow_copy_every) && cfg_.slow_copy_factor > 1.0;
        const double rate = slow ? cfg_.pinned_gb_per_s / cfg_.slow_copy_factor : cfg_.pinned_gb_per_s;
        const size_t at = async_copy(CopyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, cfg_.input_bytes, rate);
        if (slow) {
          const Event& r = trace_.events[at];
          slow_copies_.push_back({r.start_ns, r.duration_ns(), transfer_ns(cfg_.input_bytes, cfg_.pinned_gb_per_s)});
        }
        break;
      }
      case InputCopy::kPageableAsync:
        blocking_copy("cudaMemcpyAsync", CopyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice,
                      cfg_.input_bytes, cfg_.pageable_gb_per_s);
        break;
      case InputCopy::kPageableSync:
        blocking_copy("cudaMemcpy", CopyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, cfg_.input_bytes,
                      cfg_.pageable_gb_per_s);
        break;
      case InputCopy::kPinnedSync:
        blocking_copy("cudaMemcpy", CopyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice, cfg_.input_bytes,
                      cfg_.pinned_gb_per_s);
        break;
    }
    host(cfg_.post_copy_host_ns);

    // `.item()` syncs sit after evenly spaced kernels of forward + backward.
    const int body = cfg_.forward_kernels + cfg_.backward_kernels;
    std::vector<int> sync_after;
    for (int j = 0; j < cfg_.item_syncs; ++j) sync_after.push_back((j + 1) * body / (cfg_.item_syncs + 1));
    int launched = 0;
    int syncs_done = 0;
    auto after_body_kernel = [&] {
      ++launched;
      while (syncs_done < static_cast<int>(sync_after.size()) && sync_after[static_cast<size_t>(syncs_done)] == launched) {
        item_sync(syncs_done++);
      }
    };

    // Allocator misses sit after evenly spaced forward kernels.
    int misses_done = 0;
    int64_t layer_dependency = 0;  // an exposed MoE combine the next layer waits for
    const int moe_every = cfg_.moe_layers > 0 ? std::max(1, cfg_.forward_kernels / cfg_.moe_layers) : 0;
    if (cfg_.embedding_a2a_ns > 0) {
      // The sparse arch first: the table lookup, then its pooled embeddings sent to the ranks
      // whose batch they are; the interaction (the next kernel) needs them.
      launch_compute(kEmbeddingForwardKernel);
      const int64_t pooled = all_to_all(cfg_.embedding_a2a_ns, kEmbeddingsForwardRange);
      layer_dependency = cfg_.a2a_overlapped ? 0 : pooled;
    }
    for (int i = 0; i < cfg_.forward_kernels; ++i) {
      launch_compute(kForwardKernels[static_cast<size_t>(i) % kForwardKernels.size()], layer_dependency);
      layer_dependency = 0;
      after_body_kernel();
      if (moe_every > 0 && (i + 1) % moe_every == 0 && (i + 1) / moe_every <= cfg_.moe_layers) {
        layer_dependency = moe_block();
      }
      while (misses_done < cfg_.allocator_misses &&
             (misses_done + 1) * cfg_.forward_kernels / (cfg_.allocator_misses + 1) == i + 1) {
        const bool stall = misses_done == 0 && every_nth_step(cfg_.malloc_stall_every);
        allocator_miss(stall ? cfg_.malloc_stall_ns : cfg_.malloc_ns);
        ++misses_done;
      }
    }

    // Gradient buffers zeroed before backward.
    python(cfg_.host_gap_ns);
    enqueue("cudaMemsetAsync", EventKind::kMemset, "Memset (Device)", cfg_.compute_stream, 5'000, 0, Role::kCopy,
            4ull << 20);
    trace_.events.back().dst_memory = MemoryKind::kDevice;

    // Bucket sizes: DDP's last bucket (the first layers' gradients) is the smallest.
    std::vector<int64_t> bucket_ns;
    if (cfg_.comm != CommMode::kNone) {
      const int n = std::max(cfg_.buckets, 1);
      const int64_t last = n == 1 ? cfg_.allreduce_ns : cfg_.allreduce_ns / (3 * n);
      for (int b = 0; b + 1 < n; ++b) bucket_ns.push_back((cfg_.allreduce_ns - last) / (n - 1));
      bucket_ns.push_back(last);
    }
    if (cfg_.embedding_a2a_ns > 0) sparse_data_dist();
    int64_t comm_done = 0;
    size_t next_bucket = 0;
    for (int i = 0; i < cfg_.backward_kernels; ++i) {
      if (cfg_.embedding_a2a_ns > 0 && i == cfg_.backward_kernels / 2) {
        // The embeddings' gradients sent back to the tables' ranks; the fused backward-and-update
        // of the tables needs them.
        const int64_t grads = all_to_all(cfg_.embedding_a2a_ns, kEmbeddingsBackwardRange);
        launch_compute(kEmbeddingBackwardKernel, cfg_.a2a_overlapped ? 0 : grads);
      }
      launch_compute(kBackwardKernels[static_cast<size_t>(i) % kBackwardKernels.size()]);
      after_body_kernel();
      if (cfg_.comm == CommMode::kOverlappedBuckets && next_bucket < bucket_ns.size()) {
        // Bucket b is ready after (b+1)/n of backward.
        const auto n = static_cast<int>(bucket_ns.size());
        if (i + 1 == (static_cast<int>(next_bucket) + 1) * cfg_.backward_kernels / n) {
          comm_done = allreduce(bucket_ns[next_bucket++]);
        }
      }
    }
    if (cfg_.comm == CommMode::kSerialized) {
      for (int64_t ns : bucket_ns) comm_done = allreduce(ns);
    }
    if (cfg_.host_work_ns > 0) {
      add_host(EventKind::kRange, cfg_.host_work_range, now_, now_ + cfg_.host_work_ns, Role::kNone);
      if (cfg_.python_stack) add_frame("train.py(61): sync_gradients", now_, now_ + cfg_.host_work_ns);
      host_work_.emplace_back(now_, now_ + cfg_.host_work_ns);
      host(cfg_.host_work_ns);
    }

    // The optimizer needs the reduced gradients: the compute stream waits on the NCCL stream.
    int64_t dependency = 0;
    if (cfg_.comm != CommMode::kNone) {
      python(cfg_.host_gap_ns);
      add_api("cudaStreamWaitEvent", now_, now_ + 3'000);
      now_ += 3'000;
      dependency = comm_done;
    }
    const int64_t opt_start = now_;
    for (int i = 0; i < cfg_.optimizer_kernels; ++i) launch_compute(kOptimizerKernel, i == 0 ? dependency : 0);
    if (cfg_.optimizer_kernels > 0) add_host(EventKind::kRange, kOptimizerRange, opt_start, now_, Role::kNone);
    // Inference loops end with the result copied to the host (`.cpu()`, `.item()`).
    if (cfg_.end_of_step_sync) item_sync(0);
    python(cfg_.host_gap_ns);  // prof.step() and the loop's bookkeeping
  }

  // A draw in [0, jitter_ns).
  int64_t scaled_jitter(int64_t jitter_ns) { return static_cast<int64_t>(rng_.uniform() * double(jitter_ns)); }

  // ---- the capture and the truth --------------------------------------------------------------

  SyntheticRun finish(const std::vector<std::pair<int64_t, int64_t>>& windows) {
    SyntheticRun run;
    run.config = cfg_;
    run.trace.source = "synthetic:" + cfg_.scenario;
    run.trace.format = "synthetic";
    run.trace.rank = cfg_.rank;
    run.trace.device_name = "NVIDIA H100 80GB HBM3 (synthetic)";
    run.allreduces = run_allreduces_;
    run.trace.names = std::move(trace_.names);

    // The capture keeps what a profiler started at the first captured step sees: host activity
    // from then on, and GPU records that were launched then or still ran then (work queued
    // during warm-up, whose launch calls are not in the data).
    GroundTruthTimeline& t = run.timeline;
    const int64_t capture = capture_start_ns_;
    for (size_t i = 0; i < trace_.events.size(); ++i) {
      const Event& e = trace_.events[i];
      const bool keep = issued_at_[i] >= capture || (e.is_gpu_record() && e.end_ns > capture);
      if (!keep) continue;
      run.trace.events.push_back(e);
      const std::pair<int64_t, int64_t> span{e.start_ns, e.end_ns};
      switch (roles_[i]) {
        case Role::kCompute:
          t.compute.push_back(span);
          t.compute_kernel_starts.push_back(e.start_ns);
          break;
        case Role::kComm:
          t.comm.push_back(span);
          t.comm_kernel_starts.push_back(e.start_ns);
          break;
        case Role::kCopy: t.copy.push_back(span); break;
        case Role::kDataWait: t.data_wait.push_back(span); break;
        case Role::kBlocking:
          t.blocking.push_back(span);
          t.blocking_call_starts.push_back(e.start_ns);
          break;
        case Role::kNone:
        case Role::kAllocator: break;
      }
    }
    t.compute = merge_spans(std::move(t.compute));
    t.comm = merge_spans(std::move(t.comm));
    t.copy = merge_spans(std::move(t.copy));
    t.busy = unite_spans(unite_spans(t.compute, t.comm), t.copy);
    t.data_wait = merge_spans(std::move(t.data_wait));
    t.blocking = merge_spans(std::move(t.blocking));
    std::sort(t.compute_kernel_starts.begin(), t.compute_kernel_starts.end());
    std::sort(t.comm_kernel_starts.begin(), t.comm_kernel_starts.end());
    std::sort(t.blocking_call_starts.begin(), t.blocking_call_starts.end());

    // A blocking call that waited on queued work leaves the GPU with an empty queue: the idle gap
    // in progress when it returns lasts until the host has issued new work and it started.
    Spans fault;
    for (const BlockingCall& c : calls_) {
      if (!c.drained || c.start_ns < capture) continue;
      auto it = std::upper_bound(t.busy.begin(), t.busy.end(), c.end_ns,
                                 [](int64_t v, const auto& s) { return v < s.first; });
      const int64_t gap_start = it == t.busy.begin() ? c.start_ns : std::prev(it)->second;
      const int64_t gap_end = it == t.busy.end() ? now_ : it->first;
      if (gap_start <= c.end_ns && gap_end > c.end_ns && gap_start >= c.start_ns) fault.emplace_back(gap_start, gap_end);
    }
    t.fault_idle = merge_spans(std::move(fault));

    // What the catalog detectors judge. Host activity counts from the capture on, as above.
    Spans dispatch, sync_copy, pageable_copy;
    for (const auto& span : dispatch_) {
      if (span.first >= capture) dispatch.push_back(span);
    }
    for (const BlockingCall& c : calls_) {
      if (c.start_ns < capture) continue;
      if (c.kind == CallKind::kSyncCopy) sync_copy.emplace_back(c.copy_start_ns, c.end_ns);
      if (c.kind == CallKind::kPageableCopy) pageable_copy.emplace_back(c.copy_start_ns, c.end_ns);
    }
    t.dispatch = merge_spans(std::move(dispatch));
    Spans host_work;
    for (const auto& span : host_work_) {
      if (span.first >= capture) host_work.push_back(span);
    }
    t.host_work = merge_spans(std::move(host_work));
    t.sync_copy_transfer = merge_spans(std::move(sync_copy));
    t.pageable_copy_transfer = merge_spans(std::move(pageable_copy));
    for (const auto& call : allocator_calls_) {
      if (call.first >= capture) t.allocator_calls.push_back(call);
    }
    for (const GroundTruthTimeline::SlowCopy& c : slow_copies_) {
      if (c.start_ns + c.duration_ns > capture) t.slow_h2d.push_back(c);
    }

    for (size_t k = 0; k < windows.size(); ++k) {
      run.truth.push_back(run.truth_for_window(windows[k].first, windows[k].second,
                                               cfg_.first_step + static_cast<int64_t>(k)));
    }
    return run;
  }

  const WorkloadConfig& cfg_;
  Rng rng_;
  Trace trace_;
  std::vector<int64_t> issued_at_;  // per event: when its host action happened (launch call start for GPU records)
  std::vector<Role> roles_;
  std::vector<BlockingCall> calls_;
  Spans dispatch_;  // Python between CUDA calls and non-blocking calls (host issuing work)
  Spans host_work_; // the host's own CPU work
  std::vector<std::pair<int64_t, int64_t>> allocator_calls_;
  std::vector<GroundTruthTimeline::SlowCopy> slow_copies_;
  int step_index_ = 0;  // of the step being run, warm-up included
  std::unordered_map<uint32_t, int64_t> tail_;  // stream -> end of its last queued record
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> outstanding_;  // ends of pending records
  int64_t now_ = 0;
  int64_t capture_start_ns_ = -1;
  uint64_t next_correlation_ = 1000;
  std::string nccl_name_ = allreduce_kernel_name(cfg_.nccl_naming);
  std::vector<AllreduceRun> run_allreduces_;  // every all-reduce, warm-up included
  std::unordered_set<std::string> loaded_;     // kernel names launched once (lazy_load_ns)
};

int count_in(const std::vector<int64_t>& sorted, int64_t lo, int64_t hi) {
  return static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), hi) -
                          std::lower_bound(sorted.begin(), sorted.end(), lo));
}

}  // namespace

StepTruth SyntheticRun::truth_for_window(int64_t start_ns, int64_t end_ns, int64_t step) const {
  const GroundTruthTimeline& t = timeline;
  StepTruth s;
  s.step = step;
  s.start_ns = start_ns;
  s.end_ns = end_ns;
  const Spans c = clip_spans(t.compute, start_ns, end_ns);
  const Spans n = clip_spans(t.comm, start_ns, end_ns);
  const Spans m = clip_spans(t.copy, start_ns, end_ns);
  const Spans busy = clip_spans(t.busy, start_ns, end_ns);
  const Spans idle = gaps_within(t.busy, start_ns, end_ns);
  s.compute_ns = total_length(c);
  s.comm_ns = total_length(n);
  s.exposed_comm_ns = total_length(subtract_spans(n, c));
  s.copy_ns = total_length(m);
  s.copy_only_ns = total_length(subtract_spans(m, unite_spans(c, n)));
  s.busy_ns = total_length(busy);
  s.idle_ns = total_length(idle);
  const Spans fault = clip_spans(t.fault_idle, start_ns, end_ns);
  const Spans wait = clip_spans(t.data_wait, start_ns, end_ns);
  s.data_wait_ns = total_length(wait);
  // A drained queue exposes whatever the host does next (ARCHITECTURE.md rule 2, amended): the
  // data wait is input wherever the GPU was idle, the rest of a drained gap is the sync's.
  s.input_idle_ns = total_length(intersect_spans(wait, idle));
  s.sync_idle_ns = total_length(subtract_spans(fault, wait));
  s.blocked_idle_ns = total_length(intersect_spans(clip_spans(t.blocking, start_ns, end_ns), idle));
  const int compute = count_in(t.compute_kernel_starts, start_ns, end_ns);
  s.comm_kernels = count_in(t.comm_kernel_starts, start_ns, end_ns);
  s.kernels = compute + s.comm_kernels;
  s.blocking_calls = count_in(t.blocking_call_starts, start_ns, end_ns);

  const Spans dispatch_idle = intersect_spans(clip_spans(t.dispatch, start_ns, end_ns), idle);
  s.launch_idle_ns = total_length(subtract_spans(subtract_spans(dispatch_idle, fault), wait));
  s.host_work_idle_ns = total_length(intersect_spans(clip_spans(t.host_work, start_ns, end_ns), idle));
  s.sync_copy_ns = total_length(subtract_spans(clip_spans(t.sync_copy_transfer, start_ns, end_ns), c));
  s.pageable_copy_ns = total_length(subtract_spans(clip_spans(t.pageable_copy_transfer, start_ns, end_ns), c));
  for (const GroundTruthTimeline::SlowCopy& copy : t.slow_h2d) {
    if (copy.start_ns < start_ns || copy.start_ns >= end_ns) continue;
    ++s.slow_h2d_copies;
    s.slow_h2d_extra_ns += copy.duration_ns - copy.normal_ns;
  }
  for (const auto& [call_start, call_end] : t.allocator_calls) {
    if (call_start < start_ns || call_start >= end_ns) continue;
    ++s.allocator_calls;
    s.allocator_host_ns += call_end - call_start;
    s.allocator_idle_ns += total_length(gaps_within(t.busy, call_start, call_end));
    s.allocator_max_call_ns = std::max(s.allocator_max_call_ns, call_end - call_start);
  }
  return s;
}

SyntheticRun generate(const WorkloadConfig& config) { return Model(config).run(); }

}  // namespace stepwatch::synthetic
