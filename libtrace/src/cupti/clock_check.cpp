#include "cupti/clock_check.h"

#include <cmath>
#include <cstdlib>

namespace stepwatch::live {
namespace {

constexpr size_t kMaxSamples = 8;          // the first, and the most recent ones
constexpr int64_t kMinSpanNs = 20'000'000;  // a rate from pairs closer than this is noise

std::string ms_text(double ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  return buf;
}

}  // namespace

ClockCheck::State ClockCheck::state() const noexcept {
  std::lock_guard lock(mu_);
  return state_;
}

ClockMap ClockCheck::map() const noexcept {
  std::lock_guard lock(mu_);
  return map_;
}

void ClockCheck::reset() noexcept {
  std::lock_guard lock(mu_);
  state_ = State::kAligned;
  map_ = ClockMap{};
  samples_.clear();
}

bool ClockCheck::fit_locked() {
  const Sample& a = samples_.front();
  const Sample& b = samples_.back();
  if (b.cupti <= a.cupti || b.host - a.host < kMinSpanNs) return false;
  const double ns_per_tick = double(b.host - a.host) / double(b.cupti - a.cupti);
  ClockMap m;
  m.mode = ClockMap::Mode::kConvert;
  m.cupti0 = a.cupti;
  m.host0 = a.host;
  m.ns_per_tick = ns_per_tick;
  for (const Sample& s : samples_) {
    if (std::llabs(m.to_host(s.cupti) - s.host) > kToleranceNs) return false;
  }
  map_ = m;
  return true;
}

ClockCheck::Observation ClockCheck::observe(uint64_t cupti, int64_t host_before, int64_t host_after) noexcept {
  Observation out;
  try {
    std::lock_guard lock(mu_);
    out.state = state_;
    // Read across a preemption: a false difference of up to the gap (seen under TSan with 64
    // launching threads: 1.2 ms). No evidence; the next tick reads again.
    if (host_after - host_before > kMaxBracketNs || host_after < host_before) return out;
    const int64_t host = host_before + (host_after - host_before) / 2;
    const int64_t diff = static_cast<int64_t>(cupti) - host;
    const bool same_clock = std::llabs(diff) <= kToleranceNs;
    const State before = state_;
    if (state_ == State::kStoodDown) {
      out.state = state_;
      return out;
    }
    if (same_clock) {
      // Back on the host clock (or never left it): no conversion.
      state_ = State::kAligned;
      map_ = ClockMap{};
      samples_.clear();
    } else {
      if (state_ == State::kAligned) samples_.clear();
      if (samples_.size() >= kMaxSamples) samples_.erase(samples_.begin() + 1);  // keep the first
      samples_.push_back(Sample{cupti, host});
      if (state_ == State::kConverting && std::llabs(map_.to_host(cupti) - host) <= kToleranceNs) {
        fit_locked();  // the line holds: refine the rate over the longer span
      } else if (samples_.size() >= 3 && !fit_locked()) {
        state_ = State::kStoodDown;
        map_.mode = ClockMap::Mode::kDrop;
      } else if (samples_.size() >= 3) {
        state_ = State::kConverting;
      } else {
        state_ = State::kCalibrating;
        map_.mode = ClockMap::Mode::kDrop;
      }
    }
    out.state = state_;
    out.changed = state_ != before;
    if (!out.changed) return out;
    switch (state_) {
      case State::kAligned:
        out.line = "CUPTI's clock reads the host clock (CLOCK_REALTIME) again: records are used as they are";
        break;
      case State::kCalibrating:
        out.line = "CUPTI's clock no longer reads the host clock (cuptiGetTimestamp - CLOCK_REALTIME = " +
                   ms_text(double(diff)) +
                   "): another CUPTI client (torch.profiler registers a TSC clock) changed it; GPU records are "
                   "set aside while stepwatch calibrates a conversion";
        break;
      case State::kConverting: {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.6f ns per CUPTI tick", map_.ns_per_tick);
        out.line = std::string("CUPTI's clock was changed by another client: stepwatch converts its timestamps to "
                               "the host clock (") + buf + ") and keeps checking the conversion";
        break;
      }
      case State::kStoodDown:
        out.line = "CUPTI's clock was changed by another client and does not map linearly onto the host clock: "
                   "stepwatch stands down from GPU tracing (steps are timed, not judged); findings from mixed "
                   "clocks would be wrong";
        break;
    }
  } catch (...) {
  }
  return out;
}

}  // namespace stepwatch::live
