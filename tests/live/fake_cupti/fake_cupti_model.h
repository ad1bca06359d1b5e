// The faithful model's internals (fake_cupti.h, "the faithful model"), shared by
// fake_cupti_sim.cpp (buffers, records, their delivery) and fake_cupti_calls.cpp (the simulated
// CUDA calls). Everything here is guarded by fake_cupti::state().mu unless it says otherwise.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "cupti/cupti_record_builder.h"
#include "fake_cupti.h"

namespace fake_cupti::sim {

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
  // The model GPU's busy time as merged [start, end) intervals (any stream), sorted: the ground
  // truth e2e tests compare stepwatch's per-step GPU busy with. Bounded (oldest dropped).
  std::vector<std::pair<int64_t, int64_t>> busy;
};

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

// The one record a builder holds, at its layout's size (the emulated CUPTI's: fake_cupti::layout()).
inline Pending record_of(const stepwatch::live::ActivityBufferBuilder& b) {
  Pending p;
  p.bytes.assign(b.data(), b.data() + b.size());
  return p;
}

inline Pending gpu_record_of(const stepwatch::live::ActivityBufferBuilder& rec, int64_t start_rt, int64_t end_rt, size_t start_field, size_t end_field,
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

Model& model();
// The realtime instant `t`: sleeps, then yields the last stretch.
void wait_until(int64_t t);
// Writes `records` into the calling thread's buffer (or the shared one), asking the client for
// buffers as CUPTI does (no fake lock held while calling it).
void emit(int64_t key, std::vector<Pending>& records);
// Begins a call: correlation ids, ENTER callbacks (outer, then the driver call inside it).
ApiCall begin_call(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t inner_cbid, const char* symbol = nullptr);
// Ends it: EXIT callbacks, then its API records plus `gpu` and `cpu` records into this thread's buffer.
void end_call(ApiCall& call, std::vector<Pending> gpu, std::vector<Pending> cpu);
// Queues GPU work on `stream` (a launch blocks while the launch queue is full): its [start, end).
std::pair<int64_t, int64_t> queue_work(uint32_t stream, int64_t gpu_ns, bool waits_for_queue);
int64_t all_streams_end_locked();
void spin_api_call();  // the host time of a non-blocking call
Pending sync_record(CUpti_ActivitySynchronizationType type, int64_t a, int64_t b, uint32_t corr, uint32_t stream,
                    uint32_t return_value);  // state().mu held
// A kernel's record: into `gpu` (reserved at launch) or the device-pending list (written at its end).
void kernel_records(const ApiCall& call, const char* name, uint32_t stream, int64_t start, int64_t end,
                    std::vector<Pending>& gpu);

}  // namespace fake_cupti::sim
