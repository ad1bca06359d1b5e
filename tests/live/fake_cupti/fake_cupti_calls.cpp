// The simulated CUDA calls of the faithful model (fake_cupti.h): each plays one runtime call (and
// the driver call inside it) against the model GPU, with the records CUPTI writes for it.
#include <algorithm>

#include "cupti/cupti_record_builder.h"
#include "fake_cupti_model.h"
#include "fake_cupti_state.h"

using fake_cupti::sim::ApiCall;
using fake_cupti::FakeState;
using fake_cupti::sim::Pending;
using fake_cupti::state;

extern "C" {

void fake_cupti_model_defaults(FakeCuptiModel* model) {
  if (model == nullptr) return;
  *model = FakeCuptiModel{};
  model->struct_size = sizeof(FakeCuptiModel);
  model->kernel_record_at_launch = 1;
  model->flush_withholds_incomplete = 1;
  model->forced_incomplete_invalid_kind = 0;
  model->completed_query_sync_records = 1;
  model->launch_queue_depth = 1024;
  model->launch_latency_ns = 5'000;
  model->api_call_ns = 3'000;
}

void fake_cupti_set_model(const FakeCuptiModel* model) {
  if (model == nullptr) return;
  std::lock_guard lock(state().mu);
  state().model = *model;
}

uint32_t fake_cupti_sim_launch(const char* kernel, uint32_t stream, int64_t gpu_ns, int via_runtime) {
  ApiCall call = via_runtime != 0
                     ? fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, kernel)
                     : fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, kernel);
  const auto [start, end] = fake_cupti::sim::queue_work(stream, gpu_ns, /*waits_for_queue=*/true);
  std::vector<Pending> gpu;
  fake_cupti::sim::kernel_records(call, kernel, stream, start, end, gpu);
  fake_cupti::sim::spin_api_call();
  fake_cupti::sim::end_call(call, std::move(gpu), {});
  return call.outer_corr;
}

uint32_t fake_cupti_sim_memcpy(int copy_kind, int host_memory, int async, uint64_t bytes, uint32_t stream,
                               int64_t gpu_ns) {
  const bool to_device = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  const bool dtod = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  const uint32_t inner = dtod ? (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2)
                         : to_device ? (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2)
                                     : (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2);
  ApiCall call = fake_cupti::sim::begin_call(
      CUPTI_CB_DOMAIN_RUNTIME_API,
      async ? CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, inner);
  const auto [start, end] = fake_cupti::sim::queue_work(stream, gpu_ns, /*waits_for_queue=*/true);
  std::vector<Pending> gpu;
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_MEMCPY) != 0) {
      const auto host = static_cast<CUpti_ActivityMemoryKind>(host_memory);
      const auto device = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      stepwatch::live::ActivityBufferBuilder b(512, fake_cupti::layout());
      // 2200-2211: correlationId is the driver call's, runtimeCorrelationId the runtime call's.
      const auto src = to_device ? host : device;
      const auto dst = to_device || dtod ? device : host;
      b.memcpy(static_cast<CUpti_ActivityMemcpyKind>(copy_kind), src, dst, async != 0, bytes,
                                          0, 0, call.inner_corr, call.outer_corr, 0, stream);
      gpu.push_back(fake_cupti::sim::gpu_record_of(b, start, end, offsetof(CUpti_ActivityMemcpy6, start),
                                              offsetof(CUpti_ActivityMemcpy6, end)));
      ++fake_cupti::sim::model().stats.gpu_records;
    }
  }
  // A synchronous copy, or an async one from pageable memory, returns when the copy is done.
  const bool blocks = async == 0 || host_memory == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  if (blocks) {
    fake_cupti::sim::wait_until(end + fake_cupti::sim::kReturnLatencyNs);
  } else {
    fake_cupti::sim::spin_api_call();
  }
  fake_cupti::sim::end_call(call, std::move(gpu), {});
  return call.outer_corr;
}

uint32_t fake_cupti_sim_memset(uint64_t bytes, uint32_t stream, int64_t gpu_ns) {
  ApiCall call = fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async);
  const auto [start, end] = fake_cupti::sim::queue_work(stream, gpu_ns, /*waits_for_queue=*/true);
  std::vector<Pending> gpu;
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_MEMSET) != 0) {
      stepwatch::live::ActivityBufferBuilder b(512, fake_cupti::layout());
      // 2455-2457: "identical to the correlation ID in the driver API activity record".
      b.memset(bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 0, 0, call.inner_corr, 0, stream);
      gpu.push_back(fake_cupti::sim::gpu_record_of(b, start, end, offsetof(CUpti_ActivityMemset4, start),
                                              offsetof(CUpti_ActivityMemset4, end)));
      ++fake_cupti::sim::model().stats.gpu_records;
    }
  }
  fake_cupti::sim::spin_api_call();
  fake_cupti::sim::end_call(call, std::move(gpu), {});
  return call.outer_corr;
}

namespace {
// A call that waits for `until` and leaves a SYNCHRONIZATION record of `type`.
uint32_t blocking_sync(uint32_t outer, uint32_t inner, CUpti_ActivitySynchronizationType type, uint32_t stream,
                       int64_t until) {
  ApiCall call = fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, outer, inner);
  fake_cupti::sim::wait_until(std::max(until + fake_cupti::sim::kReturnLatencyNs, fake_cupti::realtime_ns()));
  std::vector<Pending> cpu;
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) != 0) {
      cpu.push_back(fake_cupti::sim::sync_record(type, call.enter, fake_cupti::realtime_ns(), call.outer_corr, stream, 0));
    }
  }
  fake_cupti::sim::end_call(call, {}, std::move(cpu));
  return call.outer_corr;
}
}  // namespace

uint32_t fake_cupti_sim_stream_sync(uint32_t stream) {
  int64_t until = 0;
  {
    std::lock_guard lock(state().mu);
    until = fake_cupti::sim::model().stream_end[stream];
  }
  return blocking_sync(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
                       CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, stream, until);
}

uint32_t fake_cupti_sim_device_sync(void) {
  int64_t until = 0;
  {
    std::lock_guard lock(state().mu);
    until = fake_cupti::sim::all_streams_end_locked();
  }
  return blocking_sync(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
                       CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, CUPTI_SYNCHRONIZATION_INVALID_VALUE, until);
}

int fake_cupti_sim_event_query(uint32_t stream) {
  ApiCall call = fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuEventQuery);
  fake_cupti::sim::spin_api_call();
  bool complete = false;
  std::vector<Pending> cpu;
  {
    std::lock_guard lock(state().mu);
    FakeState& s = state();
    complete = fake_cupti::sim::model().stream_end[stream] <= fake_cupti::realtime_ns();
    // 8256-8266: by default every query makes a record; EnableAllSyncRecords(0) drops only those of
    // queries whose work has not completed (returnValue CUDA_ERROR_NOT_READY, 600). A completed
    // query's record looks like an event synchronization — UNVERIFIED which type CUPTI gives it.
    const bool all = s.all_sync_records != 0;
    const bool emit = complete ? s.model.completed_query_sync_records != 0 : all;
    if (emit && s.kinds.count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) != 0) {
      cpu.push_back(fake_cupti::sim::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, call.enter,
                                            fake_cupti::realtime_ns(), call.outer_corr, stream, complete ? 0u : 600u));
    }
  }
  fake_cupti::sim::end_call(call, {}, std::move(cpu));
  return complete ? 1 : 0;
}

uint32_t fake_cupti_sim_stream_wait(uint32_t waiting, uint32_t on) {
  ApiCall call = fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent);
  std::vector<Pending> cpu;
  {
    std::lock_guard lock(state().mu);
    fake_cupti::sim::Model& m = fake_cupti::sim::model();
    m.stream_floor[waiting] = std::max(m.stream_floor[waiting], m.stream_end[on]);
  }
  fake_cupti::sim::spin_api_call();
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) != 0) {
      cpu.push_back(fake_cupti::sim::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, call.enter,
                                            fake_cupti::realtime_ns(), call.outer_corr, waiting, 0));
    }
  }
  fake_cupti::sim::end_call(call, {}, std::move(cpu));
  return call.outer_corr;
}

uint32_t fake_cupti_sim_free(int64_t host_ns) {
  ApiCall call = fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
  int64_t until = 0;
  {
    std::lock_guard lock(state().mu);
    until = fake_cupti::sim::all_streams_end_locked();
  }
  // cudaFree synchronizes implicitly: it waits for all queued work first.
  fake_cupti::sim::wait_until(std::max(until, fake_cupti::realtime_ns()) + host_ns);
  fake_cupti::sim::end_call(call, {}, {});
  return call.outer_corr;
}

uint32_t fake_cupti_sim_malloc(int64_t host_ns) {
  ApiCall call = fake_cupti::sim::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
  fake_cupti::sim::wait_until(fake_cupti::realtime_ns() + host_ns);
  fake_cupti::sim::end_call(call, {}, {});
  return call.outer_corr;
}

int64_t fake_cupti_sim_stream_end(uint32_t stream) {
  std::lock_guard lock(state().mu);
  const auto it = fake_cupti::sim::model().stream_end.find(stream);
  return it == fake_cupti::sim::model().stream_end.end() ? 0 : it->second;
}

int64_t fake_cupti_sim_busy_ns(int64_t from_ns, int64_t to_ns) {
  std::lock_guard lock(state().mu);
  int64_t busy = 0;
  for (const auto& [a, b] : fake_cupti::sim::model().busy) {
    const int64_t lo = std::max(a, from_ns), hi = std::min(b, to_ns);
    if (hi > lo) busy += hi - lo;
  }
  return busy;
}

void fake_cupti_sim_stats(FakeCuptiSimStats* out) {
  if (out == nullptr) return;
  std::lock_guard lock(state().mu);
  *out = fake_cupti::sim::model().stats;
  out->struct_size = sizeof(FakeCuptiSimStats);
}

}  // extern "C"
