// The faithful model (fake_cupti.h, "the faithful model"): CUDA calls played on the calling thread
// against a model GPU, with the callbacks, activity records and buffer life cycle of CUPTI 13.0 as
// its headers document them. Every behaviour cites the header line it follows; the ones no header
// settles are marked UNVERIFIED and listed in docs/gpu-validation.md.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <vector>

#include "cupti/cupti_record_builder.h"
#include "fake_cupti_state.h"

namespace fake_cupti {
namespace {

using stepwatch::live::ActivityBufferBuilder;

// A GPU record whose timestamps are written when its buffer is delivered: GPU timestamps are
// converted to the CPU clock "during the post-processing phase" (cupti_activity.h:8126-8131), and
// a forced flush may hand it back still incomplete.
struct GpuSlot {
  size_t offset = 0;
  size_t start_field = 0;  // offsetof(start), offsetof(end) in its struct
  size_t end_field = 0;
  size_t completed_field = 0;  // Kernel10::completed (0 = none)
  int64_t start_rt = 0;
  int64_t end_rt = 0;
};

struct SimBuffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  size_t used = 0;
  int64_t complete_at = 0;  // when its last record completes (realtime)
  std::vector<GpuSlot> gpu;
};

// One record to write: its bytes (CPU-side timestamps already on CUPTI's clock) and, for a GPU
// record, what is filled in at delivery.
struct Pending {
  std::vector<uint8_t> bytes;
  bool is_gpu = false;
  GpuSlot slot;
};

constexpr int64_t kThreadGlobal = -1;  // per-thread buffers off: one buffer for every thread
constexpr int64_t kDeviceKey = -2;     // kernel records written when the kernel ends
constexpr int64_t kReturnLatencyNs = 8'000;  // a blocking call returns this long after its work

struct DeviceRecord {
  Pending record;
  int64_t end_rt;
};

// The model, guarded by state().mu.
struct Model {
  std::map<int64_t, SimBuffer> open;  // by thread key
  std::vector<SimBuffer> closed;      // full, waiting for their records to complete
  std::map<uint32_t, int64_t> stream_end;
  std::map<uint32_t, int64_t> stream_floor;  // cudaStreamWaitEvent dependencies
  std::deque<int64_t> in_flight;             // end times of queued GPU work, sorted
  std::vector<DeviceRecord> device_pending;  // kernel_record_at_launch == 0
  FakeCuptiSimStats stats{};
  uint32_t next_correlation = 1;
};

Model& model() {
  static Model* m = new Model();  // leaked with the fake's state
  return *m;
}

int64_t thread_key_locked() {
  FakeState& s = state();
  const auto it = s.attributes.find(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER);
  const bool per_thread = it == s.attributes.end() || it->second != 0;  // default 1 (7201-7211)
  return per_thread ? static_cast<int64_t>(::syscall(SYS_gettid)) : kThreadGlobal;
}

// The thread id an API record carries (7245-7262): pthread_self() by default, gettid() with
// CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM; CUpti_ActivityAPI::threadId is 32 bits.
uint32_t record_thread_id_locked() {
  if (state().thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    return static_cast<uint32_t>(::syscall(SYS_gettid));
  }
  return static_cast<uint32_t>(::pthread_self());
}

bool kind_enabled_locked(CUpti_ActivityKind kind) { return state().kinds.count(static_cast<int>(kind)) != 0; }

void wait_until(int64_t t) {
  for (;;) {
    const int64_t left = t - realtime_ns();
    if (left <= 0) return;
    if (left > 300'000) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(left - 200'000));
    } else {
      std::this_thread::yield();
    }
  }
}

void install_buffer_locked(int64_t key, uint8_t* data, size_t size) {
  Model& m = model();
  if (auto it = m.open.find(key); it != m.open.end()) {
    if (it->second.used > 0) m.closed.push_back(std::move(it->second));
    m.open.erase(it);
  }
  SimBuffer b;
  b.data = data;
  b.size = size;
  m.open.emplace(key, std::move(b));
}

// Writes `records` into `key`'s buffer, asking the client for a new buffer (bufferRequested, on
// this thread, no fake lock held: 7668) whenever the next record does not fit. A refused request
// drops the record; CUPTI counts it (cuptiActivityGetNumDroppedRecords).
void emit(int64_t key, std::vector<Pending>& records) {
  FakeState& s = state();
  Model& m = model();
  std::unique_lock lock(s.mu);
  for (Pending& r : records) {
    for (int attempt = 0;; ++attempt) {
      auto it = m.open.find(key);
      if (it != m.open.end() && it->second.used + r.bytes.size() <= it->second.size) {
        SimBuffer& b = it->second;
        std::memcpy(b.data + b.used, r.bytes.data(), r.bytes.size());
        if (r.is_gpu) {
          r.slot.offset = b.used;
          b.gpu.push_back(r.slot);
        }
        b.complete_at = std::max(b.complete_at, r.is_gpu ? r.slot.end_rt : 0);
        b.used += r.bytes.size();
        break;
      }
      CUpti_BuffersCallbackRequestFunc requested = s.requested;
      if (requested == nullptr || attempt > 0) {
        ++s.dropped;  // no buffer for it
        break;
      }
      lock.unlock();
      uint8_t* data = nullptr;
      size_t size = 0;
      size_t max_records = 0;
      requested(&data, &size, &max_records);
      lock.lock();
      ++m.stats.buffers_requested;
      if (data == nullptr || size < r.bytes.size()) {
        ++m.stats.buffers_refused;
        ++s.dropped;
        break;
      }
      install_buffer_locked(key, data, size);
    }
  }
}

template <typename R>
Pending record_of(const R& rec) {
  Pending p;
  p.bytes.resize(sizeof(R));
  std::memcpy(p.bytes.data(), &rec, sizeof(R));
  return p;
}

template <typename R>
Pending gpu_record_of(const R& rec, int64_t start_rt, int64_t end_rt, size_t start_field, size_t end_field,
                      size_t completed_field = 0) {
  Pending p = record_of(rec);
  p.is_gpu = true;
  p.slot.start_field = start_field;
  p.slot.end_field = end_field;
  p.slot.completed_field = completed_field;
  p.slot.start_rt = start_rt;
  p.slot.end_rt = end_rt;
  return p;
}

// One simulated CUDA call: the outer (runtime, or driver when called directly) API and the driver
// API the runtime calls inside it, each with its own correlation id (CUpti_CallbackData
// correlationId, cupti_callbacks.h:331-406), callbacks ENTER outer, ENTER inner ... EXIT inner,
// EXIT outer, and their API records.
struct ApiCall {
  CUpti_CallbackDomain outer_domain = CUPTI_CB_DOMAIN_RUNTIME_API;
  uint32_t outer_cbid = 0;
  uint32_t inner_cbid = 0;  // a driver cbid, 0 = none
  const char* symbol = nullptr;
  uint32_t outer_corr = 0;
  uint32_t inner_corr = 0;
  int64_t enter = 0;
  int64_t inner_enter = 0;
  uint64_t outer_data = 0;
  uint64_t inner_data = 0;
};

void fire(const ApiCall& call, bool inner, CUpti_ApiCallbackSite site, uint64_t* data) {
  CUpti_CallbackData cb{};
  const CUpti_CallbackDomain domain = inner ? CUPTI_CB_DOMAIN_DRIVER_API : call.outer_domain;
  const uint32_t cbid = inner ? call.inner_cbid : call.outer_cbid;
  cb.callbackSite = site;
  const char* name = nullptr;
  if (real().get_callback_name != nullptr) real().get_callback_name(domain, cbid, &name);
  cb.functionName = name;
  cb.symbolName = call.symbol;
  cb.correlationId = inner ? call.inner_corr : call.outer_corr;
  cb.correlationData = data;
  fire_subscriber(domain, cbid, &cb);
}

ApiCall begin_call(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t inner_cbid, const char* symbol = nullptr) {
  ApiCall call;
  call.outer_domain = domain;
  call.outer_cbid = cbid;
  call.inner_cbid = inner_cbid;
  call.symbol = symbol;
  {
    std::lock_guard lock(state().mu);
    Model& m = model();
    call.outer_corr = m.next_correlation++;
    if (inner_cbid != 0) call.inner_corr = m.next_correlation++;
    ++m.stats.api_calls;
  }
  call.enter = realtime_ns();
  fire(call, false, CUPTI_API_ENTER, &call.outer_data);
  if (inner_cbid != 0) {
    call.inner_enter = realtime_ns();
    fire(call, true, CUPTI_API_ENTER, &call.inner_data);
  }
  return call;
}

// Ends the call (EXIT callbacks) and writes its API records plus `gpu` (written first: a GPU
// record is reserved when the work is queued) and `cpu` records into this thread's buffer.
void end_call(ApiCall& call, std::vector<Pending> gpu, std::vector<Pending> cpu) {
  const int64_t inner_exit = realtime_ns();
  if (call.inner_cbid != 0) fire(call, true, CUPTI_API_EXIT, &call.inner_data);
  const int64_t exit = realtime_ns();
  fire(call, false, CUPTI_API_EXIT, &call.outer_data);
  int64_t key = 0;
  std::vector<Pending> records;
  {
    std::lock_guard lock(state().mu);
    key = thread_key_locked();
    const uint32_t tid = record_thread_id_locked();
    auto api = [&](CUpti_ActivityKind kind, uint32_t cbid, int64_t a, int64_t b, uint32_t corr) {
      if (!kind_enabled_locked(kind)) return;
      CUpti_ActivityAPI r{};
      r.kind = kind;
      r.cbid = cbid;
      r.start = to_cupti_clock_locked(a);
      r.end = to_cupti_clock_locked(b);
      r.processId = static_cast<uint32_t>(::getpid());
      r.threadId = tid;
      r.correlationId = corr;
      records.push_back(record_of(r));
    };
    for (Pending& p : gpu) records.push_back(std::move(p));
    for (Pending& p : cpu) records.push_back(std::move(p));
    const CUpti_ActivityKind outer_kind =
        call.outer_domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    api(outer_kind, call.outer_cbid, call.enter, exit, call.outer_corr);
    if (call.inner_cbid != 0) {
      api(CUPTI_ACTIVITY_KIND_DRIVER, call.inner_cbid, call.inner_enter, inner_exit, call.inner_corr);
    }
  }
  emit(key, records);
}

// Queues GPU work of `gpu_ns` on `stream`: waits while the launch queue is full (a launch call
// blocks then), returns [start, end) on the model GPU.
std::pair<int64_t, int64_t> queue_work(uint32_t stream, int64_t gpu_ns, bool waits_for_queue) {
  FakeState& s = state();
  Model& m = model();
  std::unique_lock lock(s.mu);
  for (;;) {
    const int64_t now = realtime_ns();
    while (!m.in_flight.empty() && m.in_flight.front() <= now) m.in_flight.pop_front();
    const size_t depth = static_cast<size_t>(std::max(s.model.launch_queue_depth, 1));
    if (!waits_for_queue || m.in_flight.size() < depth) break;
    const int64_t until = m.in_flight[m.in_flight.size() - depth];
    lock.unlock();
    wait_until(until);
    lock.lock();
  }
  const int64_t now = realtime_ns();
  const int64_t start = std::max({now + s.model.launch_latency_ns, m.stream_end[stream], m.stream_floor[stream]});
  const int64_t end = start + std::max<int64_t>(gpu_ns, 1);
  m.stream_end[stream] = end;
  m.in_flight.insert(std::upper_bound(m.in_flight.begin(), m.in_flight.end(), end), end);
  return {start, end};
}

int64_t all_streams_end_locked() {
  int64_t end = 0;
  for (const auto& [stream, t] : model().stream_end) end = std::max(end, t);
  return end;
}

void spin_api_call() { wait_until(realtime_ns() + state().model.api_call_ns); }

Pending sync_record(CUpti_ActivitySynchronizationType type, int64_t a, int64_t b, uint32_t corr, uint32_t stream,
                    uint32_t return_value) {
  CUpti_ActivitySynchronization2 r{};
  r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  r.type = type;
  r.start = to_cupti_clock_locked(a);
  r.end = to_cupti_clock_locked(b);
  // The API it belongs to — UNVERIFIED whether CUPTI uses the runtime or the driver call's id.
  r.correlationId = corr;
  r.contextId = 1;
  r.streamId = stream;
  r.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  r.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  r.returnValue = return_value;
  return record_of(r);
}

// A kernel record: reserved in the launching thread's buffer now (the default, UNVERIFIED), or
// written into a buffer of its own when the kernel ends.
void kernel_records(const ApiCall& call, const char* name, uint32_t stream, int64_t start, int64_t end,
                    std::vector<Pending>& gpu) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  if (!kind_enabled_locked(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  ActivityBufferBuilder b(sizeof(CUpti_ActivityKernel10));
  CUpti_ActivityKernel10* k = b.kernel(name, 0, 0, call.outer_corr, 0, stream);
  Pending p = gpu_record_of(*k, start, end, offsetof(CUpti_ActivityKernel10, start),
                            offsetof(CUpti_ActivityKernel10, end), offsetof(CUpti_ActivityKernel10, completed));
  ++model().stats.gpu_records;
  if (s.model.kernel_record_at_launch != 0) {
    gpu.push_back(std::move(p));
  } else {
    model().device_pending.push_back({std::move(p), end});
  }
}

// Timestamps of a delivered GPU record, or its incomplete form in a forced flush.
void finish_slot_locked(SimBuffer& b, const GpuSlot& g, int64_t now, bool forced, bool withhold) {
  uint8_t* rec = b.data + g.offset;
  auto put = [&](size_t field, uint64_t v) {
    if (field != 0) std::memcpy(rec + field, &v, sizeof(v));
  };
  const bool incomplete = withhold && g.end_rt > now;
  if (incomplete && forced) {
    ++model().stats.forced_incomplete;
    if (state().model.forced_incomplete_invalid_kind != 0) {
      const uint32_t invalid = CUPTI_ACTIVITY_KIND_INVALID;
      std::memcpy(rec, &invalid, sizeof(invalid));
      return;
    }
    put(g.start_field, g.start_rt > now ? 0 : to_cupti_clock_locked(g.start_rt));
    put(g.end_field, 0);
    put(g.completed_field, 0);
    return;
  }
  put(g.start_field, to_cupti_clock_locked(g.start_rt));
  put(g.end_field, to_cupti_clock_locked(g.end_rt));
  put(g.completed_field, to_cupti_clock_locked(g.end_rt));
}

}  // namespace

// Kernel records of the "written when the kernel ends" variant, for kernels that ended: into a
// buffer of their own, requested on the flushing thread.
void sim_write_completed_device_records() {
  std::vector<Pending> ready;
  {
    std::lock_guard lock(state().mu);
    Model& m = model();
    const int64_t now = realtime_ns();
    auto split = std::stable_partition(m.device_pending.begin(), m.device_pending.end(),
                                       [&](const DeviceRecord& r) { return r.end_rt > now; });
    for (auto it = split; it != m.device_pending.end(); ++it) ready.push_back(std::move(it->record));
    m.device_pending.erase(split, m.device_pending.end());
  }
  if (!ready.empty()) emit(kDeviceKey, ready);
}

void sim_collect_for_flush_locked(bool forced, std::vector<Delivery>& out) {
  FakeState& s = state();
  Model& m = model();
  const int64_t now = realtime_ns();
  const bool withhold = s.model.flush_withholds_incomplete != 0;
  // 7724-7727: the default flush returns buffers "which have all the activity records completed,
  // buffers need not to be full though"; 7728-7731: a forced flush returns every buffer.
  auto deliverable = [&](const SimBuffer& b) { return b.used > 0 && (forced || !withhold || b.complete_at <= now); };
  auto hand_back = [&](SimBuffer& b) {
    for (const GpuSlot& g : b.gpu) finish_slot_locked(b, g, now, forced, withhold);
    out.push_back({b.data, b.size, b.used});
    ++m.stats.buffers_delivered;
  };
  std::vector<SimBuffer> kept;
  for (SimBuffer& b : m.closed) {
    if (deliverable(b)) {
      hand_back(b);
    } else {
      kept.push_back(std::move(b));
      ++m.stats.buffers_withheld;
    }
  }
  m.closed.swap(kept);
  for (auto it = m.open.begin(); it != m.open.end();) {
    if (deliverable(it->second)) {
      hand_back(it->second);
      it = m.open.erase(it);  // the thread's next record asks for a new buffer
    } else {
      if (it->second.used > 0) ++m.stats.buffers_withheld;
      ++it;
    }
  }
}

void sim_reset_locked() {
  Model& m = model();
  m.open.clear();
  m.closed.clear();
  m.stream_end.clear();
  m.stream_floor.clear();
  m.in_flight.clear();
  m.device_pending.clear();
  m.stats = FakeCuptiSimStats{};
  // Correlation ids keep growing across resets, like CUPTI's for the life of a process.
}

void sim_finalize_locked() {
  Model& m = model();
  auto count = [&](const SimBuffer& b) {
    if (b.used > 0) m.stats.records_lost_at_finalize += 1;
  };
  for (const SimBuffer& b : m.closed) count(b);
  for (const auto& [key, b] : m.open) count(b);
  m.open.clear();
  m.closed.clear();
  m.device_pending.clear();
}

}  // namespace fake_cupti

using fake_cupti::ApiCall;
using fake_cupti::FakeState;
using fake_cupti::Pending;
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
                     ? fake_cupti::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, kernel)
                     : fake_cupti::begin_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, kernel);
  const auto [start, end] = fake_cupti::queue_work(stream, gpu_ns, /*waits_for_queue=*/true);
  std::vector<Pending> gpu;
  fake_cupti::kernel_records(call, kernel, stream, start, end, gpu);
  fake_cupti::spin_api_call();
  fake_cupti::end_call(call, std::move(gpu), {});
  return call.outer_corr;
}

uint32_t fake_cupti_sim_memcpy(int copy_kind, int host_memory, int async, uint64_t bytes, uint32_t stream,
                               int64_t gpu_ns) {
  const bool to_device = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  const bool dtod = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  const uint32_t inner = dtod ? (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2)
                         : to_device ? (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2)
                                     : (async ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 : CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2);
  ApiCall call = fake_cupti::begin_call(
      CUPTI_CB_DOMAIN_RUNTIME_API,
      async ? CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, inner);
  const auto [start, end] = fake_cupti::queue_work(stream, gpu_ns, /*waits_for_queue=*/true);
  std::vector<Pending> gpu;
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_MEMCPY) != 0) {
      const auto host = static_cast<CUpti_ActivityMemoryKind>(host_memory);
      const auto device = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      stepwatch::live::ActivityBufferBuilder b(sizeof(CUpti_ActivityMemcpy6));
      // 2200-2211: correlationId is the driver call's, runtimeCorrelationId the runtime call's.
      const auto src = to_device ? host : device;
      const auto dst = to_device || dtod ? device : host;
      CUpti_ActivityMemcpy6* r = b.memcpy(static_cast<CUpti_ActivityMemcpyKind>(copy_kind), src, dst, async != 0, bytes,
                                          0, 0, call.inner_corr, call.outer_corr, 0, stream);
      gpu.push_back(fake_cupti::gpu_record_of(*r, start, end, offsetof(CUpti_ActivityMemcpy6, start),
                                              offsetof(CUpti_ActivityMemcpy6, end)));
      ++fake_cupti::model().stats.gpu_records;
    }
  }
  // A synchronous copy, or an async one from pageable memory, returns when the copy is done.
  const bool blocks = async == 0 || host_memory == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  if (blocks) {
    fake_cupti::wait_until(end + fake_cupti::kReturnLatencyNs);
  } else {
    fake_cupti::spin_api_call();
  }
  fake_cupti::end_call(call, std::move(gpu), {});
  return call.outer_corr;
}

uint32_t fake_cupti_sim_memset(uint64_t bytes, uint32_t stream, int64_t gpu_ns) {
  ApiCall call = fake_cupti::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async);
  const auto [start, end] = fake_cupti::queue_work(stream, gpu_ns, /*waits_for_queue=*/true);
  std::vector<Pending> gpu;
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_MEMSET) != 0) {
      stepwatch::live::ActivityBufferBuilder b(sizeof(CUpti_ActivityMemset4));
      // 2455-2457: "identical to the correlation ID in the driver API activity record".
      CUpti_ActivityMemset4* r = b.memset(bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 0, 0, call.inner_corr, 0, stream);
      gpu.push_back(fake_cupti::gpu_record_of(*r, start, end, offsetof(CUpti_ActivityMemset4, start),
                                              offsetof(CUpti_ActivityMemset4, end)));
      ++fake_cupti::model().stats.gpu_records;
    }
  }
  fake_cupti::spin_api_call();
  fake_cupti::end_call(call, std::move(gpu), {});
  return call.outer_corr;
}

namespace {
// A call that waits for `until` and leaves a SYNCHRONIZATION record of `type`.
uint32_t blocking_sync(uint32_t outer, uint32_t inner, CUpti_ActivitySynchronizationType type, uint32_t stream,
                       int64_t until) {
  ApiCall call = fake_cupti::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, outer, inner);
  fake_cupti::wait_until(std::max(until + fake_cupti::kReturnLatencyNs, fake_cupti::realtime_ns()));
  std::vector<Pending> cpu;
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) != 0) {
      cpu.push_back(fake_cupti::sync_record(type, call.enter, fake_cupti::realtime_ns(), call.outer_corr, stream, 0));
    }
  }
  fake_cupti::end_call(call, {}, std::move(cpu));
  return call.outer_corr;
}
}  // namespace

uint32_t fake_cupti_sim_stream_sync(uint32_t stream) {
  int64_t until = 0;
  {
    std::lock_guard lock(state().mu);
    until = fake_cupti::model().stream_end[stream];
  }
  return blocking_sync(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
                       CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, stream, until);
}

uint32_t fake_cupti_sim_device_sync(void) {
  int64_t until = 0;
  {
    std::lock_guard lock(state().mu);
    until = fake_cupti::all_streams_end_locked();
  }
  return blocking_sync(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
                       CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, CUPTI_SYNCHRONIZATION_INVALID_VALUE, until);
}

int fake_cupti_sim_event_query(uint32_t stream) {
  ApiCall call = fake_cupti::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuEventQuery);
  fake_cupti::spin_api_call();
  bool complete = false;
  std::vector<Pending> cpu;
  {
    std::lock_guard lock(state().mu);
    FakeState& s = state();
    complete = fake_cupti::model().stream_end[stream] <= fake_cupti::realtime_ns();
    // 8256-8266: by default every query makes a record; EnableAllSyncRecords(0) drops only those of
    // queries whose work has not completed (returnValue CUDA_ERROR_NOT_READY, 600). A completed
    // query's record looks like an event synchronization — UNVERIFIED which type CUPTI gives it.
    const bool all = s.all_sync_records != 0;
    const bool emit = complete ? s.model.completed_query_sync_records != 0 : all;
    if (emit && s.kinds.count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) != 0) {
      cpu.push_back(fake_cupti::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, call.enter,
                                            fake_cupti::realtime_ns(), call.outer_corr, stream, complete ? 0u : 600u));
    }
  }
  fake_cupti::end_call(call, {}, std::move(cpu));
  return complete ? 1 : 0;
}

uint32_t fake_cupti_sim_stream_wait(uint32_t waiting, uint32_t on) {
  ApiCall call = fake_cupti::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent);
  std::vector<Pending> cpu;
  {
    std::lock_guard lock(state().mu);
    fake_cupti::Model& m = fake_cupti::model();
    m.stream_floor[waiting] = std::max(m.stream_floor[waiting], m.stream_end[on]);
  }
  fake_cupti::spin_api_call();
  {
    std::lock_guard lock(state().mu);
    if (state().kinds.count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) != 0) {
      cpu.push_back(fake_cupti::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, call.enter,
                                            fake_cupti::realtime_ns(), call.outer_corr, waiting, 0));
    }
  }
  fake_cupti::end_call(call, {}, std::move(cpu));
  return call.outer_corr;
}

uint32_t fake_cupti_sim_free(int64_t host_ns) {
  ApiCall call = fake_cupti::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
  int64_t until = 0;
  {
    std::lock_guard lock(state().mu);
    until = fake_cupti::all_streams_end_locked();
  }
  // cudaFree synchronizes implicitly: it waits for all queued work first.
  fake_cupti::wait_until(std::max(until, fake_cupti::realtime_ns()) + host_ns);
  fake_cupti::end_call(call, {}, {});
  return call.outer_corr;
}

uint32_t fake_cupti_sim_malloc(int64_t host_ns) {
  ApiCall call = fake_cupti::begin_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                        CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
  fake_cupti::wait_until(fake_cupti::realtime_ns() + host_ns);
  fake_cupti::end_call(call, {}, {});
  return call.outer_corr;
}

int64_t fake_cupti_sim_stream_end(uint32_t stream) {
  std::lock_guard lock(state().mu);
  const auto it = fake_cupti::model().stream_end.find(stream);
  return it == fake_cupti::model().stream_end.end() ? 0 : it->second;
}

void fake_cupti_sim_stats(FakeCuptiSimStats* out) {
  if (out == nullptr) return;
  std::lock_guard lock(state().mu);
  *out = fake_cupti::model().stats;
  out->struct_size = sizeof(FakeCuptiSimStats);
}

}  // extern "C"
