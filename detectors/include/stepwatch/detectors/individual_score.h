// The individual straggler score of this rank (as NVIDIA's resiliency straggler detector defines
// it): for each signal, this rank's best recent value / the current one — 1 at its best, lower as
// it slows. A rank that slows on its own (input, host contention, throttling) sees its step-time
// score drop; a rank that waits for a late peer sees its collective-wait score drop. Comparing
// ranks' scores (the stepwatch_individual_score metric) names the straggler without the other
// ranks' traces.
//
// Signals per step: wall time, and collective wait = NCCL kernel time |N ∩ W| (what grows when a
// peer is late: the kernels spin until it arrives). "Best recent" is the 25th percentile of the
// means of 4 consecutive steps over the last 64: a host hiccup makes one step long and the next
// ones short (the queue it drained refills), and short catch-up steps must not set the bar — with
// a per-step 10th percentile, a few of them in 64 made every normal step of a healthy loop score
// 0.68. A lasting change becomes the new normal after most of the window. Bounded (two windows of
// 64 values).
//
// The tracker scores; the `individual_score` detector (detectors/src/individual_score.h) turns a
// score below 0.7 into a finding, which the live log reports once sustained, like every finding.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "stepwatch/core/step_view.h"

namespace stepwatch {

class IndividualScoreTracker {
 public:
  static constexpr size_t kHistorySteps = 64;
  static constexpr size_t kMinHistory = 8;      // no score before 8 steps of history
  static constexpr double kBestQuantile = 0.25;
  static constexpr size_t kMeanOf = 4;  // consecutive steps per mean
  static constexpr double kDegradedBelow = 0.7;  // 1 / 0.7 = 1.43x the best recent time

  struct Score {
    double score = 1.0;
    int64_t best_ns = 0;     // the best recent value
    int64_t current_ns = 0;  // this step's
  };
  // One step. `traced`: the step has GPU data (the collective signal needs it). Scores this step
  // against the history before it, then adds it to the history.
  void observe(const StepView& step, bool traced);

  const std::optional<Score>& step_time() const { return step_time_.score; }
  const std::optional<Score>& collective_wait() const { return collective_.score; }

 private:
  struct Signal {
    std::deque<int64_t> history_ns;  // the last kHistorySteps values (before the current step)
    std::optional<Score> score;      // of the last step observed with a value
  };
  static void observe(Signal& s, int64_t value_ns);

  Signal step_time_, collective_;
};

}  // namespace stepwatch
