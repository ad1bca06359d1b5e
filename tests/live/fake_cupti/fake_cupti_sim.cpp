// The faithful model (fake_cupti.h, "the faithful model"): CUDA calls played on the calling thread
// against a model GPU, with the callbacks, activity records and buffer life cycle of CUPTI 13.0 as
// its headers document them. Every behaviour cites the header line it follows; the ones no header
// settles are marked UNVERIFIED and listed in docs/gpu-validation.md.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <vector>

#include "cupti/cupti_record_builder.h"
#include "fake_cupti_model.h"
#include "fake_cupti_state.h"

namespace fake_cupti {
namespace sim {

using stepwatch::live::ActivityBufferBuilder;


Model& model() {
  static Model* m = new Model();  // leaked with the fake's state
  return *m;
}

int64_t thread_key_locked() {
  FakeState& s = state();
  const auto it = s.attributes.find(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER);
  // Default 1 in CUPTI 13 (cupti_activity.h:7201-7211), 0 in 12.x (12.9's cupti_activity.h:7078-7089).
  const bool per_thread = it == s.attributes.end() ? s.version_override == 0 ? layout().major >= 13
                                                                             : s.version_override >= 130000
                                                   : it->second != 0;
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

ApiCall begin_call(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t inner_cbid, const char* symbol) {
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
      ActivityBufferBuilder builder(64, layout());
      CUpti_ActivityAPI* r = builder.api(kind, cbid, to_cupti_clock_locked(a), to_cupti_clock_locked(b), tid, corr);
      r->processId = static_cast<uint32_t>(::getpid());
      records.push_back(record_of(builder));
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

// Adds [start, end) to the merged busy intervals (work is queued roughly in time order: the merge
// looks at the last few intervals only).
void note_busy_locked(int64_t start, int64_t end) {
  auto& busy = model().busy;
  if (busy.size() >= (1u << 20)) busy.erase(busy.begin(), busy.begin() + (1 << 19));
  auto it = std::upper_bound(busy.begin(), busy.end(), std::make_pair(start, INT64_MAX));
  if (it != busy.begin() && std::prev(it)->second >= start) {
    --it;
    it->second = std::max(it->second, end);
  } else {
    it = busy.insert(it, {start, end});
  }
  auto next = std::next(it);
  while (next != busy.end() && next->first <= it->second) {
    it->second = std::max(it->second, next->second);
    next = busy.erase(next);
  }
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
  note_busy_locked(start, end);
  return {start, end};
}

int64_t all_streams_end_locked() {
  int64_t end = 0;
  for (const auto& [stream, t] : model().stream_end) end = std::max(end, t);
  return end;
}

void spin_api_call() {
  int64_t ns = 0;
  {
    std::lock_guard lock(state().mu);  // the model may be replaced by another thread (set_model)
    ns = state().model.api_call_ns;
  }
  wait_until(realtime_ns() + ns);
}

Pending sync_record(CUpti_ActivitySynchronizationType type, int64_t a, int64_t b, uint32_t corr, uint32_t stream,
                    uint32_t return_value) {
  // The API it belongs to — UNVERIFIED whether CUPTI uses the runtime or the driver call's id.
  ActivityBufferBuilder builder(64, layout());
  CUpti_ActivitySynchronization2* r =
      builder.sync(type, to_cupti_clock_locked(a), to_cupti_clock_locked(b), corr, stream);
  // Synchronization2's own fields (CUPTI 12.8 and later); Synchronization (12.6) ends before them.
  if (layout().sync.bytes >= sizeof(CUpti_ActivitySynchronization2)) {
    r->cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    r->returnValue = return_value;
  }
  return record_of(builder);
}

// A kernel record: reserved in the launching thread's buffer now (the default, UNVERIFIED), or
// written into a buffer of its own when the kernel ends.
void kernel_records(const ApiCall& call, const char* name, uint32_t stream, int64_t start, int64_t end,
                    std::vector<Pending>& gpu) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  if (!kind_enabled_locked(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  ActivityBufferBuilder b(512, layout());
  b.kernel(name, 0, 0, call.outer_corr, 0, stream);
  Pending p = gpu_record_of(b, start, end, offsetof(CUpti_ActivityKernel10, start),
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

}  // namespace sim

using namespace sim;

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
  m.busy.clear();
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

