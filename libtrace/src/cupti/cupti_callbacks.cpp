#include "cupti/cupti_callbacks.h"

#include <ctime>

#include "core/event_sink.h"
#include "cupti/launch_tracker.h"
#include "stepwatch/core/classify.h"

namespace stepwatch::live {
namespace {

#define SW_RT(name, cls) {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name, ApiClass::cls}
#define SW_DRV(name, cls) {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name, ApiClass::cls}

// CUPTI_NOTES §5. Each entry's class matches classify_api(cuptiGetCallbackName(...)) (a test
// checks it against the real libcupti).
constexpr TracedCallback kApiCallbacks[] = {
    // Runtime: synchronization.
    SW_RT(cudaStreamSynchronize_v3020, kStreamSync),
    SW_RT(cudaStreamSynchronize_ptsz_v7000, kStreamSync),
    SW_RT(cudaDeviceSynchronize_v3020, kDeviceSync),
    SW_RT(cudaEventSynchronize_v3020, kEventSync),
    SW_RT(cudaStreamWaitEvent_v3020, kStreamWait),
    SW_RT(cudaStreamWaitEvent_ptsz_v7000, kStreamWait),
    // Runtime: copies and memsets.
    SW_RT(cudaMemcpy_v3020, kMemcpySync),
    SW_RT(cudaMemcpy_ptds_v7000, kMemcpySync),
    SW_RT(cudaMemcpyAsync_v3020, kMemcpyAsync),
    SW_RT(cudaMemcpyAsync_ptsz_v7000, kMemcpyAsync),
    SW_RT(cudaMemcpyPeer_v4000, kMemcpySync),
    SW_RT(cudaMemcpyPeerAsync_v4000, kMemcpyAsync),
    SW_RT(cudaMemcpyBatchAsync_v12080, kMemcpyAsync),
    SW_RT(cudaMemcpyBatchAsync_ptsz_v12080, kMemcpyAsync),
    SW_RT(cudaMemcpyBatchAsync_v13000, kMemcpyAsync),
    SW_RT(cudaMemcpyBatchAsync_ptsz_v13000, kMemcpyAsync),
    SW_RT(cudaMemset_v3020, kMemsetSync),
    SW_RT(cudaMemset_ptds_v7000, kMemsetSync),
    SW_RT(cudaMemsetAsync_v3020, kMemsetAsync),
    SW_RT(cudaMemsetAsync_ptsz_v7000, kMemsetAsync),
    // Runtime: allocation (cudaFree and cudaFreeHost synchronize implicitly).
    SW_RT(cudaMalloc_v3020, kMalloc),
    SW_RT(cudaFree_v3020, kFree),
    SW_RT(cudaMallocHost_v3020, kMalloc),
    SW_RT(cudaHostAlloc_v3020, kMalloc),
    SW_RT(cudaFreeHost_v3020, kFree),
    SW_RT(cudaMallocManaged_v6000, kMalloc),
    SW_RT(cudaMallocAsync_v11020, kOther),
    SW_RT(cudaMallocAsync_ptsz_v11020, kOther),
    SW_RT(cudaFreeAsync_v11020, kOther),
    SW_RT(cudaFreeAsync_ptsz_v11020, kOther),
    // Runtime: launches. `<<<>>>` compiled by nvcc 13 goes through __cudaLaunchKernel (pitfall 2).
    SW_RT(cudaLaunchKernel_v7000, kLaunch),
    SW_RT(cudaLaunchKernel_ptsz_v7000, kLaunch),
    SW_RT(__cudaLaunchKernel_v13000, kLaunch),
    SW_RT(__cudaLaunchKernel_ptsz_v13000, kLaunch),
    SW_RT(cudaLaunchKernelExC_v11060, kLaunch),
    SW_RT(cudaLaunchKernelExC_ptsz_v11060, kLaunch),
    SW_RT(cudaLaunchCooperativeKernel_v9000, kLaunch),
    SW_RT(cudaLaunchCooperativeKernel_ptsz_v9000, kLaunch),
    SW_RT(cudaGraphLaunch_v10000, kLaunch),
    SW_RT(cudaGraphLaunch_ptsz_v10000, kLaunch),
    // Driver: synchronization.
    SW_DRV(cuStreamSynchronize, kStreamSync),
    SW_DRV(cuStreamSynchronize_ptsz, kStreamSync),
    SW_DRV(cuCtxSynchronize, kDeviceSync),
    SW_DRV(cuCtxSynchronize_v2, kDeviceSync),
    SW_DRV(cuEventSynchronize, kEventSync),
    SW_DRV(cuStreamWaitEvent, kStreamWait),
    SW_DRV(cuStreamWaitEvent_ptsz, kStreamWait),
    // Driver: copies and memsets (cuBLAS/cuDNN/Triton and NCCL use the driver API directly).
    SW_DRV(cuMemcpy, kMemcpySync),
    SW_DRV(cuMemcpy_ptds, kMemcpySync),
    SW_DRV(cuMemcpyAsync, kMemcpyAsync),
    SW_DRV(cuMemcpyAsync_ptsz, kMemcpyAsync),
    SW_DRV(cuMemcpyHtoD_v2, kMemcpySync),
    SW_DRV(cuMemcpyHtoD_v2_ptds, kMemcpySync),
    SW_DRV(cuMemcpyDtoH_v2, kMemcpySync),
    SW_DRV(cuMemcpyDtoH_v2_ptds, kMemcpySync),
    SW_DRV(cuMemcpyDtoD_v2, kMemcpySync),
    SW_DRV(cuMemcpyDtoD_v2_ptds, kMemcpySync),
    SW_DRV(cuMemcpyHtoDAsync_v2, kMemcpyAsync),
    SW_DRV(cuMemcpyHtoDAsync_v2_ptsz, kMemcpyAsync),
    SW_DRV(cuMemcpyDtoHAsync_v2, kMemcpyAsync),
    SW_DRV(cuMemcpyDtoHAsync_v2_ptsz, kMemcpyAsync),
    SW_DRV(cuMemcpyDtoDAsync_v2, kMemcpyAsync),
    SW_DRV(cuMemcpyDtoDAsync_v2_ptsz, kMemcpyAsync),
    SW_DRV(cuMemcpy2D_v2, kMemcpySync),
    SW_DRV(cuMemcpy2DAsync_v2, kMemcpyAsync),
    SW_DRV(cuMemcpy3D_v2, kMemcpySync),
    SW_DRV(cuMemcpy3DAsync_v2, kMemcpyAsync),
    SW_DRV(cuMemcpyPeer, kMemcpySync),
    SW_DRV(cuMemcpyPeerAsync, kMemcpyAsync),
    SW_DRV(cuMemcpyBatchAsync_v2, kMemcpyAsync),
    SW_DRV(cuMemcpyBatchAsync_v2_ptsz, kMemcpyAsync),
    SW_DRV(cuMemsetD8_v2, kMemsetSync),
    SW_DRV(cuMemsetD32_v2, kMemsetSync),
    // The driver calls the runtime's cudaMemsetAsync makes: a memset record carries their
    // correlation id only (cupti_activity.h:2455-2457), so the completeness watermark needs them.
    SW_DRV(cuMemsetD8Async, kMemsetAsync),
    SW_DRV(cuMemsetD16Async, kMemsetAsync),
    SW_DRV(cuMemsetD32Async, kMemsetAsync),
    SW_DRV(cuMemsetD2D8Async, kMemsetAsync),
    SW_DRV(cuMemsetD2D16Async, kMemsetAsync),
    SW_DRV(cuMemsetD2D32Async, kMemsetAsync),
    SW_DRV(cuMemsetD8Async_ptsz, kMemsetAsync),
    SW_DRV(cuMemsetD16Async_ptsz, kMemsetAsync),
    SW_DRV(cuMemsetD32Async_ptsz, kMemsetAsync),
    SW_DRV(cuMemsetD2D8Async_ptsz, kMemsetAsync),
    SW_DRV(cuMemsetD2D16Async_ptsz, kMemsetAsync),
    SW_DRV(cuMemsetD2D32Async_ptsz, kMemsetAsync),
    // Driver: allocation.
    SW_DRV(cuMemAlloc_v2, kMalloc),
    SW_DRV(cuMemFree_v2, kFree),
    SW_DRV(cuMemAllocAsync, kOther),
    SW_DRV(cuMemFreeAsync, kOther),
    // Driver: launches.
    SW_DRV(cuLaunchKernel, kLaunch),
    SW_DRV(cuLaunchKernel_ptsz, kLaunch),
    SW_DRV(cuLaunchKernelEx, kLaunch),
    SW_DRV(cuLaunchKernelEx_ptsz, kLaunch),
    SW_DRV(cuLaunchCooperativeKernel, kLaunch),
    SW_DRV(cuLaunchCooperativeKernel_ptsz, kLaunch),
    SW_DRV(cuGraphLaunch, kLaunch),
    SW_DRV(cuGraphLaunch_ptsz, kLaunch),
};

constexpr TracedCallback kResourceCallbacks[] = {
    {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, ApiClass::kOther},
    {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_STREAM_CREATED, ApiClass::kOther},
    // CUPTI's kernel-name strings may go with their module: the name cache is emptied then.
    {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, ApiClass::kOther},
    {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, ApiClass::kOther},
};

#undef SW_RT
#undef SW_DRV

// Trivially destructible thread-locals: no TLS destructor runs on CUPTI's or the app's threads.
thread_local uint32_t t_runtime_depth = 0;   // traced runtime calls in progress on this thread
thread_local uint32_t t_shard = UINT32_MAX;  // this thread's counter shard
std::atomic<uint32_t> g_next_shard{0};

}  // namespace

int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::span<const TracedCallback> traced_api_callbacks() noexcept { return kApiCallbacks; }
std::span<const TracedCallback> traced_resource_callbacks() noexcept { return kResourceCallbacks; }

CallbackCounters::CallbackCounters(LaunchTracker* tracker) noexcept : tracker_(tracker) {
  for (const TracedCallback& cb : kApiCallbacks) {
    uint8_t role = kCounted;
    if (is_blocking(cb.api_class)) role = kBlocking;
    if (is_enqueue(cb.api_class)) role = kEnqueue;
    if (cb.api_class == ApiClass::kLaunch) role = kLaunch;
    if (cb.domain == CUPTI_CB_DOMAIN_RUNTIME_API && cb.cbid < runtime_role_.size()) runtime_role_[cb.cbid] = role;
    if (cb.domain == CUPTI_CB_DOMAIN_DRIVER_API && cb.cbid < driver_role_.size()) driver_role_[cb.cbid] = role;
  }
}

CallbackCounters::Shard& CallbackCounters::shard() noexcept {
  if (t_shard == UINT32_MAX) t_shard = g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shards_[t_shard];
}

void CallbackCounters::on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const CUpti_CallbackData* data) noexcept {
  const int64_t now = monotonic_ns();
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  uint8_t role = kUntraced;
  if (runtime && cbid < runtime_role_.size()) role = runtime_role_[cbid];
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < driver_role_.size()) role = driver_role_[cbid];
  if (role == kUntraced || data == nullptr) return;

  Shard& s = shard();
  if (data->callbackSite == CUPTI_API_ENTER) {
    if (runtime) ++t_runtime_depth;
    // A driver call made inside a traced runtime call is the same host wait: count it once.
    const bool counted = runtime ? t_runtime_depth == 1 : t_runtime_depth == 0;
    // correlationData carries the ENTER time to the EXIT callback of the same call (0 = skip).
    if (data->correlationData != nullptr) *data->correlationData = counted ? static_cast<uint64_t>(now) : 0u;
    // Where the call was made is read before the wait, while the GPU still has queued work: the
    // few microseconds it takes overlap the drain instead of adding to the idle after it.
    const bool sited = counted && role == kBlocking && hook_ != nullptr;
    // On the records' clock (CLOCK_REALTIME), read once for both users.
    const int64_t entered_at = sited || (counted && tracker_ != nullptr) ? stepwatch::now_ns() : 0;
    if (sited) hook_->enter(data->correlationId, entered_at);
    if (tracker_ != nullptr) {
      const bool enqueues = role == kLaunch || role == kEnqueue;
      // Published at ENTER: the call's record cannot exist before it, and a watermark taken
      // after this point waits for it.
      if (counted) {
        tracker_->enter(data->correlationId, entered_at, enqueues);
      } else if (enqueues) {
        tracker_->nested(data->correlationId);
      }
    }
  } else {
    if (runtime && t_runtime_depth > 0) --t_runtime_depth;
    const uint64_t entered = data->correlationData != nullptr ? *data->correlationData : 0u;
    if (entered != 0) {
      s.api_calls.fetch_add(1, std::memory_order_relaxed);
      if (role == kBlocking) {
        if (hook_ != nullptr) hook_->exit(data->correlationId, stepwatch::now_ns());
        s.blocking_calls.fetch_add(1, std::memory_order_relaxed);
        s.blocking_ns.fetch_add(now - static_cast<int64_t>(entered), std::memory_order_relaxed);
      } else if (role == kLaunch) {
        s.launch_calls.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  s.callback_ns.fetch_add(monotonic_ns() - now, std::memory_order_relaxed);
}

void CallbackCounters::on_resource(CUpti_CallbackId cbid) noexcept {
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) contexts_created_.fetch_add(1, std::memory_order_relaxed);
  if (cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED) streams_created_.fetch_add(1, std::memory_order_relaxed);
}

void CallbackCounters::add_callback_ns(int64_t ns) noexcept {
  shard().callback_ns.fetch_add(ns, std::memory_order_relaxed);
}

CallbackTotals CallbackCounters::totals() const noexcept {
  CallbackTotals t;
  for (const Shard& s : shards_) {
    t.api_calls += s.api_calls.load(std::memory_order_relaxed);
    t.blocking_calls += s.blocking_calls.load(std::memory_order_relaxed);
    t.blocking_ns += s.blocking_ns.load(std::memory_order_relaxed);
    t.launch_calls += s.launch_calls.load(std::memory_order_relaxed);
    t.callback_ns += s.callback_ns.load(std::memory_order_relaxed);
  }
  t.contexts_created = contexts_created_.load(std::memory_order_relaxed);
  t.streams_created = streams_created_.load(std::memory_order_relaxed);
  return t;
}

}  // namespace stepwatch::live
