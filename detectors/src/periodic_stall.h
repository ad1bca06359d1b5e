// PeriodicStall: tells whether an occurrence of a stall (a checkpoint burst, an epoch-boundary
// input wait) continues a regular series (private to detectors/). Bounded: it keeps the last
// occurrence and the period only, so periods far longer than any step history still count.
//
// The rule: the first occurrence is only remembered; the second establishes the period (the
// interval between them, >= 2 steps) and is reported; later ones are reported when their
// interval matches the period within max(1 step, 10%). An occurrence off the period is not
// reported and starts a new candidate period (the next one that matches it is reported).
// Occurrences in consecutive steps (interval < 2) are one stall spilling over a step boundary:
// they neither count nor break the series.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace stepwatch::detail {

class PeriodicStall {
 public:
  static constexpr int64_t kMinPeriodSteps = 2;

  struct Verdict {
    bool report = false;
    int64_t period_steps = 0;  // the established (or candidate) period; 0 = first occurrence
    int64_t interval_ns = 0;   // time since the previous occurrence began
    int occurrences = 0;       // occurrences in the current series, this one included
  };

  Verdict occurrence(int64_t step, int64_t start_ns) {
    Verdict v;
    if (last_step_ < 0) {
      remember(step, start_ns);
      series_ = 1;
      v.occurrences = series_;
      return v;
    }
    const int64_t interval = step - last_step_;
    if (interval < kMinPeriodSteps) {
      v.period_steps = period_steps_;
      v.occurrences = series_;
      return v;
    }
    v.interval_ns = start_ns - last_start_ns_;
    if (period_steps_ == 0) {
      period_steps_ = interval;
      series_ = 2;
      v.report = true;
    } else if (std::llabs(interval - period_steps_) <= std::max<int64_t>(1, period_steps_ / 10)) {
      ++series_;
      v.report = true;
    } else {
      // Off the period: this occurrence and the previous one form a candidate period, which the
      // next occurrence at that interval confirms.
      period_steps_ = interval;
      series_ = 2;
    }
    v.period_steps = period_steps_;
    v.occurrences = series_;
    remember(step, start_ns);
    return v;
  }

 private:
  void remember(int64_t step, int64_t start_ns) {
    last_step_ = step;
    last_start_ns_ = start_ns;
  }

  int64_t last_step_ = -1;
  int64_t last_start_ns_ = 0;
  int64_t period_steps_ = 0;
  int series_ = 0;
};

}  // namespace stepwatch::detail
