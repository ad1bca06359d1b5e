#include "cupti/cupti_adapter.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "cupti/buffer_pool.h"
#include "cupti/cupti_api.h"
#include "cupti/cupti_callbacks.h"
#include "cupti/cupti_records.h"
#include "core/quiet_thread.h"

namespace stepwatch::live {

const CuptiApi* load_cupti_api(std::string_view explicit_path, std::string& error) noexcept {
  try {
    auto table = std::make_unique<CuptiApi>();
    if (!load_cupti_api(explicit_path, *table, error)) return nullptr;
    // NOTE: leaked on purpose — the adapter copies the table, but callers may keep this pointer
    // and CUPTI may call into the library it names until the process exits.
    return table.release();
  } catch (...) {
    error = "out of memory while loading CUPTI";
    return nullptr;
  }
}

namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

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
  o.max_buffers = std::clamp(o.max_buffers, 1, 4096);
  o.device_buffer_bytes = std::max<int64_t>(o.device_buffer_bytes, 0);
  o.device_buffer_pool_limit = std::max<int64_t>(o.device_buffer_pool_limit, 0);
  o.silent_flush_periods = std::max(o.silent_flush_periods, 1);
  return o;
}

std::string version_text(uint32_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + " (API " + std::to_string(v) + ")";
}

}  // namespace

class CuptiAdapterCore : public std::enable_shared_from_this<CuptiAdapterCore> {
 public:
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

  TracerState bring_up(std::string& detail);  // control_mu_ held
  void release_subscription();               // control_mu_ held
  void start_flush_thread(std::string& detail);
  bool stop_flush_thread(Clock::time_point deadline);
  void flush_loop() noexcept;
  void tick() noexcept;
  void check_liveness() noexcept;
  void poll_dropped() noexcept;
  void wait_for_parses(Clock::duration budget) noexcept;
  void status(const std::string& line) noexcept;
  void buffer_requested(uint8_t** buffer, size_t* size) noexcept;
  void buffer_completed(uint8_t* buffer, size_t valid_size) noexcept;
  void fatal_error(const CUpti_StateData* data) noexcept;

  // Set by start(), constant afterwards: read without locks by callbacks and threads.
  CuptiApi api_;
  GpuTracerOptions options_;
  EventSink* sink_ = nullptr;
  std::unique_ptr<ActivityBufferPool> pool_;
  std::unique_ptr<RecordConverter> converter_;
  CallbackCounters callbacks_;

  std::atomic<TracerState> state_{TracerState::kInactive};
  std::atomic<bool> in_child_{false};

  // Serializes the control calls (start/pause/resume/shutdown) and guards the fields below it.
  // NOTE: never held across cuptiActivityFlushAll: CUPTI runs bufferCompleted inside FlushAll, on
  // the calling thread and on its worker (which FlushAll may wait for) — a lock held there is one
  // callback away from a deadlock. pause() releases it around its flush for that reason.
  std::mutex control_mu_;
  bool started_ = false;
  bool shut_down_ = false;
  bool subscribed_ = false;
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

  // Liveness, flush thread only.
  uint64_t seen_buffers_ = 0;
  uint64_t seen_api_calls_ = 0;
  int silent_periods_ = 0;
  bool liveness_reported_ = false;
  std::atomic<bool> liveness_reset_{false};
  std::atomic<bool> fatal_reported_{false};

  // Stats.
  std::atomic<uint64_t> buffers_requested_{0}, buffers_completed_{0}, buffers_refused_{0};
  std::atomic<uint64_t> records_{0}, events_{0}, ignored_{0}, zero_timestamp_{0}, incomplete_{0};
  std::atomic<uint64_t> dropped_{0}, flushes_{0};
  std::atomic<int64_t> cupti_overhead_ns_{0};
  std::atomic<uint32_t> cupti_version_{0};
};

namespace {
// The core whose buffer callbacks are registered: CUPTI's buffer callbacks carry no user pointer.
// Production: the leaked singleton's core, valid until exit. Tests: cleared before a core dies.
std::atomic<CuptiAdapterCore*> g_buffer_owner{nullptr};
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
    sink_ = &sink;
    sink_open_.store(true);
    TracerState result = TracerState::kUnavailable;
    if (api == nullptr) {
      detail = "CUPTI (libcupti.so.13) could not be loaded: " + std::string(load_error) +
               "; GPU tracing is off, NVTX ranges and C-API marks are still recorded";
    } else if (!api->complete()) {
      detail = "the CUPTI function table is incomplete; GPU tracing is off";
    } else {
      api_ = *api;
      pool_ = std::make_unique<ActivityBufferPool>(static_cast<size_t>(options_.buffer_bytes), options_.max_buffers);
      converter_ = std::make_unique<RecordConverter>(api_, *sink_);
      uint32_t version = 0;
      SW_CUPTI_CALL(api_, cuptiGetVersion(&version));
      cupti_version_.store(version);
      if (version < 130000 || version >= 140000) {
        detail = "CUPTI " + version_text(version) + " is not supported (stepwatch reads CUDA 13 activity records)" +
                 "; GPU tracing is off";
      } else {
        result = bring_up(detail);
      }
    }
    state_.store(result, std::memory_order_release);
    // Whatever the outcome, the thread keeps the sink's watermark moving (NVTX-only steps still
    // get judged); it calls CUPTI only while the state is kActive.
    start_flush_thread(detail);
    return result;
  } catch (...) {
    detail = "the CUPTI adapter failed to start (out of memory)";
    state_.store(TracerState::kFailed);
    return TracerState::kFailed;
  }
}

TracerState CuptiAdapterCore::bring_up(std::string& detail) {
  if (!subscribed_) {
    // CUPTI writes the name of the tool that holds the subscription here (>= 64 bytes).
    char other[2 * CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "stepwatch";
    params.oldSubscriberName = other;
    params.oldSubscriberSize = sizeof(other);
    // Not SW_CUPTI_CALL: a refusal is an expected outcome, reported through `detail`.
    const CUptiResult r = api_.cuptiSubscribe_v2(&subscriber_, &on_callback, this, &params);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      other[sizeof(other) - 1] = '\0';
      const std::string who = other[0] != '\0' ? std::string(other)
                                               : std::string("unnamed: Nsight Systems/Compute, a debugger or a profiler");
      detail = "another CUPTI client holds the subscription (" + who +
               "): stepwatch stands down from GPU tracing; NVTX ranges and C-API marks are still recorded";
      return TracerState::kOtherSubscriber;
    }
    if (r != CUPTI_SUCCESS) {
      detail = "CUPTI refused to start: cuptiSubscribe_v2 -> " + cupti_result_text(api_, r);
      if (r == CUPTI_ERROR_NOT_INITIALIZED || r == CUPTI_ERROR_UNKNOWN) {
        detail += " (no GPU, or a driver older than CUDA 13?)";
      }
      detail += "; GPU tracing is off";
      return TracerState::kUnavailable;
    }
    subscribed_ = true;
  }

  std::string notes;
  // Device-side buffers: only contexts created later see these, which is why start() runs from
  // InitializeInjection, before any context exists. Too small => zero-timestamp records.
  if (options_.device_buffer_bytes > 0) {
    size_t value = static_cast<size_t>(options_.device_buffer_bytes);
    size_t value_size = sizeof(value);
    if (SW_CUPTI_CALL(api_, cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value_size,
                                                      &value)) != CUPTI_SUCCESS) {
      notes += "; device buffer size not set";
    }
  }
  if (options_.device_buffer_pool_limit > 0) {
    size_t value = static_cast<size_t>(options_.device_buffer_pool_limit);
    size_t value_size = sizeof(value);
    if (SW_CUPTI_CALL(api_, cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT,
                                                      &value_size, &value)) != CUPTI_SUCCESS) {
      notes += "; device buffer pool limit not set";
    }
  }
  // Our pool hands out zeroed buffers, so CUPTI need not zero them on the application thread.
  uint8_t zeroed = 1;
  size_t zeroed_size = sizeof(zeroed);
  SW_CUPTI_CALL(api_, cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size,
                                                &zeroed));

  // Published before registering: CUPTI may ask for a buffer as soon as a kind is enabled.
  g_buffer_owner.store(this, std::memory_order_release);
  if (SW_CUPTI_CALL(api_, cuptiActivityRegisterCallbacks(&on_buffer_requested, &on_buffer_completed)) !=
      CUPTI_SUCCESS) {
    release_subscription();
    detail = "CUPTI refused the activity buffer callbacks; GPU tracing is off";
    return TracerState::kUnavailable;
  }
  // Pitfall 8: cudaEventQuery/cudaStreamQuery polling (PyTorch's allocator, the NCCL watchdog)
  // would otherwise flood SYNCHRONIZATION records.
  if (SW_CUPTI_CALL(api_, cuptiActivityEnableAllSyncRecords(0)) != CUPTI_SUCCESS) {
    notes += "; sync-record filter not set (query polling adds sync records)";
  }

  int callback_failures = 0;
  if (SW_CUPTI_CALL(api_, cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_STATE,
                                              CUPTI_CBID_STATE_FATAL_ERROR)) != CUPTI_SUCCESS) {
    ++callback_failures;
  }
  for (const TracedCallback& cb : traced_api_callbacks()) {
    if (SW_CUPTI_CALL(api_, cuptiEnableCallback(1, subscriber_, cb.domain, cb.cbid)) != CUPTI_SUCCESS) {
      ++callback_failures;
    }
  }
  for (const TracedCallback& cb : traced_resource_callbacks()) {
    if (SW_CUPTI_CALL(api_, cuptiEnableCallback(1, subscriber_, cb.domain, cb.cbid)) != CUPTI_SUCCESS) {
      ++callback_failures;
    }
  }
  if (callback_failures > 0) notes += "; " + std::to_string(callback_failures) + " callbacks not enabled";

  std::string traced, refused;
  enabled_kinds_.clear();
  for (const TracedKind& k : kTracedKinds) {
    const CUptiResult r = SW_CUPTI_CALL(api_, cuptiActivityEnable(k.kind));
    if (r == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(k.kind);
      traced += (traced.empty() ? "" : ", ") + std::string(k.label);
    } else {
      // One kind failing (a driver without MEMORY2, ...) costs that kind only.
      refused += (refused.empty() ? "" : ", ") + std::string(k.label) + " (" + cupti_result_text(api_, r) + ")";
    }
  }
  if (enabled_kinds_.empty()) {
    release_subscription();
    detail = "CUPTI enabled no activity kind: " + refused + "; GPU tracing is off";
    return TracerState::kUnavailable;
  }
  detail = "CUPTI " + version_text(cupti_version_.load()) + ": tracing " + traced;
  if (!refused.empty()) detail += "; not enabled: " + refused;
  detail += notes;
  return TracerState::kActive;
}

void CuptiAdapterCore::release_subscription() {
  if (!subscribed_) return;
  SW_CUPTI_CALL(api_, cuptiUnsubscribe(subscriber_));
  subscribed_ = false;
  subscriber_ = nullptr;
}

// ---- flush thread -----------------------------------------------------------------------------

void CuptiAdapterCore::start_flush_thread(std::string& detail) {
  try {
    auto self = shared_from_this();
    // The thread holds the core: if it is abandoned inside a hung FlushAll, the core outlives any
    // CuptiAdapter that owned it instead of being freed under the thread's feet.
    flush_thread_ = new std::thread(spawn_quiet_thread([self]() noexcept { self->flush_loop(); }));
  } catch (...) {
    detail += "; no flush thread (thread creation failed): records arrive only when a buffer fills";
  }
}

void CuptiAdapterCore::flush_loop() noexcept {
  try {
    pthread_setname_np(pthread_self(), "sw-cupti-flush");
    std::unique_lock lock(flush_mu_);
    const auto period = std::chrono::milliseconds(options_.flush_period_ms);
    while (!flush_stop_) {
      flush_cv_.wait_for(lock, period, [this] { return flush_stop_; });
      if (flush_stop_) break;
      // NOTE: flush_mu_ is released across the tick: the tick calls cuptiActivityFlushAll.
      lock.unlock();
      tick();
      check_liveness();
      lock.lock();
    }
    flush_exited_ = true;
    lock.unlock();
    flush_cv_.notify_all();
  } catch (...) {
    std::lock_guard lock(flush_mu_);
    flush_exited_ = true;
    flush_cv_.notify_all();
  }
}

bool CuptiAdapterCore::stop_flush_thread(Clock::time_point deadline) {
  std::thread* thread = nullptr;
  bool exited = false;
  {
    std::unique_lock lock(flush_mu_);
    flush_stop_ = true;
    thread = flush_thread_;
    flush_thread_ = nullptr;
    flush_cv_.notify_all();
    if (thread == nullptr) return true;
    exited = flush_cv_.wait_until(lock, deadline, [this] { return flush_exited_; });
  }
  if (exited) {
    thread->join();
    delete thread;
    return true;
  }
  // Stuck inside FlushAll: abandoned. It exits by itself if CUPTI ever returns (flush_stop_ is
  // set), holding the core alive through its shared_ptr; the std::thread object is leaked.
  thread->detach();
  delete thread;
  return false;
}

void CuptiAdapterCore::tick() noexcept {
  if (in_child_.load()) return;
  // Taken before the flush: every record that completed before `t` is delivered by the time
  // FlushAll(0) returns (or is being parsed on another thread: see wait_for_parses).
  const int64_t t = now_ns();
  if (state() == TracerState::kActive) {
    // NOTE: no lock of ours is held here — bufferCompleted runs inside FlushAll (see control_mu_).
    if (SW_CUPTI_CALL(api_, cuptiActivityFlushAll(0)) == CUPTI_SUCCESS) flushes_.fetch_add(1);
    wait_for_parses(std::chrono::milliseconds(std::min<int64_t>(options_.flush_period_ms / 2, 50)));
    if (state() == TracerState::kActive) poll_dropped();
  }
  SinkLease lease(*this);
  if (lease) sink_->advance_watermark(t);
}

void CuptiAdapterCore::wait_for_parses(Clock::duration budget) noexcept {
  // A buffer CUPTI's worker thread is parsing while FlushAll ran holds records older than the
  // watermark we are about to publish: give it a moment (bounded) to reach the sink.
  const auto deadline = Clock::now() + budget;
  while (parses_in_flight_.load() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void CuptiAdapterCore::poll_dropped() noexcept {
  size_t dropped = 0;
  // Reads and resets CUPTI's global count.
  if (SW_CUPTI_CALL(api_, cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped)) != CUPTI_SUCCESS) return;
  if (dropped == 0) return;
  dropped_.fetch_add(dropped);
  SinkLease lease(*this);
  if (lease) sink_->report_loss(LossKind::kCuptiDropped, dropped);
}

void CuptiAdapterCore::check_liveness() noexcept {
  try {
    if (liveness_reset_.exchange(false)) silent_periods_ = 0;
    const uint64_t buffers = buffers_requested_.load() + buffers_completed_.load();
    const uint64_t calls = callbacks_.totals().api_calls;
    if (state() != TracerState::kActive) {
      silent_periods_ = 0;
    } else if (buffers != seen_buffers_) {
      silent_periods_ = 0;
    } else if (calls != seen_api_calls_) {
      // CUDA calls went through our callbacks, FlushAll ran, yet no buffer came back: someone
      // else's buffer callbacks are registered (the activity API is process-global in 13.0).
      ++silent_periods_;
    }
    seen_buffers_ = buffers;
    seen_api_calls_ = calls;
    if (silent_periods_ >= options_.silent_flush_periods && !liveness_reported_) {
      liveness_reported_ = true;
      status("CUPTI has delivered no activity buffer for " +
             std::to_string(static_cast<int64_t>(silent_periods_) * options_.flush_period_ms) +
             " ms while CUDA calls continue: another CUPTI client (torch.profiler/Kineto?) has probably taken "
             "the activity API; GPU timing is missing from here on (use stepwatch_pause/resume around it)");
    }
  } catch (...) {
  }
}

void CuptiAdapterCore::status(const std::string& line) noexcept {
  SinkLease lease(*this);
  if (lease) sink_->status(line);
}

void CuptiAdapterCore::flush() noexcept { tick(); }

// ---- pause / resume / shutdown / fork ----------------------------------------------------------

void CuptiAdapterCore::pause() noexcept {
  try {
    uint64_t epoch = 0;
    {
      std::lock_guard lock(control_mu_);
      if (shut_down_ || state() != TracerState::kActive) return;
      // From here the flush thread stops calling CUPTI.
      state_.store(TracerState::kPaused, std::memory_order_release);
      for (CUpti_ActivityKind kind : enabled_kinds_) SW_CUPTI_CALL(api_, cuptiActivityDisable(kind));
      enabled_kinds_.clear();
      epoch = ++pause_epoch_;
    }
    // NOTE: control_mu_ released: bufferCompleted runs inside this flush.
    if (SW_CUPTI_CALL(api_, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) == CUPTI_SUCCESS) {
      flushes_.fetch_add(1);
    }
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
    }
    liveness_reset_.store(true);
    if (result != TracerState::kActive) status("could not resume GPU tracing: " + detail);
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
        std::thread helper = spawn_quiet_thread([self, done, kinds]() noexcept {
          try {
            // The exit sequence of NVIDIA's injection sample: disable the kinds, then a forced
            // flush that also returns incomplete records.
            for (CUpti_ActivityKind kind : kinds) SW_CUPTI_CALL(self->api_, cuptiActivityDisable(kind));
            if (SW_CUPTI_CALL(self->api_, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) ==
                CUPTI_SUCCESS) {
              self->flushes_.fetch_add(1);
            }
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

// ---- CUPTI callbacks --------------------------------------------------------------------------

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

void CuptiAdapterCore::buffer_requested(uint8_t** buffer, size_t* size) noexcept {
  if (in_child_.load(std::memory_order_relaxed)) return;
  const int64_t t0 = monotonic_ns();
  buffers_requested_.fetch_add(1, std::memory_order_relaxed);
  if (uint8_t* b = pool_->acquire()) {
    // Ownership passes to CUPTI until bufferCompleted hands the buffer back.
    *buffer = b;
    *size = pool_->buffer_bytes();
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
      const BufferParseResult r = converter_->parse(buffer, valid_size);
      records_.fetch_add(r.records, std::memory_order_relaxed);
      events_.fetch_add(r.events, std::memory_order_relaxed);
      ignored_.fetch_add(r.ignored, std::memory_order_relaxed);
      zero_timestamp_.fetch_add(r.zero_timestamp, std::memory_order_relaxed);
      if (r.incomplete) incomplete_.fetch_add(1, std::memory_order_relaxed);
      cupti_overhead_ns_.fetch_add(r.cupti_overhead_ns, std::memory_order_relaxed);
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
        // Hot path (inside every traced CUDA call): count and time only.
        core->callbacks_.on_api(domain, cbid, static_cast<const CUpti_CallbackData*>(cbdata));
        break;
      case CUPTI_CB_DOMAIN_RESOURCE:
        core->callbacks_.on_resource(cbid);
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

// ---- stats ------------------------------------------------------------------------------------

TracerStats CuptiAdapterCore::stats() const noexcept {
  TracerStats s;
  const CallbackTotals cb = callbacks_.totals();
  s.buffers_requested = buffers_requested_.load(std::memory_order_relaxed);
  s.buffers_completed = buffers_completed_.load(std::memory_order_relaxed);
  s.records = records_.load(std::memory_order_relaxed);
  s.bytes_in_pool = pool_ ? pool_->bytes_allocated() : 0;
  s.callback_ns = cb.callback_ns;
  s.cupti_overhead_ns = cupti_overhead_ns_.load(std::memory_order_relaxed);
  s.cupti_version = cupti_version_.load(std::memory_order_relaxed);
  s.events = events_.load(std::memory_order_relaxed);
  s.records_ignored = ignored_.load(std::memory_order_relaxed);
  s.buffers_refused = buffers_refused_.load(std::memory_order_relaxed);
  s.zero_timestamp_records = zero_timestamp_.load(std::memory_order_relaxed);
  s.incomplete_buffers = incomplete_.load(std::memory_order_relaxed);
  s.dropped_records = dropped_.load(std::memory_order_relaxed);
  s.flushes = flushes_.load(std::memory_order_relaxed);
  s.api_callbacks = cb.api_calls;
  s.blocking_calls = cb.blocking_calls;
  s.blocking_ns = cb.blocking_ns;
  s.launch_calls = cb.launch_calls;
  s.contexts_created = cb.contexts_created;
  s.streams_created = cb.streams_created;
  return s;
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
