// The completeness watermark's bookkeeping: traced CUDA calls seen by the callback API, by
// correlation id, until the activity record that completes them has been delivered.
//
// Why: cuptiActivityFlushAll(0) "doesn't return buffers which have one or more incomplete records"
// (cupti_activity.h:7724-7727) and buffers are per thread by default (7201-7211). If a kernel's
// record is reserved in its launching thread's buffer at launch (UNVERIFIED, docs/gpu-validation.md),
// a thread that always has GPU work queued keeps its buffer back until it fills, so "every record
// that completed before the flush has been delivered" is false, and judging a step then reads the
// GPU as idle. Instead the watermark is held below the oldest call whose record has not arrived —
// for a bounded wait, after which the interval is reported incomplete (EventSink::mark_incomplete).
//
// What completes a call: for calls that enqueue GPU work (launches, async copies and memsets) the
// GPU record carrying one of its correlation ids — the outer call's or the driver call's made inside
// it: kernels carry the launching call's (3055-3058), copies the driver call's and the runtime's
// (2200-2211), memsets only the driver call's (2455-2457), and which one a runtime launch's kernel
// carries is not worth betting on. For every other traced call (syncs, allocations), its API record.
//
// Threads: the callback side is lock-free — each application thread writes its own ring (SPSC);
// records arriving are handed over once per buffer under a mutex; tick() runs on the flush thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace stepwatch::live {

class LaunchTracker {
 public:
  // `ring_entries`: calls a thread can make between two ticks before tracking overflows (memory
  // follows the rate: 96 KiB per 4096 calls; the overflow is held like a call that never
  // completes: bounded, then reported incomplete). 256k = 1.3M launches/s/thread at 200 ms ticks.
  explicit LaunchTracker(size_t ring_entries = 1u << 18);
  ~LaunchTracker();
  LaunchTracker(const LaunchTracker&) = delete;
  LaunchTracker& operator=(const LaunchTracker&) = delete;

  // ---- callback side: the calling thread's outermost traced call ----
  // ENTER of the outermost traced call (published at once: its record cannot exist before the
  // call, so a watermark taken after this waits for it); `needs_gpu_record`: it enqueues GPU work.
  void enter(uint32_t correlation, int64_t t_ns, bool needs_gpu_record) noexcept;
  // ENTER of a driver call that enqueues GPU work inside the thread's last outermost call: its id
  // completes that call too.
  void nested(uint32_t correlation) noexcept;

  // ---- parse side: the correlation ids of one delivered buffer ----
  void arrived(std::span<const uint32_t> api_records, std::span<const uint32_t> gpu_records) noexcept;

  // ---- flush thread ----
  struct Tick {
    int64_t watermark_ns = 0;        // min(now, the oldest call still waited for)
    int64_t gave_up_from_ns = 0;     // given up on calls from here (when gave_up > 0)
    uint64_t gave_up = 0;            // calls waited for longer than the limit, now forgotten
    uint64_t pending = 0;            // calls still waited for
    int64_t oldest_pending_ns = 0;   // when the oldest of them began (when pending > 0)
  };
  // Folds in what arrived and what was called since the last tick. Calls begun before
  // `now_ns - wait_limit_ns` whose record has not come are given up.
  Tick tick(int64_t now_ns, int64_t wait_limit_ns) noexcept;
  // Forgets everything waited for (pause: the untraced interval covers it). Any thread; done by the
  // next tick (the flush thread owns the bookkeeping).
  void clear() noexcept;

  // While disabled, calls are not noted (paused: their records never come). Any thread.
  void set_enabled(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }
  uint64_t overflows() const noexcept { return overflows_.load(std::memory_order_relaxed); }

 private:
  struct Ring;  // per application thread: a chain of chunks (launch_tracker.cpp)
  struct Entry {
    uint32_t id = 0;
    uint32_t alias_of = 0;  // a nested driver call's entry: the outer call it completes (0: a call)
    int64_t t_ns = 0;
    bool needs_gpu = false;
  };
  struct Pending {
    int64_t t_ns;
    uint32_t alias;
    bool needs_gpu;
  };
  Ring* ring_for_this_thread() noexcept;
  void push(Ring& r, const Entry& e) noexcept;
  template <typename Fn>
  static void drain(Ring& r, Fn&& fn);  // the consumer's side: every entry published so far
  void add(const Entry& e, uint64_t tick_no);
  void complete(uint32_t id, bool gpu, uint64_t tick_no);
  void clear_now();

  const size_t ring_entries_;
  const uint64_t instance_;  // thread-local state of another (destroyed) tracker is never reused
  std::mutex rings_mu_;      // guards rings_ (registration, the tick's walk)
  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<uint64_t> overflows_{0};
  std::atomic<int64_t> overflow_from_ns_{INT64_MAX};
  std::atomic<bool> clear_requested_{false};
  std::atomic<bool> enabled_{true};

  std::mutex arrivals_mu_;
  std::vector<uint32_t> api_arrivals_, gpu_arrivals_;

  // Flush thread only.
  std::unordered_map<uint32_t, Pending> pending_;   // by id
  std::unordered_map<uint32_t, uint32_t> aliases_;  // nested id -> id
  std::vector<std::pair<int64_t, uint32_t>> heap_;  // (t, id), min-heap, lazily pruned
  // Records that arrived before their call was published (the exit callback and a flush on another
  // thread race): kept two ticks. gpu ? early_gpu_ : early_api_.
  std::unordered_map<uint32_t, uint64_t> early_api_, early_gpu_;
  uint64_t ticks_ = 0;
};

}  // namespace stepwatch::live
