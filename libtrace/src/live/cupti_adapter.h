// The CUPTI adapter's CUPTI-free interface (the implementation in libtrace/src/cupti/ is the
// only code that sees CUPTI types; this header sits with its user, the live session).
//
// The CUPTI adapter: the only code that sees CUPTI types. It subscribes, enables activity kinds
// and callbacks, manages the activity buffer pool, converts records into `Event`s for an
// EventSink, and runs the periodic flush thread.
//
// Every CUPTI call goes through a CuptiApi function table (cupti_api.h): filled by dlsym on the
// real libcupti in production, partly by a fake in tests — record parsing always uses the real
// cuptiActivityGetNextRecord.
//
// Lifetime: one process-wide instance (CUPTI's buffer callbacks carry no user pointer), leaked on
// purpose so that CUPTI threads calling back during exit never touch a destroyed object.
//
// Threads: start/pause/resume/shutdown are control calls (any thread, serialized internally);
// CUPTI calls our callbacks on application threads, on its worker thread and inside FlushAll;
// our flush thread calls FlushAll(0) every flush_period_ms. No lock of ours is ever held across
// cuptiActivityFlushAll (the buffer callbacks run inside it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "live/event_sink.h"

namespace stepwatch::live {

struct CuptiApi;  // cupti_api.h

struct CuptiAdapterOptions {
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
};

enum class CuptiState : uint8_t {
  kInactive,        // not started
  kActive,          // subscribed, tracing
  kPaused,          // released for another client (stepwatch_pause)
  kUnavailable,     // libcupti could not be loaded, or CUPTI refused (driver too old, ...)
  kOtherSubscriber, // another CUPTI client (Nsight Systems, ...) holds the subscription: stood down
  kFailed,          // fatal error callback, or disabled after fork
};
std::string_view to_string(CuptiState state);

struct CuptiAdapterStats {
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
};

// Where the adapter's warnings go (failed CUPTI calls, rate-limited per call site). Default:
// "[stepwatch] …" on stderr. The session installs its logger here; any thread may call `fn`.
using CuptiLogFn = void (*)(std::string_view line) noexcept;
void set_cupti_log(CuptiLogFn fn) noexcept;

// dlopens libcupti (candidates: `explicit_path` when not empty, then the loader's path, then the
// toolkit we were built against; see cupti_api.h) into a table that lives until exit. nullptr on
// failure, with one line per failed candidate in `error`; on success `error` is non-empty only
// when an explicit path failed and a fallback loaded (worth a warning).
const CuptiApi* load_cupti_api(std::string_view explicit_path, std::string& error) noexcept;

namespace detail {
class CuptiAdapterCore;
}

class CuptiAdapter {
 public:
  static CuptiAdapter& instance();

  // Tests construct their own; production uses instance(). Destroying one shuts it down first.
  CuptiAdapter();
  ~CuptiAdapter();
  CuptiAdapter(const CuptiAdapter&) = delete;
  CuptiAdapter& operator=(const CuptiAdapter&) = delete;

  // Called once from InitializeInjection (no CUDA calls allowed there). Returns the resulting
  // state; `detail` receives one human line for the start-up message (what is traced, or
  // exactly why not, naming another subscriber when CUPTI reports one).
  //
  // Whatever the state, once start() returned (until shutdown, or a fork) the adapter's flush
  // thread advances the sink's watermark every flush_period_ms; GPU records flow only in kActive.
  // The adapter keeps a copy of `api` and a pointer to `sink`: the sink must outlive shutdown().
  CuptiState start(const CuptiApi& api, const CuptiAdapterOptions& options, EventSink& sink,
                   std::string& detail) noexcept;
  // The same after load_cupti_api(cupti_path): kUnavailable (with the loader's reason in
  // `detail`) when libcupti cannot be loaded.
  CuptiState start(std::string_view cupti_path, const CuptiAdapterOptions& options, EventSink& sink,
                   std::string& detail) noexcept;

  // Synchronous FlushAll(0) + watermark advance; never holds our locks across the CUPTI call.
  // Any thread except inside an EventSink call (the buffer callbacks run inside FlushAll).
  void flush() noexcept;
  void pause() noexcept;   // disable kinds, flush, unsubscribe: another client may take CUPTI
  // Take it back (re-subscribe, re-register, re-enable). Also retries from kOtherSubscriber (the
  // other client may have let go); a failure gives one status line and leaves the state saying why.
  void resume() noexcept;
  // Exit path: forced flush bounded by `timeout_ms` (a hung CUPTI cannot hang the exit), stop
  // the flush thread. Idempotent.
  // In detail: stops the flush thread (abandoned if stuck in FlushAll), then — when tracing —
  // disables the kinds and runs FlushAll(FLUSH_FORCED) on a helper thread, abandoned (a
  // deliberate leak of one blocked thread) past the deadline. After it returns the sink is never
  // called again, so the session may tear it down; late CUPTI buffers are recycled unparsed.
  void shutdown(int64_t timeout_ms) noexcept;
  // pthread_atfork child: the child has no CUPTI threads; disable everything, touch nothing.
  void disable_in_child() noexcept;
  // A CUPTI_CBID_STATE_FATAL_ERROR callback turns the state to kFailed with one sink.status()
  // line; CUPTI finalizes itself, so the adapter makes no further CUPTI call (the flush thread
  // stops flushing and only keeps the watermark moving).

  CuptiState state() const noexcept;
  CuptiAdapterStats stats() const noexcept;

 private:
  // Shared with the flush thread and the shutdown helper: a thread abandoned because CUPTI hung
  // keeps the core alive instead of touching freed memory.
  std::shared_ptr<detail::CuptiAdapterCore> core_;
};

// Loads libcupti (`cupti_path` first when not empty, then the default candidates) and starts the
// adapter: the CUPTI-free entry point for the live session (cupti_start.cpp).
CuptiState start_cupti(std::string_view cupti_path, const CuptiAdapterOptions& options, EventSink& sink,
                       std::string& detail) noexcept;

}  // namespace stepwatch::live
