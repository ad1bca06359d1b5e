#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class LaunchBoundDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "launch_bound";
  static constexpr std::string_view kDescription =
      "The GPU idles between kernels that start as soon as the host launches them: per-op launch and Python "
      "overhead between kernels";
  // The launch-lag evidence and its thresholds: dispatch_gaps.h (shared with host_bound, which
  // takes the short gaps' host part when the evidence does not hold).

  explicit LaunchBoundDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
