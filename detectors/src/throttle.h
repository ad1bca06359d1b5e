#pragma once

#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "step_history.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

class ThrottleDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "throttle";
  static constexpr std::string_view kDescription =
      "The same kernels uniformly slower than their own recent baseline with no new GPU idle: clock throttling "
      "(DVFS, power or thermal)";
  static constexpr double kMinSlowdown = 1.15;        // a kernel is slower at >= 1.15x its baseline mean ...
  static constexpr double kMinSlowShare = 2.0 / 3.0;  // ... and most compared kernels must be
  static constexpr int kMinCompared = 2;
  static constexpr double kHeavyShare = 0.05;         // heavy: >= 5% of the step's compute time
  static constexpr double kMaxCountChange = 0.25;     // "same count": within 25% of the baseline's launches
  static constexpr size_t kBaselineSteps = 8;         // per kernel name: the last 8 unthrottled steps
  static constexpr size_t kMinBaselineSteps = 3;
  static constexpr size_t kMaxNames = 64;
  static constexpr int64_t kMinIdleGrowthNs = 1'000'000;  // idle "grew": by > max(1 ms, 5% of the step)
  static constexpr double kIdleGrowthShare = 0.05;
  // NVML evidence (live): the clock "dropped" below 92% of its reference (the median SM clock of the
  // baseline steps, else the device's maximum). A 15% kernel slowdown from clocks alone needs a
  // >= 13% lower clock; memory-bound kernels slow less than the clock.
  static constexpr double kClockDropShare = 0.92;

  explicit ThrottleDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  struct Sample {
    int count = 0;
    int64_t mean_ns = 0;
  };
  DetectorThresholds thresholds_;
  bool first_step_seen_ = false;
  std::unordered_map<std::string, std::deque<Sample>> baseline_;  // <= kMaxNames x kBaselineSteps
  // The first kBaselineSteps unthrottled steps of each name, kept for the run: a gradual slowdown
  // (a few % per step) moves the recent baseline along with it, never the early one.
  std::unordered_map<std::string, std::vector<Sample>> early_;  // <= kMaxNames x kBaselineSteps
  detail::StepHistory idle_{kBaselineSteps};
  detail::StepHistory duration_{kBaselineSteps};
  detail::StepHistory clock_mhz_{kBaselineSteps};  // median SM clock of the baseline steps that had samples
};

}  // namespace stepwatch
