// CUPTI's callbacks into the adapter (cupti_adapter_core.h): activity buffers requested and
// completed, the callback API (runtime/driver/resource/state domains), and the adapter's stats.
// Every entry point catches everything: they run inside the application's CUDA calls.
#include <algorithm>

#include "cupti/cupti_adapter_core.h"

namespace stepwatch::live::detail {
namespace {

// The calling thread's previous buffer request, for adaptive sizes. Trivially destructible: no
// TLS destructor runs on CUPTI's or the application's threads.
struct ThreadFill {
  uint64_t owner = 0;  // the core's instance id (not its address: a new core may reuse it)
  int64_t last_request_ns = 0;
  size_t last_bytes = 0;
};
thread_local ThreadFill t_fill;

}  // namespace

void CUPTIAPI CuptiAdapterCore::on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  try {
    if (buffer != nullptr) *buffer = nullptr;
    if (size != nullptr) *size = 0;
    if (max_records != nullptr) *max_records = 0;  // as many records as fit
    CuptiAdapterCore* core = g_buffer_owner.load(std::memory_order_acquire);
    if (core == nullptr || buffer == nullptr || size == nullptr) return;
    core->buffer_requested(buffer, size);
  } catch (...) {
  }
}

size_t CuptiAdapterCore::next_buffer_bytes() noexcept {
  const auto max_bytes = static_cast<size_t>(options_.buffer_bytes);
  if (!options_.adaptive_buffers) return max_bytes;
  // With per-thread buffers (CUPTI 13's default) a thread asks when its buffer is full or was
  // returned: the next one is sized to fill in about one flush period at the rate the last one
  // did, so that a buffer withheld while it holds a running kernel's record (FlushAll(0) returns
  // only complete buffers, cupti_activity.h:7724-7727) is full — and returned — within a period
  // or two. A rate spike gives more, smaller buffers (bounded by the pool), never a late step.
  const int64_t now = monotonic_ns();
  size_t wanted = static_cast<size_t>(options_.initial_buffer_bytes);
  const uint64_t id = instance_id_.load(std::memory_order_relaxed);
  if (t_fill.owner == id && t_fill.last_request_ns != 0) {
    const int64_t elapsed = std::max<int64_t>(now - t_fill.last_request_ns, 1'000'000);
    const double scale = double(options_.flush_period_ms) * 1e6 / double(elapsed);
    wanted = static_cast<size_t>(std::clamp(double(t_fill.last_bytes) * scale, double(ActivityBufferPool::kMinBufferBytes),
                                            double(max_bytes)));
  }
  t_fill = ThreadFill{id, now, pool_->size_class(wanted)};
  return wanted;
}

void CuptiAdapterCore::buffer_requested(uint8_t** buffer, size_t* size) noexcept {
  if (in_child_.load(std::memory_order_relaxed)) return;
  const int64_t t0 = monotonic_ns();
  buffers_requested_.fetch_add(1, std::memory_order_relaxed);
  size_t got = 0;
  if (uint8_t* b = pool_->acquire(next_buffer_bytes(), &got)) {
    // Ownership passes to CUPTI until bufferCompleted hands the buffer back.
    *buffer = b;
    *size = got;
    last_buffer_bytes_.store(static_cast<int64_t>(got), std::memory_order_relaxed);
  } else {
    // A NULL buffer makes CUPTI drop the records it wanted to store: counted, never silent.
    buffers_refused_.fetch_add(1, std::memory_order_relaxed);
    SinkLease lease(*this);
    if (lease) sink_->report_loss(LossKind::kBufferPoolExhausted, 1);
  }
  callbacks_.add_callback_ns(monotonic_ns() - t0);
}

void CUPTIAPI CuptiAdapterCore::on_buffer_completed(CUcontext /*context: always NULL*/, uint32_t /*deprecated*/,
                                                    uint8_t* buffer, size_t /*size*/, size_t valid_size) noexcept {
  try {
    CuptiAdapterCore* core = g_buffer_owner.load(std::memory_order_acquire);
    if (core == nullptr || buffer == nullptr) return;
    core->buffer_completed(buffer, valid_size);
  } catch (...) {
  }
}

void CuptiAdapterCore::buffer_completed(uint8_t* buffer, size_t valid_size) noexcept {
  if (in_child_.load(std::memory_order_relaxed)) return;
  const int64_t t0 = monotonic_ns();
  parses_in_flight_.fetch_add(1);
  buffers_completed_.fetch_add(1, std::memory_order_relaxed);
  {
    SinkLease lease(*this);
    if (lease) {
      // Everything is converted (names interned, overheadData freed) before the buffer goes back:
      // nothing keeps a pointer into it.
      const bool forced = forced_flushes_in_flight_.load() > 0;
      const BufferParseResult r = converter_->parse(buffer, valid_size, forced);
      records_.fetch_add(r.records, std::memory_order_relaxed);
      events_.fetch_add(r.events, std::memory_order_relaxed);
      ignored_.fetch_add(r.ignored, std::memory_order_relaxed);
      zero_timestamp_.fetch_add(r.zero_timestamp, std::memory_order_relaxed);
      if (r.incomplete) incomplete_.fetch_add(1, std::memory_order_relaxed);
      incomplete_records_.fetch_add(r.incomplete_records, std::memory_order_relaxed);
      skipped_bytes_.fetch_add(r.skipped_bytes, std::memory_order_relaxed);
      clock_dropped_.fetch_add(r.clock_dropped, std::memory_order_relaxed);
      query_syncs_.fetch_add(r.query_syncs, std::memory_order_relaxed);
      cupti_overhead_ns_.fetch_add(r.cupti_overhead_ns, std::memory_order_relaxed);
      // After a restart, work queued while untraced ran — without records — until the first
      // traced work could start: that stretch is reported incomplete, never read as GPU idle.
      if (r.gpu_resumed_ns != INT64_MIN) {
        const int64_t restarted = restarted_at_ns_.exchange(0);
        if (restarted != 0 && r.gpu_resumed_ns > restarted) sink_->mark_incomplete(restarted, r.gpu_resumed_ns);
      }
    }
  }
  // Re-zeroed over its used part and back to the pool (a buffer that is not ours is left alone).
  pool_->release(buffer, valid_size);
  parses_in_flight_.fetch_sub(1);
  callbacks_.add_callback_ns(monotonic_ns() - t0);
}

void CUPTIAPI CuptiAdapterCore::on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                            const void* cbdata) noexcept {
  try {
    auto* core = static_cast<CuptiAdapterCore*>(userdata);
    if (core == nullptr || core->in_child_.load(std::memory_order_relaxed)) return;
    switch (domain) {
      case CUPTI_CB_DOMAIN_RUNTIME_API:
      case CUPTI_CB_DOMAIN_DRIVER_API:
        // Hot path (inside every traced CUDA call): count, time, and note the call for the
        // completeness watermark — nothing else.
        core->callbacks_.on_api(domain, cbid, static_cast<const CUpti_CallbackData*>(cbdata));
        break;
      case CUPTI_CB_DOMAIN_RESOURCE:
        core->callbacks_.on_resource(cbid);
        if ((cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING || cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) &&
            core->converter_ != nullptr) {
          core->converter_->invalidate_names();
        }
        break;
      case CUPTI_CB_DOMAIN_STATE:
        if (cbid == CUPTI_CBID_STATE_FATAL_ERROR) core->fatal_error(static_cast<const CUpti_StateData*>(cbdata));
        break;
      default:
        break;
    }
  } catch (...) {
  }
}

void CuptiAdapterCore::fatal_error(const CUpti_StateData* data) noexcept {
  // CUPTI finalizes itself after this callback: from now on no CUPTI call of ours (the flush
  // thread stops flushing; it keeps advancing the watermark so NVTX-only steps are still judged).
  state_.store(TracerState::kFailed, std::memory_order_release);
  if (fatal_reported_.exchange(true)) return;
  try {
    std::string line = "CUPTI reported a fatal error";
    if (data != nullptr) {
      line += " (" + cupti_result_text(api_, data->notification.result);
      if (data->notification.message != nullptr) line += std::string(": ") + data->notification.message;
      line += ")";
    }
    status(line + "; GPU tracing stopped (CUPTI finalized itself)");
  } catch (...) {
  }
  // Wake the flush thread so that it notices at once (it only checks the state).
  flush_cv_.notify_all();
}

TracerStats CuptiAdapterCore::stats() const noexcept {
  TracerStats s;
  const CallbackTotals cb = callbacks_.totals();
  auto get = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  s.buffers_requested = get(buffers_requested_);
  s.buffers_completed = get(buffers_completed_);
  s.records = get(records_);
  s.bytes_in_pool = pool_ ? pool_->bytes_allocated() : 0;
  s.callback_ns = cb.callback_ns;
  s.cupti_overhead_ns = get(cupti_overhead_ns_);
  s.cupti_version = get(cupti_version_);
  s.events = get(events_);
  s.records_ignored = get(ignored_);
  s.buffers_refused = get(buffers_refused_);
  s.zero_timestamp_records = get(zero_timestamp_);
  s.incomplete_buffers = get(incomplete_);
  s.dropped_records = get(dropped_);
  s.flushes = get(flushes_);
  s.api_callbacks = cb.api_calls;
  s.blocking_calls = cb.blocking_calls;
  s.blocking_ns = cb.blocking_ns;
  s.launch_calls = cb.launch_calls;
  s.contexts_created = cb.contexts_created;
  s.streams_created = cb.streams_created;
  s.active_since_ns = get(active_since_ns_);
  s.pending_calls = get(pending_calls_);
  s.watermark_hold_ns = get(watermark_hold_ns_);
  s.calls_given_up = get(calls_given_up_);
  s.incomplete_records = get(incomplete_records_);
  s.skipped_bytes = get(skipped_bytes_);
  s.clock_dropped_records = get(clock_dropped_);
  s.query_sync_records = get(query_syncs_);
  s.clock_state = static_cast<uint8_t>(clock_.state());
  s.last_buffer_bytes = get(last_buffer_bytes_);
  return s;
}

}  // namespace stepwatch::live::detail
