#pragma once

#include "step_history.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

// A trend finding: reported once, at the step where the variation is established, and again
// only after it has cleared and come back.
class StepVarianceDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "step_variance";
  static constexpr std::string_view kDescription =
      "High step-to-step variation of step time (coefficient of variation over the recent steps)";
  static constexpr double kMinCv = 0.2;     // established at CV >= 0.2 ...
  static constexpr size_t kMinSteps = 5;    // ... over at least 5 steps
  static constexpr double kClearCv = 0.16;  // cleared below 0.8 x kMinCv (hysteresis: no flapping)
  // Start-up ramp: the run's first steps (two or more), while each is faster (or each slower) than
  // every step after it and > 20% off their median (partial batches, caches filling, a schedule
  // ramping up), are left out of the statistic.
  static constexpr double kRampShare = 0.2;
  explicit StepVarianceDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
  // The last 64 steps (the first step of the data excluded), in lockstep: step time, GPU busy
  // time and kernel count — the last two tell what the slow steps are slow with.
  detail::StepHistory durations_;
  detail::StepHistory busy_;
  detail::StepHistory kernels_;
  size_t pushed_ = 0;  // steps that entered the window: while <= its capacity, it starts at the run's start
  bool first_step_seen_ = false;
  bool established_ = false;
};

}  // namespace stepwatch
