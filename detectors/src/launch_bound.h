#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class LaunchBoundDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "launch_bound";
  static constexpr std::string_view kDescription =
      "The GPU idles between kernels that start as soon as the host launches them: per-op launch and Python "
      "overhead between kernels";
  // Launch-lag evidence: at least this share of the step's kernels (with their launch call in the
  // data) started within StepView::kPromptStartNs of the call's return — nothing else was queued.
  // A quarter, not half: eager steps mix GPU-bound stretches (big matmuls queue up) with launch-bound
  // ones (element-wise tails); a GPU-bound loop has almost none.
  static constexpr double kMinPromptShare = 0.25;
  static constexpr int kMinLaunchedKernels = 20;  // a step with fewer kernels is no launch-rate question
  // Launch calls this large a share of the step, and the dispatch gaps this large a share of its idle.
  static constexpr double kMinLaunchApiShare = 0.05;
  static constexpr double kMinShareOfIdle = 0.5;

  explicit LaunchBoundDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
