// The CUPTI adapter's implementation class (cupti_adapter.h is the interface). Internal to
// libtrace/src/cupti/; split over three files by job:
//   cupti_adapter.cpp  start, bring-up, pause/resume, shutdown, fork (the control calls)
//   cupti_flush.cpp    the flush thread: flush, watermark, clock check, liveness, resume retry
//   cupti_buffers.cpp  CUPTI's callbacks: buffers, the callback API, fatal errors; stats
//
// Lock order: control_mu_ before flush_mu_; neither is held across cuptiActivityFlushAll (see
// control_mu_). The sink is touched only through a SinkLease.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu_tracer.h"
#include "cupti/buffer_pool.h"
#include "cupti/clock_check.h"
#include "cupti/cupti_api.h"
#include "cupti/cupti_callbacks.h"
#include "cupti/cupti_records.h"
#include "cupti/launch_tracker.h"

namespace stepwatch::live::detail {

using Clock = std::chrono::steady_clock;

class CuptiAdapterCore : public std::enable_shared_from_this<CuptiAdapterCore> {
 public:
  CuptiAdapterCore() : callbacks_(&tracker_) {}

  TracerState start(const CuptiApi* api, const GpuTracerOptions& options, EventSink& sink,
                   std::string& detail, std::string_view load_error) noexcept;
  void flush() noexcept;
  void pause() noexcept;
  void resume() noexcept;
  void shutdown(int64_t timeout_ms) noexcept;
  void disable_in_child() noexcept;
  void detach_from_cupti() noexcept;  // test adapters being destroyed
  TracerState state() const noexcept { return state_.load(std::memory_order_acquire); }
  TracerStats stats() const noexcept;

  // ---- CUPTI entry points. Every one catches everything (they run inside CUDA calls). ----
  static void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept;
  static void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                           size_t valid_size) noexcept;
  static void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* cbdata) noexcept;

 private:
  // The sink gate. Everything that may run after shutdown() returned (a buffer callback from
  // CUPTI's exit flush, a flush thread abandoned inside a hung FlushAll) touches the sink only
  // through a lease; shutdown() closes the gate and waits (bounded) for the leases to end, so the
  // session may destroy the sink afterwards. seq_cst on both sides: either the lease sees the
  // gate closed, or shutdown sees the lease.
  class SinkLease {
   public:
    explicit SinkLease(CuptiAdapterCore& core) : core_(core) {
      core_.sink_users_.fetch_add(1);
      ok_ = core_.sink_open_.load() && core_.sink_ != nullptr;
    }
    ~SinkLease() { core_.sink_users_.fetch_sub(1); }
    SinkLease(const SinkLease&) = delete;
    SinkLease& operator=(const SinkLease&) = delete;
    explicit operator bool() const { return ok_; }

   private:
    CuptiAdapterCore& core_;
    bool ok_ = false;
  };

  // cupti_adapter.cpp
  TracerState check_library(std::string& detail);  // version table + layout self-check
  TracerState bring_up(std::string& detail);       // control_mu_ held
  bool subscribe(std::string& detail, TracerState& refused);  // control_mu_ held
  std::string enable_attributes_and_callbacks();   // control_mu_ held; notes for the start-up line
  void release_subscription();                     // control_mu_ held
  // Forced flush with our locks released, counted; its buffers are parsed as forced.
  void forced_flush() noexcept;
  // Before a forced flush (pause, shutdown): default flushes until no traced call waits for its
  // record (bounded by `limit`), so that the forced flush hands back no record of running work.
  void drain_in_flight(std::chrono::milliseconds limit) noexcept;
  std::string library_text() const;  // "CUPTI 13.0 (API 130001) at PATH (…)"

  // cupti_flush.cpp
  void start_flush_thread(std::string& detail);
  bool stop_flush_thread(Clock::time_point deadline);
  void flush_loop() noexcept;
  void tick() noexcept;
  int64_t completeness_watermark(int64_t flush_started_ns) noexcept;
  void check_clock(bool calibrate_now) noexcept;
  void check_liveness() noexcept;
  void retry_resume() noexcept;
  void poll_dropped() noexcept;
  void wait_for_parses(Clock::duration budget) noexcept;
  void status(const std::string& line) noexcept;

  // cupti_buffers.cpp
  void buffer_requested(uint8_t** buffer, size_t* size) noexcept;
  void buffer_completed(uint8_t* buffer, size_t valid_size) noexcept;
  void fatal_error(const CUpti_StateData* data) noexcept;
  size_t next_buffer_bytes() noexcept;

  // Set by start(), constant afterwards: read without locks by callbacks and threads.
  std::atomic<uint64_t> instance_id_{0};  // adaptive buffer sizes' per-thread state belongs to it
  CuptiApi api_;
  GpuTracerOptions options_;
  EventSink* sink_ = nullptr;
  std::unique_ptr<ActivityBufferPool> pool_;
  std::unique_ptr<RecordConverter> converter_;
  LaunchTracker tracker_;
  CallbackCounters callbacks_;
  ClockCheck clock_;

  std::atomic<TracerState> state_{TracerState::kInactive};
  std::atomic<bool> in_child_{false};

  // Serializes the control calls (start/pause/resume/shutdown, the flush thread's resume retry)
  // and guards the fields below it.
  // NOTE: never held across cuptiActivityFlushAll: CUPTI runs bufferCompleted inside FlushAll, on
  // the calling thread and on its worker (which FlushAll may wait for) — a lock held there is one
  // callback away from a deadlock. pause() releases it around its flush for that reason.
  std::mutex control_mu_;
  bool started_ = false;
  bool shut_down_ = false;
  bool subscribed_ = false;
  bool paused_by_us_ = false;  // the last pause was ours: a refused resume is retried
  uint64_t pause_epoch_ = 0;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<CUpti_ActivityKind> enabled_kinds_;

  std::atomic<bool> sink_open_{false};
  std::atomic<int> sink_users_{0};

  // The flush thread. flush_mu_ guards the flags; it is released before each tick (which calls
  // FlushAll). `flush_thread_` is a raw pointer on purpose: a thread abandoned in a hung FlushAll,
  // or one that does not exist in a forked child, must never reach std::thread's destructor.
  std::mutex flush_mu_;
  std::condition_variable flush_cv_;
  bool flush_stop_ = false;
  bool flush_exited_ = false;
  std::thread* flush_thread_ = nullptr;
  std::atomic<int> parses_in_flight_{0};
  std::atomic<int> forced_flushes_in_flight_{0};  // buffers completed meanwhile come from a forced flush
  // Serializes the tracker's ticks: the flush thread's, and pause's drain on the caller's thread.
  std::mutex tick_mu_;

  // Flush thread only (tick, liveness, clock).
  uint64_t seen_buffers_ = 0;
  uint64_t seen_api_calls_ = 0;
  int silent_periods_ = 0;
  bool liveness_reported_ = false;
  int64_t ticks_since_retry_ = 0;
  std::atomic<bool> liveness_reset_{false};
  std::atomic<bool> fatal_reported_{false};
  std::atomic<bool> retry_resume_{false};
  // The last check at which CUPTI's clock read the host clock (or converted onto it): bring-up
  // (control thread) and ticks both check.
  std::atomic<int64_t> last_clock_ok_ns_{0};

  // Stats.
  std::atomic<uint64_t> buffers_requested_{0}, buffers_completed_{0}, buffers_refused_{0};
  std::atomic<uint64_t> records_{0}, events_{0}, ignored_{0}, zero_timestamp_{0}, incomplete_{0};
  std::atomic<uint64_t> incomplete_records_{0}, skipped_bytes_{0}, clock_dropped_{0}, query_syncs_{0};
  std::atomic<uint64_t> dropped_{0}, flushes_{0};
  std::atomic<uint64_t> pending_calls_{0}, calls_given_up_{0};
  std::atomic<int64_t> watermark_hold_ns_{0}, active_since_ns_{0}, last_buffer_bytes_{0};
  // Tracing restarted (resume) at this time: GPU work queued while untraced may still run, without
  // records; until the first GPU records show where it ended, steps there are incomplete. 0 = none.
  std::atomic<int64_t> restarted_at_ns_{0};
  std::atomic<int64_t> cupti_overhead_ns_{0};
  std::atomic<uint32_t> cupti_version_{0};
  const RecordLayout* layout_ = nullptr;  // the loaded library's (set by check_library)
};

// The core whose buffer callbacks are registered: CUPTI's buffer callbacks carry no user pointer.
// Production: the leaked singleton's core, valid until exit. Tests: cleared before a core dies.
extern std::atomic<CuptiAdapterCore*> g_buffer_owner;

}  // namespace stepwatch::live::detail
