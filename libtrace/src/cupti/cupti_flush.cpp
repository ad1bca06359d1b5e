// The adapter's flush thread (cupti_adapter_core.h): every flush period a default flush, then the
// watermark — the time before which every record has arrived — held below the oldest traced call
// whose record has not (the completeness watermark), the check of CUPTI's clock, buffer-callback
// liveness, and the retry of a refused resume.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/quiet_thread.h"
#include "cupti/cupti_adapter_core.h"

namespace stepwatch::live::detail {

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
      retry_resume();
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
  // Taken before the flush: the watermark never passes it.
  const int64_t t = now_ns();
  int64_t watermark = t;
  if (state() == TracerState::kActive) {
    // NOTE: no lock of ours is held here — bufferCompleted runs inside FlushAll (see control_mu_).
    // A default flush returns only buffers whose records are all complete (cupti_activity.h:7724-7727):
    // never a running kernel's record with no end (pytorch/pytorch#195844).
    if (SW_CUPTI_CALL(api_, cuptiActivityFlushAll(0)) == CUPTI_SUCCESS) flushes_.fetch_add(1);
    wait_for_parses(std::chrono::milliseconds(std::min<int64_t>(options_.flush_period_ms / 2, 50)));
    if (state() == TracerState::kActive) {
      poll_dropped();
      converter_->tick();
      check_clock(/*calibrate_now=*/false);
      watermark = completeness_watermark(t);
    }
  }
  SinkLease lease(*this);
  if (lease) sink_->advance_watermark(watermark);
}

int64_t CuptiAdapterCore::completeness_watermark(int64_t flush_started_ns) noexcept {
  const int64_t wait_limit_ns = int64_t{options_.completeness_wait_periods} * options_.flush_period_ms * 1'000'000;
  std::unique_lock tick_lock(tick_mu_);
  const LaunchTracker::Tick r = tracker_.tick(flush_started_ns, wait_limit_ns);
  tick_lock.unlock();
  pending_calls_.store(r.pending, std::memory_order_relaxed);
  if (r.watermark_ns == INT64_MIN) return INT64_MIN;  // the tracker could not tell: hold it
  int64_t watermark = std::min(r.watermark_ns, converter_->oldest_held_ns());
  if (r.gave_up > 0) {
    // Waited long enough: GPU records of calls made from gave_up_from_ns on may never come (a
    // buffer another client took, a record a forced flush handed back unfinished). Steps there
    // are incomplete — timed and counted, never judged as if the GPU had been idle.
    calls_given_up_.fetch_add(r.gave_up, std::memory_order_relaxed);
    SinkLease lease(*this);
    if (lease) sink_->mark_incomplete(r.gave_up_from_ns, flush_started_ns);
  }
  // The clock is being calibrated (its records are set aside): nothing since it last matched is
  // complete.
  if (clock_.state() == ClockCheck::State::kCalibrating) watermark = std::min(watermark, last_clock_ok_ns_.load());
  watermark_hold_ns_.store(std::max<int64_t>(flush_started_ns - watermark, 0), std::memory_order_relaxed);
  return watermark;
}

void CuptiAdapterCore::check_clock(bool calibrate_now) noexcept {
  try {
    // The narrowest of a few (host, CUPTI, host) brackets: a preempted read is no evidence
    // (ClockCheck::kMaxBracketNs) and is read again, up to 3 times in one tick.
    auto sample = [&] {
      uint64_t cupti = 0;
      int64_t before = 0, after = INT64_MAX;
      for (int i = 0; i < 3 && after - before > ClockCheck::kMaxBracketNs; ++i) {
        const int64_t b = now_ns();
        uint64_t c = 0;
        if (SW_CUPTI_CALL(api_, cuptiGetTimestamp(&c)) != CUPTI_SUCCESS) return ClockCheck::Observation{};
        const int64_t a = now_ns();
        if (a - b < after - before) before = b, after = a, cupti = c;
      }
      ClockCheck::Observation o = clock_.observe(cupti, before, after);
      if (o.changed) status(o.line);
      return o;
    };
    const int64_t last_ok = last_clock_ok_ns_.load();
    ClockCheck::Observation o = sample();
    bool changed = o.changed;
    // At bring-up (no kind enabled yet: no record can be on either clock) a changed clock is
    // calibrated before the first record: three more pairs over 60 ms.
    for (int i = 0; calibrate_now && i < 3 && o.state == ClockCheck::State::kCalibrating; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      o = sample();
    }
    const int64_t now = now_ns();
    if (o.state == ClockCheck::State::kAligned || o.state == ClockCheck::State::kConverting) last_clock_ok_ns_.store(now);
    if (calibrate_now || !changed) return;
    // During a session: since the last check at which the clocks agreed, records may be on either
    // clock (the header: records made before a change keep the previous method, 8137-8141).
    SinkLease lease(*this);
    if (!lease) return;
    if (o.state != ClockCheck::State::kAligned && last_ok < now) sink_->mark_incomplete(last_ok != 0 ? last_ok : now, now);
    // Stood down: every later step is timed and counted, never judged from mixed clocks.
    if (o.state == ClockCheck::State::kStoodDown) sink_->mark_incomplete(now, INT64_MAX);
  } catch (...) {
  }
}

void CuptiAdapterCore::retry_resume() noexcept {
  if (!retry_resume_.load()) return;
  try {
    std::string detail;
    {
      std::lock_guard lock(control_mu_);
      if (shut_down_ || in_child_.load() || state() != TracerState::kOtherSubscriber) {
        retry_resume_.store(false);
        return;
      }
      // Every period for the first 10, then every 10th: a subscribe attempt is cheap.
      if (++ticks_since_retry_ > 10 && ticks_since_retry_ % 10 != 0) return;
      TracerState refused = TracerState::kOtherSubscriber;
      if (!subscribe(detail, refused)) return;
      const TracerState result = bring_up(detail);
      state_.store(result, std::memory_order_release);
      retry_resume_.store(false);
      if (result != TracerState::kActive) {
        status("could not resume GPU tracing: " + detail);
        return;
      }
      paused_by_us_ = false;
    }
    active_since_ns_.store(now_ns());
    restarted_at_ns_.store(active_since_ns_.load());
    liveness_reset_.store(true);
    status("resumed: the other CUPTI client let go; GPU tracing again (" + detail + ")");
  } catch (...) {
  }
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
             "the activity API; steps from here are reported incomplete, not judged. Fix: stepwatch.torch.watch() "
             "(or stepwatch_pause/stepwatch_resume) around torch.profiler");
    }
  } catch (...) {
  }
}

void CuptiAdapterCore::status(const std::string& line) noexcept {
  SinkLease lease(*this);
  if (lease) sink_->status(line);
}

}  // namespace stepwatch::live::detail
