// The GPU activity tracer as the live session drives it: start, flush, pause/resume around
// another profiler, bounded shutdown. The CUPTI adapter (libtrace/src/cupti/, the only code that
// sees CUPTI types) implements it; the session sees only this interface, so the seam sits below
// both and the session can be driven with a fake tracer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/blocking_call_hook.h"
#include "core/event_sink.h"

namespace stepwatch {

struct GpuTracerOptions {
  int64_t flush_period_ms = 200;
  int64_t buffer_bytes = 4ll << 20;  // one host activity buffer (clamped to 64 KiB .. 256 MiB)
  int max_buffers = 64;              // the host pool's cap; past it CUPTI gets no buffer (counted)
  // Device-side buffers per context (CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE / _POOL_LIMIT); 0 keeps
  // CUPTI's default (3.2 MB / 250). Too small gives kernel records with start == end == 0. Only
  // effective for contexts created later, which is why start() runs from InitializeInjection.
  int64_t device_buffer_bytes = 8ll << 20;
  int64_t device_buffer_pool_limit = 0;
  // Buffer-callback liveness: this many flush periods without any activity buffer while CUDA API
  // callbacks keep firing means another client took the activity API; one status line says so.
  int silent_flush_periods = 10;
  // The completeness watermark (cupti/launch_tracker.h): the watermark waits at most this many
  // flush periods for the record of a traced call; past it the interval is reported incomplete
  // (EventSink::mark_incomplete) and the watermark moves on.
  int completeness_wait_periods = 10;
  // Adaptive buffer sizes: each thread's next activity buffer is sized to fill in about one flush
  // period at the rate it filled the last one (64 KiB .. buffer_bytes), so that a buffer CUPTI
  // withholds while it holds a running kernel's record comes back within a period or two. The
  // first buffer of a thread is initial_buffer_bytes. false: every buffer is buffer_bytes.
  bool adaptive_buffers = true;
  int64_t initial_buffer_bytes = 256ll << 10;
  // Told about every blocking call on its own thread (null: none); must outlive shutdown().
  BlockingCallHook* blocking_call_hook = nullptr;
};

// Where the tracer stands: active, or exactly why not.
enum class TracerState : uint8_t {
  kInactive,        // not started
  kActive,          // subscribed, tracing
  kPaused,          // released for another client (stepwatch_pause)
  kUnavailable,     // libcupti could not be loaded, or CUPTI refused (driver too old, ...)
  kOtherSubscriber, // another CUPTI client (Nsight Systems, ...) holds the subscription: stood down
  kFailed,          // fatal error callback, or disabled after fork
};
std::string_view to_string(TracerState state);

// What the tracer counted (the exit summary's self-overhead and delivery lines).
struct TracerStats {
  uint64_t buffers_requested = 0;
  uint64_t buffers_completed = 0;
  uint64_t records = 0;
  uint64_t bytes_in_pool = 0;    // memory held by the buffer pool
  int64_t callback_ns = 0;       // time spent inside our CUPTI callbacks (self-overhead)
  int64_t cupti_overhead_ns = 0; // CUPTI's own OVERHEAD records
  uint32_t cupti_version = 0;
  // Added by the adapter implementation:
  uint64_t events = 0;              // events submitted to the sink
  uint64_t records_ignored = 0;     // kinds we do not convert (enabled by another CUPTI client)
  uint64_t buffers_refused = 0;     // requests answered with NULL: pool at its cap (kBufferPoolExhausted)
  uint64_t zero_timestamp_records = 0;
  uint64_t incomplete_buffers = 0;  // buffers cut short by CUPTI_ERROR_INVALID_KIND
  uint64_t dropped_records = 0;     // cuptiActivityGetNumDroppedRecords, summed
  uint64_t flushes = 0;             // FlushAll calls that returned
  uint64_t api_callbacks = 0;       // traced runtime/driver calls (top level: a runtime call's own
                                    // driver calls are not counted twice)
  uint64_t blocking_calls = 0;      // of which blocking (is_blocking): syncs, synchronous copies
                                    // and memsets, cudaFree/cuMemFree
  int64_t blocking_ns = 0;          // their summed duration
  uint64_t launch_calls = 0;        // of which kernel / graph / cooperative launches
  uint64_t contexts_created = 0;
  uint64_t streams_created = 0;
  // The completeness watermark (per flush: the per-flush delivery line of the job log).
  int64_t active_since_ns = 0;        // when tracing (re)started: start, resume, a retried resume
  uint64_t pending_calls = 0;         // traced calls whose record has not arrived
  int64_t watermark_hold_ns = 0;      // how far the last watermark stayed behind its flush
  uint64_t calls_given_up = 0;        // waited for past the bound: their interval reported incomplete
  uint64_t incomplete_records = 0;    // records a forced flush handed back before they completed
  uint64_t skipped_bytes = 0;         // bytes after a record CUPTI could not step over
  uint64_t clock_dropped_records = 0; // records set aside while CUPTI's clock was being calibrated
  uint64_t query_sync_records = 0;    // sync records of polling queries, dropped
  uint8_t clock_state = 0;            // ClockCheck::State: 0 aligned, 1 calibrating, 2 converting, 3 stood down
  int64_t last_buffer_bytes = 0;      // the size of the last buffer handed to CUPTI
};

// Where the tracer's own warnings go (failed vendor calls, rate-limited per call site). Default:
// "[stepwatch] …" on stderr. Any thread may call `fn`.
using TracerLogFn = void (*)(std::string_view line) noexcept;

class GpuTracer {
 public:
  virtual ~GpuTracer() = default;
  // Loads the vendor library (`library_path` first when not empty, then the default candidates)
  // and starts tracing into `sink`. Called once from InitializeInjection (no CUDA calls allowed
  // there). Returns the resulting state; `detail` receives one human line for the start-up message
  // (what is traced, or exactly why not). Whatever the state, once start() returned (until
  // shutdown, or a fork) the sink's watermark keeps advancing every flush period; GPU records flow
  // only in kActive. The sink must outlive shutdown().
  virtual TracerState start(std::string_view library_path, const GpuTracerOptions& options, EventSink& sink,
                            std::string& detail) noexcept = 0;
  // Synchronous flush + watermark advance. Any thread except inside an EventSink call.
  virtual void flush() noexcept = 0;
  virtual void pause() noexcept = 0;   // release the vendor API for another client
  virtual void resume() noexcept = 0;  // take it back; a failure leaves the state saying why
  // Exit path: bounded by `timeout_ms`; after it returns the sink is never called again.
  virtual void shutdown(int64_t timeout_ms) noexcept = 0;
  // pthread_atfork child: no tracer threads exist there; disable everything, touch nothing.
  virtual void disable_in_child() noexcept = 0;
  virtual TracerState state() const noexcept = 0;
  virtual TracerStats stats() const noexcept = 0;
  virtual void set_log(TracerLogFn fn) noexcept = 0;
};

// The process's CUPTI tracer (defined in libtrace/src/cupti/; leaked on purpose: CUPTI's threads
// may call back during exit).
GpuTracer& cupti_tracer() noexcept;

}  // namespace stepwatch
