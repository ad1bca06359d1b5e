#include "cupti/cupti_adapter.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/quiet_thread.h"
#include "cupti/cupti_adapter_core.h"
#include "cupti/layout_check.h"

namespace stepwatch::live {

const CuptiApi* load_cupti_api(std::string_view explicit_path, std::string& error) noexcept {
  try {
    auto table = std::make_unique<CuptiApi>();
    if (!load_cupti_api(explicit_path, *table, error)) return nullptr;
    // Kept until the process exits, never destroyed (no static destructor): the adapter copies the
    // table, but callers may keep this pointer and CUPTI may call into the library it names until
    // exit. Held in a list reachable from a global, so that a leak checker sees it kept, not lost.
    static std::mutex kept_mu;
    static auto* kept = new std::vector<std::unique_ptr<CuptiApi>>();
    std::lock_guard<std::mutex> lock(kept_mu);
    kept->push_back(std::move(table));
    return kept->back().get();
  } catch (...) {
    error = "out of memory while loading CUPTI";
    return nullptr;
  }
}

namespace detail {

std::atomic<CuptiAdapterCore*> g_buffer_owner{nullptr};

namespace {

// The activity kinds we enable, and how the start-up line names them.
struct TracedKind {
  CUpti_ActivityKind kind;
  const char* label;
};
constexpr TracedKind kTracedKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "peer memcpy"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API"},
    {CUPTI_ACTIVITY_KIND_DRIVER, "driver API"},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "CUPTI overhead"},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "device allocations"},
};

GpuTracerOptions sanitized(GpuTracerOptions o) {
  o.flush_period_ms = std::clamp<int64_t>(o.flush_period_ms, 10, 60'000);
  o.buffer_bytes = std::clamp<int64_t>(o.buffer_bytes, 64ll << 10, 256ll << 20) & ~int64_t{7};
  o.initial_buffer_bytes = std::clamp<int64_t>(o.initial_buffer_bytes, 64ll << 10, o.buffer_bytes);
  o.max_buffers = std::clamp(o.max_buffers, 1, 4096);
  o.device_buffer_bytes = std::max<int64_t>(o.device_buffer_bytes, 0);
  o.device_buffer_pool_limit = std::max<int64_t>(o.device_buffer_pool_limit, 0);
  o.silent_flush_periods = std::max(o.silent_flush_periods, 1);
  o.completeness_wait_periods = std::clamp(o.completeness_wait_periods, 1, 1000);
  return o;
}

// 13.x numbers its API versions MMmmuu (130001: 13.0 Update 1); before, a sequence did
// (cupti_version.h: v24 CUDA 12.6, v26 12.8, v27 12.9, v28 12.9 Update 1).
std::string version_text(uint32_t v) {
  const std::string api = " (API " + std::to_string(v) + ")";
  if (v >= 130000) return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + api;
  static constexpr const char* kCuda12[] = {"12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.7", "12.8", "12.9", "12.9"};
  if (v >= 19 && v <= 28) return std::string(kCuda12[v == 19 ? 0 : v - 18]) + api;
  return "API version " + std::to_string(v);
}

bool set_size_attribute(const CuptiApi& api, CUpti_ActivityAttribute attr, int64_t bytes) {
  size_t value = static_cast<size_t>(bytes);
  size_t value_size = sizeof(value);
  return SW_CUPTI_CALL(api, cuptiActivitySetAttribute(attr, &value_size, &value)) == CUPTI_SUCCESS;
}

}  // namespace

// ---- start / bring-up -------------------------------------------------------------------------

TracerState CuptiAdapterCore::start(const CuptiApi* api, const GpuTracerOptions& options, EventSink& sink,
                                   std::string& detail, std::string_view load_error) noexcept {
  try {
    std::lock_guard lock(control_mu_);
    if (in_child_.load()) return TracerState::kFailed;
    if (started_) {
      detail = "the CUPTI adapter was already started (state: " + std::string(to_string(state())) + ")";
      return state();
    }
    started_ = true;
    options_ = sanitized(options);
    callbacks_.set_blocking_call_hook(options_.blocking_call_hook);
    sink_ = &sink;
    sink_open_.store(true);
    TracerState result = TracerState::kUnavailable;
    if (api == nullptr) {
      detail = "CUPTI (libcupti.so.13 or .12) could not be loaded: " + std::string(load_error) +
               "; GPU tracing is off, NVTX ranges and C-API marks are still recorded";
    } else if (!api->complete()) {
      detail = "the CUPTI function table is incomplete; GPU tracing is off";
    } else {
      api_ = *api;
      static std::atomic<uint64_t> next_instance{1};
      instance_id_.store(next_instance.fetch_add(1));
      pool_ = std::make_unique<ActivityBufferPool>(static_cast<size_t>(options_.buffer_bytes), options_.max_buffers);
      converter_ = std::make_unique<RecordConverter>(api_, *sink_);
      converter_->set_tracker(&tracker_);
      converter_->set_clock(&clock_);
      result = check_library(detail);
      if (result == TracerState::kActive) result = bring_up(detail);
    }
    state_.store(result, std::memory_order_release);
    if (result == TracerState::kActive) active_since_ns_.store(now_ns());
    // Whatever the outcome, the thread keeps the sink's watermark moving (NVTX-only steps still
    // get judged); it calls CUPTI only while the state is kActive (or retrying a resume).
    start_flush_thread(detail);
    return result;
  } catch (...) {
    detail = "the CUPTI adapter failed to start (out of memory)";
    state_.store(TracerState::kFailed);
    return TracerState::kFailed;
  }
}

std::string CuptiAdapterCore::library_text() const {
  std::string text = "CUPTI " + version_text(cupti_version_.load());
  if (!api_.library_path.empty()) {
    text += " at " + api_.library_path + (api_.already_loaded ? " (already loaded by the process)" : " (loaded by stepwatch)");
  }
  return text;
}

TracerState CuptiAdapterCore::check_library(std::string& detail) {
  uint32_t version = 0;
  SW_CUPTI_CALL(api_, cuptiGetVersion(&version));
  cupti_version_.store(version);
  // Record layouts change within a major version: only versions whose layouts the parser knows.
  const RecordLayout* layout = record_layout(version);
  if (layout == nullptr) {
    detail = library_text() + ": its record layouts are not ones stepwatch reads (known: CUPTI " +
             known_record_layouts_text() + "); GPU tracing is off";
    return TracerState::kUnavailable;
  }
  layout_ = layout;
  converter_->set_layout(*layout);
  // The library must iterate records of that layout's sizes before any of its records is read.
  if (const std::string mismatch = check_record_layouts(api_, *layout); !mismatch.empty()) {
    detail = library_text() + ": " + mismatch + "; GPU tracing is off";
    return TracerState::kUnavailable;
  }
  return TracerState::kActive;
}

bool CuptiAdapterCore::subscribe(std::string& detail, TracerState& refused) {
  if (subscribed_) return true;
  // CUPTI writes the name of the tool that holds the subscription here (>= 64 bytes,
  // cupti_callbacks.h:759-763).
  char other[2 * CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "stepwatch";
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof(other);
  // Not SW_CUPTI_CALL: a refusal is an expected outcome, reported through `detail`. CUPTI 12 has no
  // cuptiSubscribe_v2 (cupti_callbacks.h of 12.x): there the holder cannot be named.
  const bool v2 = api_.cuptiSubscribe_v2 != nullptr && layout_ != nullptr && layout_->major >= 13;
  const char* subscribe_call = v2 ? "cuptiSubscribe_v2" : "cuptiSubscribe";
  const CUptiResult r = v2 ? api_.cuptiSubscribe_v2(&subscriber_, &on_callback, this, &params)
                           : api_.cuptiSubscribe(&subscriber_, &on_callback, this);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    other[sizeof(other) - 1] = '\0';
    std::string who = other[0] != '\0' ? std::string(other) : std::string();
    if (who.empty() && paused_by_us_) {
      // It took CUPTI while we were paused for it: torch.profiler keeps its subscription for the
      // life of the process (Kineto subscribes from a singleton and lets go only with
      // TEARDOWN_CUPTI=1: libkineto/src/CuptiActivityApi.cpp teardownContext).
      who = "the client that took CUPTI during the pause — torch.profiler's Kineto keeps it for the rest of the "
            "process unless TEARDOWN_CUPTI=1 was set before torch started (and no CUDA graphs are used); "
            "stepwatch retries and resumes by itself if it lets go";
    } else if (who.empty()) {
      who = "unnamed: Nsight Systems/Compute, a debugger or a profiler";
    }
    detail = "another CUPTI client holds the subscription (" + who +
             "): stepwatch stands down from GPU tracing; NVTX ranges and C-API marks are still recorded";
    refused = TracerState::kOtherSubscriber;
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    detail = "CUPTI refused to start: " + std::string(subscribe_call) + " -> " + cupti_result_text(api_, r);
    if (r == CUPTI_ERROR_NOT_INITIALIZED || r == CUPTI_ERROR_UNKNOWN) {
      detail += layout_ != nullptr && layout_->major >= 13 ? " (no GPU, or a driver older than CUDA 13 — R580?)"
                                                           : " (no GPU, or a driver older than this CUPTI?)";
    }
    detail += "; GPU tracing is off";
    refused = TracerState::kUnavailable;
    return false;
  }
  subscribed_ = true;
  return true;
}

std::string CuptiAdapterCore::enable_attributes_and_callbacks() {
  std::string notes;
  // One thread-id space: API records carry gettid() like NVTX ranges, C-API marks and the host
  // sampler (the default is pthread_self(): cupti_activity.h:7245-7262). Set before any kind is
  // enabled: "must not be changed during the profiling session" (7874-7876).
  if (SW_CUPTI_CALL(api_, cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) != CUPTI_SUCCESS) {
    notes += "; system thread ids not set (API records cannot be joined with NVTX ranges by thread)";
  }
  // Device-side buffers: only contexts created later see these, which is why start() runs from
  // InitializeInjection, before any context exists. Too small => zero-timestamp records.
  if (options_.device_buffer_bytes > 0 &&
      !set_size_attribute(api_, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, options_.device_buffer_bytes)) {
    notes += "; device buffer size not set";
  }
  if (options_.device_buffer_pool_limit > 0 &&
      !set_size_attribute(api_, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, options_.device_buffer_pool_limit)) {
    notes += "; device buffer pool limit not set";
  }
  // Our pool hands out zeroed buffers, so CUPTI need not zero them on the application thread.
  uint8_t zeroed = 1;
  size_t zeroed_size = sizeof(zeroed);
  SW_CUPTI_CALL(api_, cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size,
                                                &zeroed));
  // Per-thread buffers stay as CUPTI has them (on by default in 13.x, 7201-7211, off in 12.x;
  // changing it mid-session is undefined, and Kineto sets it too: pytorch/kineto#1115). Adaptive buffer sizes keep a
  // buffer that CUPTI withholds while it holds a running kernel's record short-lived instead.

  // Pitfall 8: cudaEventQuery/cudaStreamQuery polling (PyTorch's allocator, the NCCL watchdog)
  // would otherwise flood SYNCHRONIZATION records. Completed queries still leave one each
  // (8256-8266): the converter drops those by their API record (sync_pairing.h).
  // Added in CUPTI 12.8 (API 26): before, the converter's pairing alone drops the query records.
  if (api_.cuptiActivityEnableAllSyncRecords != nullptr && cupti_version_.load() >= 26 &&
      SW_CUPTI_CALL(api_, cuptiActivityEnableAllSyncRecords(0)) != CUPTI_SUCCESS) {
    notes += "; sync-record filter not set (query polling adds sync records)";
  }
  int callback_failures = 0;
  if (SW_CUPTI_CALL(api_, cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_STATE,
                                              CUPTI_CBID_STATE_FATAL_ERROR)) != CUPTI_SUCCESS) {
    ++callback_failures;
  }
  for (const auto list : {traced_api_callbacks(), traced_resource_callbacks()}) {
    for (const TracedCallback& cb : list) {
      // The table holds CUDA 13's calls too (cudaLaunchKernel_v13000, ...): a CBID this library
      // cannot name is one its CUDA does not have (the numbering only grows: 12.x's ids keep their
      // values in 13.x), skipped, not a failure.
      const char* name = nullptr;
      if (cb.domain != CUPTI_CB_DOMAIN_RESOURCE &&
          api_.cuptiGetCallbackName(cb.domain, cb.cbid, &name) != CUPTI_SUCCESS) {
        continue;
      }
      if (SW_CUPTI_CALL(api_, cuptiEnableCallback(1, subscriber_, cb.domain, cb.cbid)) != CUPTI_SUCCESS) {
        ++callback_failures;
      }
    }
  }
  if (callback_failures > 0) notes += "; " + std::to_string(callback_failures) + " callbacks not enabled";
  return notes;
}

TracerState CuptiAdapterCore::bring_up(std::string& detail) {
  TracerState refused = TracerState::kUnavailable;
  if (!subscribe(detail, refused)) return refused;
  std::string notes = enable_attributes_and_callbacks();
  // CUPTI's clock before the first record: another client may have changed it (a calibration
  // here takes a few tens of ms, only when it did).
  check_clock(/*calibrate_now=*/true);

  // Published before registering: CUPTI may ask for a buffer as soon as a kind is enabled.
  g_buffer_owner.store(this, std::memory_order_release);
  if (SW_CUPTI_CALL(api_, cuptiActivityRegisterCallbacks(&on_buffer_requested, &on_buffer_completed)) !=
      CUPTI_SUCCESS) {
    release_subscription();
    detail = "CUPTI refused the activity buffer callbacks; GPU tracing is off";
    return TracerState::kUnavailable;
  }
  std::string traced, refused_kinds;
  enabled_kinds_.clear();
  for (const TracedKind& k : kTracedKinds) {
    const CUptiResult r = SW_CUPTI_CALL(api_, cuptiActivityEnable(k.kind));
    if (r == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(k.kind);
      traced += (traced.empty() ? "" : ", ") + std::string(k.label);
    } else {
      // One kind failing (a driver without MEMORY2, ...) costs that kind only.
      refused_kinds += (refused_kinds.empty() ? "" : ", ") + std::string(k.label) + " (" + cupti_result_text(api_, r) + ")";
    }
  }
  if (enabled_kinds_.empty()) {
    release_subscription();
    detail = "CUPTI enabled no activity kind: " + refused_kinds + "; GPU tracing is off";
    return TracerState::kUnavailable;
  }
  detail = library_text() + ": tracing " + traced;
  if (!refused_kinds.empty()) detail += "; not enabled: " + refused_kinds;
  detail += notes;
  tracker_.set_enabled(true);
  return TracerState::kActive;
}

void CuptiAdapterCore::release_subscription() {
  if (!subscribed_) return;
  SW_CUPTI_CALL(api_, cuptiUnsubscribe(subscriber_));
  subscribed_ = false;
  subscriber_ = nullptr;
}

void CuptiAdapterCore::forced_flush() noexcept {
  // NOTE: no lock of ours is held here: bufferCompleted runs inside this flush.
  forced_flushes_in_flight_.fetch_add(1);
  if (SW_CUPTI_CALL(api_, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) == CUPTI_SUCCESS) {
    flushes_.fetch_add(1);
  }
  forced_flushes_in_flight_.fetch_sub(1);
}

void CuptiAdapterCore::drain_in_flight(std::chrono::milliseconds limit) noexcept {
  // A forced flush hands back the record of work still running with no end, and CUPTI never
  // delivers it again (pytorch/pytorch#195844): it is safe only when nothing is in flight. The
  // kinds are disabled (no new record), so wait — default flushes, bounded, on the caller's thread
  // (stepwatch_pause, before torch.profiler starts; or the exit, whose last step's kernels are
  // typically still queued) — until every traced call's record has come. NOTE: no lock of ours is
  // held across FlushAll.
  tracker_.set_enabled(false);
  const auto deadline = Clock::now() + limit;
  auto pending = [&] {
    std::lock_guard tick_lock(tick_mu_);
    return tracker_.tick(now_ns(), INT64_MAX / 2).pending;
  };
  // Nothing waits (every record came): no default flush, the forced one follows at once.
  while (pending() != 0 && Clock::now() < deadline) {
    if (SW_CUPTI_CALL(api_, cuptiActivityFlushAll(0)) == CUPTI_SUCCESS) flushes_.fetch_add(1);
    wait_for_parses(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void CuptiAdapterCore::flush() noexcept { tick(); }

// ---- pause / resume / shutdown / fork ----------------------------------------------------------

void CuptiAdapterCore::pause() noexcept {
  try {
    uint64_t epoch = 0;
    {
      std::lock_guard lock(control_mu_);
      // Another pause (a second profiler session) also ends the retries of a refused resume.
      retry_resume_.store(false);
      if (shut_down_ || state() != TracerState::kActive) return;
      // From here the flush thread stops calling CUPTI.
      state_.store(TracerState::kPaused, std::memory_order_release);
      paused_by_us_ = true;
      retry_resume_.store(false);
      for (CUpti_ActivityKind kind : enabled_kinds_) SW_CUPTI_CALL(api_, cuptiActivityDisable(kind));
      enabled_kinds_.clear();
      epoch = ++pause_epoch_;
    }
    drain_in_flight(std::chrono::milliseconds(2 * options_.flush_period_ms));
    {
      // The pause interval is untraced (the session's): nothing is waited for across it. Applied
      // now, by a tick of our own: the flush thread does not tick while paused, and a clear left
      // for its first tick after the resume would forget calls made after the resume.
      std::lock_guard tick_lock(tick_mu_);
      tracker_.clear();
      tracker_.tick(now_ns(), INT64_MAX / 2);
    }
    forced_flush();
    poll_dropped();
    std::lock_guard lock(control_mu_);
    // A resume() that ran during the flush took CUPTI back already: leave its subscription alone.
    if (state() == TracerState::kPaused && pause_epoch_ == epoch) release_subscription();
  } catch (...) {
  }
}

void CuptiAdapterCore::resume() noexcept {
  try {
    std::string detail;
    TracerState result;
    {
      std::lock_guard lock(control_mu_);
      // Also after a refused start or resume: the other client may have let go since.
      const TracerState now = state();
      if (shut_down_ || (now != TracerState::kPaused && now != TracerState::kOtherSubscriber) || !pool_) return;
      result = bring_up(detail);
      state_.store(result, std::memory_order_release);
      // Refused after our own pause: the flush thread keeps trying (Kineto's teardown with
      // TEARDOWN_CUPTI=1 lets go at the next API exit, after profile.stop() returned).
      retry_resume_.store(result == TracerState::kOtherSubscriber && paused_by_us_);
      ticks_since_retry_ = 0;
      if (result == TracerState::kActive) paused_by_us_ = false;
    }
    liveness_reset_.store(true);
    if (result == TracerState::kActive) {
      active_since_ns_.store(now_ns());
      restarted_at_ns_.store(active_since_ns_.load());
    } else {
      status("could not resume GPU tracing: " + detail);
    }
  } catch (...) {
  }
}

void CuptiAdapterCore::shutdown(int64_t timeout_ms) noexcept {
  try {
    if (in_child_.load()) return;
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0));
    std::vector<CUpti_ActivityKind> kinds;
    {
      std::lock_guard lock(control_mu_);
      if (shut_down_) return;
      shut_down_ = true;
      if (state() == TracerState::kActive) kinds = enabled_kinds_;
    }
    const bool flush_thread_stopped = stop_flush_thread(deadline);
    // The final flush only when we own CUPTI, and not behind a flush thread stuck in FlushAll (a
    // second FlushAll would queue behind it).
    if (!kinds.empty() && flush_thread_stopped && state() == TracerState::kActive) {
      struct Done {
        std::mutex mu;
        std::condition_variable cv;
        bool finished = false;
      };
      auto done = std::make_shared<Done>();
      auto self = shared_from_this();
      try {
        // On a helper thread so that a hung CUPTI cannot hang the exit. NOTE: abandoned (detached,
        // with the core and `done` kept alive by its captures) when it misses the deadline — a
        // deliberate leak of one blocked thread, instead of a hung process exit.
        const auto drain_limit =
            std::chrono::milliseconds(std::min<int64_t>(2 * options_.flush_period_ms, std::max<int64_t>(timeout_ms, 0) / 2));
        std::thread helper = spawn_quiet_thread([self, done, kinds, drain_limit]() noexcept {
          try {
            // The exit sequence of NVIDIA's injection sample: disable the kinds, then a forced
            // flush that also returns incomplete records.
            for (CUpti_ActivityKind kind : kinds) SW_CUPTI_CALL(self->api_, cuptiActivityDisable(kind));
            // The exit comes with the last step's kernels still queued (nothing syncs at the end of
            // a loop): let them finish, within two flush periods and half the exit's budget, so
            // that the forced flush returns them complete rather than as lost incomplete records.
            self->drain_in_flight(drain_limit);
            self->forced_flush();
            self->poll_dropped();
          } catch (...) {
          }
          std::lock_guard lock(done->mu);
          done->finished = true;
          done->cv.notify_all();
        });
        helper.detach();
        std::unique_lock lock(done->mu);
        if (!done->cv.wait_until(lock, deadline, [&] { return done->finished; })) {
          lock.unlock();
          status("the final CUPTI flush did not return within " + std::to_string(timeout_ms) +
                 " ms; abandoned (records still inside CUPTI are lost)");
        }
      } catch (...) {
        // No helper thread: skip the final flush rather than risk an unbounded one here.
      }
    }
    // Buffers CUPTI still holds now (the final flush hung or was skipped behind a stuck flush
    // thread — e.g. SIGTERM while CUPTI hangs): their records never reach us. Counted, not silent.
    if (const int held = pool_ ? pool_->outstanding() : 0; held > 0) {
      SinkLease lease(*this);
      if (lease) sink_->report_loss(LossKind::kBuffersAbandoned, static_cast<uint64_t>(held));
      status(std::to_string(held) + " activity buffer(s) still inside CUPTI at exit: their records are lost");
    }
    // Close the sink gate, then wait (bounded) for callbacks still inside the sink.
    sink_open_.store(false);
    while (sink_users_.load() > 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    TracerState expected = TracerState::kActive;
    if (!state_.compare_exchange_strong(expected, TracerState::kInactive)) {
      expected = TracerState::kPaused;
      state_.compare_exchange_strong(expected, TracerState::kInactive);
    }
  } catch (...) {
  }
}

void CuptiAdapterCore::disable_in_child() noexcept {
  // Runs in a forked child: the parent's threads (CUPTI's, our flush thread) do not exist here,
  // and any mutex may have been copied locked. Atomic stores only; no lock, no CUPTI call.
  in_child_.store(true);
  state_.store(TracerState::kFailed);
  sink_open_.store(false);
  // The std::thread names a thread of the parent: joining or destroying it here is undefined.
  // Leaked (never touched again; shutdown() returns at once in the child).
  flush_thread_ = nullptr;
}

void CuptiAdapterCore::detach_from_cupti() noexcept {
  try {
    CuptiAdapterCore* self = this;
    g_buffer_owner.compare_exchange_strong(self, nullptr);
    // kFailed: after a fatal error CUPTI finalized itself (no call of ours), or a forked child.
    if (in_child_.load() || state() == TracerState::kFailed) return;
    std::lock_guard lock(control_mu_);
    // The subscriber callback carries this core as userdata: unsubscribe before it goes away.
    release_subscription();
  } catch (...) {
  }
}

}  // namespace detail

// ---- CuptiAdapter -----------------------------------------------------------------------------

CuptiAdapter& CuptiAdapter::instance() {
  // NOTE: leaked on purpose (see the file comment in the header): CUPTI's threads may call back
  // during and after exit; a destroyed adapter there would be a crash in the host's shutdown.
  static CuptiAdapter* const adapter = new CuptiAdapter();
  return *adapter;
}

CuptiAdapter::CuptiAdapter() : core_(std::make_shared<detail::CuptiAdapterCore>()) {}

CuptiAdapter::~CuptiAdapter() {
  core_->shutdown(1000);
  core_->detach_from_cupti();
}

TracerState CuptiAdapter::start(const CuptiApi& api, const GpuTracerOptions& options, EventSink& sink,
                               std::string& detail) noexcept {
  return core_->start(&api, options, sink, detail, {});
}

TracerState CuptiAdapter::start(std::string_view cupti_path, const GpuTracerOptions& options, EventSink& sink,
                               std::string& detail) noexcept {
  try {
    std::string load_error;
    const CuptiApi* api = load_cupti_api(cupti_path, load_error);
    const TracerState state = core_->start(api, options, sink, detail, load_error);
    if (api != nullptr && !load_error.empty()) detail += "; note: " + load_error;
    return state;
  } catch (...) {
    return TracerState::kFailed;
  }
}

void CuptiAdapter::flush() noexcept { core_->flush(); }
void CuptiAdapter::pause() noexcept { core_->pause(); }
void CuptiAdapter::resume() noexcept { core_->resume(); }
void CuptiAdapter::shutdown(int64_t timeout_ms) noexcept { core_->shutdown(timeout_ms); }
void CuptiAdapter::disable_in_child() noexcept { core_->disable_in_child(); }
TracerState CuptiAdapter::state() const noexcept { return core_->state(); }
TracerStats CuptiAdapter::stats() const noexcept { return core_->stats(); }

}  // namespace stepwatch::live
