// CUPTI's clock against stepwatch's host clock. CUPTI's timestamp source is process-global
// (cuptiActivityRegisterTimestampCallback, cupti_activity.h:8111-8150); its Linux default is
// clock_gettime(CLOCK_REALTIME) (8118), the clock of stepwatch's step marks, NVTX ranges and
// samplers — so stepwatch installs no callback (others would inherit it) and checks instead, every
// tick, that cuptiGetTimestamp() ("normalized to correspond with the start and end timestamps
// reported in the CUPTI activity records", 7270-7283) still reads the host clock. Kineto registers
// a TSC callback (raw ticks) whenever torch.profiler starts and never removes it
// (libkineto/src/CuptiTimestamp.cpp configureCuptiTimestampSource, use_cupti_tsc() defaults to true).
//
// When they differ: calibrate a linear map CUPTI -> host from pairs read on each tick, convert every
// record through it, and keep checking it; when the pairs do not lie on a line, stand down (one
// status line). While calibrating, records are not converted but set aside (counted as data loss,
// clock_uncalibrated) and the adapter reports the interval incomplete: no finding is computed from
// mixed clocks. A pair read across a preemption is no evidence either way (kMaxBracketNs).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace stepwatch::live {

// What the record converter applies to a CUPTI timestamp (copied once per buffer).
struct ClockMap {
  enum class Mode : uint8_t { kIdentity, kConvert, kDrop };
  Mode mode = Mode::kIdentity;
  uint64_t cupti0 = 0;   // anchor: a CUPTI reading ...
  int64_t host0 = 0;     // ... and the host time it maps to
  double ns_per_tick = 1.0;
  // The host time of CUPTI timestamp `t`; only for kConvert.
  int64_t to_host(uint64_t t) const noexcept {
    const double d = t >= cupti0 ? double(t - cupti0) : -double(cupti0 - t);
    return host0 + static_cast<int64_t>(d * ns_per_tick);
  }
};

class ClockCheck {
 public:
  enum class State : uint8_t { kAligned, kCalibrating, kConverting, kStoodDown };
  // Differences below this are the same clock read twice (CUPTI_NOTES §4 measured ~340 ns).
  static constexpr int64_t kToleranceNs = 1'000'000;

  struct Observation {
    State state = State::kAligned;
    bool changed = false;   // the state changed with this sample
    std::string line;       // one status line when it did
  };
  // A pair whose host reads are further apart than this cannot tell: the reading thread was
  // preempted between them (a loaded machine), and the midpoint may be off by half the gap.
  static constexpr int64_t kMaxBracketNs = kToleranceNs / 2;

  // One pair: `cupti` read by cuptiGetTimestamp between host reads `host_before` and `host_after`.
  // A pair with a wider bracket than kMaxBracketNs changes nothing (the state as it was, unchanged).
  Observation observe(uint64_t cupti, int64_t host_before, int64_t host_after) noexcept;
  State state() const noexcept;
  ClockMap map() const noexcept;  // any thread
  void reset() noexcept;          // a new session (tests)

 private:
  struct Sample {
    uint64_t cupti;
    int64_t host;
  };
  bool fit_locked();  // from samples_: true when every sample lies on the line (within tolerance)

  mutable std::mutex mu_;
  State state_ = State::kAligned;
  ClockMap map_;
  std::vector<Sample> samples_;  // since the clocks parted (bounded: first, and the last few)
};

}  // namespace stepwatch::live
