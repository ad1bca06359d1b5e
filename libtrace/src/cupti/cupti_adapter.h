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

#include "core/gpu_tracer.h"

namespace stepwatch::live {

struct CuptiApi;  // cupti_api.h

// CUPTI call failures go through the tracer's log function (cupti_api.cpp).
void set_cupti_log(TracerLogFn fn) noexcept;

// dlopens libcupti (candidates: `explicit_path` when not empty, then the loader's path, then the
// toolkit we were built against; see cupti_api.h) into a table that lives until exit. nullptr on
// failure, with one line per failed candidate in `error`; on success `error` is non-empty only
// when an explicit path failed and a fallback loaded (worth a warning).
const CuptiApi* load_cupti_api(std::string_view explicit_path, std::string& error) noexcept;

namespace detail {
class CuptiAdapterCore;
}

class CuptiAdapter final : public GpuTracer {
 public:
  static CuptiAdapter& instance();

  // Tests construct their own; production uses instance(). Destroying one shuts it down first.
  CuptiAdapter();
  ~CuptiAdapter() override;
  CuptiAdapter(const CuptiAdapter&) = delete;
  CuptiAdapter& operator=(const CuptiAdapter&) = delete;

  // Called once from InitializeInjection (no CUDA calls allowed there). Returns the resulting
  // state; `detail` receives one human line for the start-up message (what is traced, or
  // exactly why not, naming another subscriber when CUPTI reports one).
  //
  // Whatever the state, once start() returned (until shutdown, or a fork) the adapter's flush
  // thread advances the sink's watermark every flush_period_ms; GPU records flow only in kActive.
  // The adapter keeps a copy of `api` and a pointer to `sink`: the sink must outlive shutdown().
  TracerState start(const CuptiApi& api, const GpuTracerOptions& options, EventSink& sink,
                   std::string& detail) noexcept;
  // The same after load_cupti_api(cupti_path): kUnavailable (with the loader's reason in
  // `detail`) when libcupti cannot be loaded.
  TracerState start(std::string_view cupti_path, const GpuTracerOptions& options, EventSink& sink,
                    std::string& detail) noexcept override;

  // Synchronous FlushAll(0) + watermark advance; never holds our locks across the CUPTI call.
  // Any thread except inside an EventSink call (the buffer callbacks run inside FlushAll).
  void flush() noexcept override;
  void pause() noexcept override;   // disable kinds, flush, unsubscribe: another client may take CUPTI
  // Take it back (re-subscribe, re-register, re-enable). Also retries from kOtherSubscriber (the
  // other client may have let go); a failure gives one status line and leaves the state saying why.
  void resume() noexcept override;
  // Exit path: forced flush bounded by `timeout_ms` (a hung CUPTI cannot hang the exit), stop
  // the flush thread. Idempotent.
  // In detail: stops the flush thread (abandoned if stuck in FlushAll), then — when tracing —
  // disables the kinds and runs FlushAll(FLUSH_FORCED) on a helper thread, abandoned (a
  // deliberate leak of one blocked thread) past the deadline. After it returns the sink is never
  // called again, so the session may tear it down; late CUPTI buffers are recycled unparsed.
  void shutdown(int64_t timeout_ms) noexcept override;
  // pthread_atfork child: the child has no CUPTI threads; disable everything, touch nothing.
  void disable_in_child() noexcept override;
  // A CUPTI_CBID_STATE_FATAL_ERROR callback turns the state to kFailed with one sink.status()
  // line; CUPTI finalizes itself, so the adapter makes no further CUPTI call (the flush thread
  // stops flushing and only keeps the watermark moving).

  TracerState state() const noexcept override;
  TracerStats stats() const noexcept override;
  void set_log(TracerLogFn fn) noexcept override { set_cupti_log(fn); }

 private:
  // Shared with the flush thread and the shutdown helper: a thread abandoned because CUPTI hung
  // keeps the core alive instead of touching freed memory.
  std::shared_ptr<detail::CuptiAdapterCore> core_;
};


}  // namespace stepwatch::live
