// The CUPTI callback-API side: which runtime/driver/resource callbacks the adapter enables, and
// what it does when they fire — count and time, nothing else.
//
// These callbacks run on application threads inside every traced CUDA call, so they are tiny:
// a table lookup, one clock read, relaxed atomic adds on a per-thread shard. They never allocate,
// never lock, never call CUDA, and never throw (the adapter's trampoline catches everything).
// The events themselves come from the activity records (RUNTIME/DRIVER kinds); the callbacks
// give live counters (blocking time, launches), the liveness signal "CUDA calls keep coming", and
// the calls the completeness watermark waits for (launch_tracker.h): each thread's outermost
// traced call by correlation id, plus the driver enqueue call made inside it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>

#include "cupti/cupti_api.h"
#include "core/blocking_call_hook.h"
#include "stepwatch/core/event.h"

namespace stepwatch::live {

struct TracedCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  ApiClass api_class;  // what the call does (blocking, launch, ...): CUPTI_NOTES §5
};

// Runtime + driver CBIDs of blocking calls (sync, synchronous copies and memsets, malloc/free)
// and of launches — including CUDA 13's `<<<>>>` path, __cudaLaunchKernel_v13000 / _ptsz.
std::span<const TracedCallback> traced_api_callbacks() noexcept;
// RESOURCE domain: context and stream creation (counted).
std::span<const TracedCallback> traced_resource_callbacks() noexcept;

struct CallbackTotals {
  uint64_t api_calls = 0;
  uint64_t blocking_calls = 0;
  int64_t blocking_ns = 0;
  uint64_t launch_calls = 0;
  uint64_t contexts_created = 0;
  uint64_t streams_created = 0;
  int64_t callback_ns = 0;  // time inside on_api/on_resource themselves
};

class LaunchTracker;

class CallbackCounters {
 public:
  // `tracker` (may be null) is told about every traced call; it must outlive this.
  explicit CallbackCounters(LaunchTracker* tracker = nullptr) noexcept;

  // RUNTIME_API / DRIVER_API callbacks. `data` is CUPTI's CUpti_CallbackData.
  void on_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept;
  void on_resource(CUpti_CallbackId cbid) noexcept;

  CallbackTotals totals() const noexcept;
  void add_callback_ns(int64_t ns) noexcept;  // the buffer callbacks' own time
  // Told about each blocking call (call sites); set before callbacks are enabled.
  void set_blocking_call_hook(BlockingCallHook* hook) noexcept { hook_ = hook; }

 private:
  // kEnqueue: async copies and memsets (counted like kCounted; completed by their GPU record).
  enum Role : uint8_t { kUntraced = 0, kCounted, kBlocking, kLaunch, kEnqueue };
  // Spread over shards (one per thread, round-robin) so that application threads launching at a
  // high rate do not bounce one cache line between cores.
  struct alignas(64) Shard {
    std::atomic<uint64_t> api_calls{0};
    std::atomic<uint64_t> blocking_calls{0};
    std::atomic<int64_t> blocking_ns{0};
    std::atomic<uint64_t> launch_calls{0};
    std::atomic<int64_t> callback_ns{0};
  };
  static constexpr size_t kShards = 16;
  Shard& shard() noexcept;

  LaunchTracker* const tracker_;
  BlockingCallHook* hook_ = nullptr;
  std::array<uint8_t, CUPTI_RUNTIME_TRACE_CBID_SIZE> runtime_role_{};
  std::array<uint8_t, CUPTI_DRIVER_TRACE_CBID_SIZE> driver_role_{};
  std::array<Shard, kShards> shards_{};
  std::atomic<uint64_t> contexts_created_{0};
  std::atomic<uint64_t> streams_created_{0};
};

// CLOCK_MONOTONIC ns: durations only (events use the record timestamps).
int64_t monotonic_ns() noexcept;

}  // namespace stepwatch::live
