// The individual straggler score of this rank (as NVIDIA's resiliency straggler detector defines
// it): for each signal, this rank's best recent value / the current one — 1 at its best, lower as
// it slows. A rank that slows on its own (input, host contention, throttling) sees its step-time
// score drop; a rank that waits for a late peer sees its collective-wait score drop. Comparing
// ranks' scores (the stepwatch_individual_score metric) names the straggler without the other
// ranks' traces.
//
// Signals per step: wall time, and collective wait = NCCL kernel time |N ∩ W| (what grows when a
// peer is late: the kernels spin until it arrives). "Best recent" is the 10th percentile of the
// last 64 scored steps, so one lucky step does not set the bar and a lasting change becomes the
// new normal after most of the window. The log reports a signal once its score is below 0.7 on
// >= sustain_min of the last sustain_window scored steps (STEPWATCH_SUSTAIN), and says when it
// recovers. Analysis thread only; bounded (two windows of 64 values).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "stepwatch/core/step_view.h"

namespace stepwatch::live {

class IndividualScore {
 public:
  static constexpr size_t kHistorySteps = 64;
  static constexpr size_t kMinHistory = 8;      // no score before 8 steps of history
  static constexpr double kBestQuantile = 0.10;
  static constexpr double kDegradedBelow = 0.7;  // 1 / 0.7 = 1.43x the best recent time

  IndividualScore(int sustain_min, int sustain_window);

  struct LogLine {
    bool degraded = false;  // true: a degradation (warning); false: a recovery (info)
    std::string text;       // without the "[stepwatch][rank R][step N] " prefix
  };
  // One analyzed step after warm-up. `traced`: the step has GPU data (the collective signal needs
  // it). Returns the log lines this step produces: a degradation once sustained, a recovery when
  // it clears.
  std::vector<LogLine> on_step(const StepView& step, bool traced);

  std::optional<double> step_time_score() const { return step_time_.score; }
  std::optional<double> collective_wait_score() const { return collective_.score; }

 private:
  struct Signal {
    std::deque<int64_t> history_ns;  // the last kHistorySteps values (before the current step)
    std::deque<bool> degraded;       // the last sustain_window scores: below kDegradedBelow?
    std::optional<double> score;
    int64_t best_ns = 0, current_ns = 0;
    bool reported = false;
    int64_t since_step = 0;
    double worst_score = 1.0;
  };
  // Scores `value_ns` against the signal's history, then adds it to the history; returns true
  // when the sustained state changed (line to write).
  bool observe(Signal& s, int64_t value_ns, int64_t step);

  int sustain_min_, sustain_window_;
  Signal step_time_, collective_;
};

}  // namespace stepwatch::live
