#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class OverlapSlowdownDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "overlap_slowdown";
  static constexpr std::string_view kDescription =
      "Compute kernels longer only while NCCL kernels overlap them: communication takes SMs and bandwidth from "
      "compute (stream-priority inversion)";
  static constexpr double kMinRatio = 1.3;        // overlapped mean >= 1.3x the non-overlapped mean ...
  static constexpr double kMinSlowShare = 0.5;    // ... for most of the compared overlapped time
  static constexpr double kHeavyShare = 0.02;     // compared: kernels >= 2% of the step's compute time ...
  static constexpr int kMinInstances = 2;         // ... with >= 2 overlapped and >= 2 other instances

  explicit OverlapSlowdownDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
