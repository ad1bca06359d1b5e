#pragma once

#include "step_history.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

class RecompilationDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "recompilation";
  static constexpr std::string_view kDescription =
      "Sawtooth steps >= 10x the median with the GPU idle while the host is busy (torch.compile/XLA recompilation)";
  static constexpr double kMinFactor = 10.0;      // the step takes >= 10x the median step ...
  static constexpr double kMinHostShare = 0.5;    // ... and host-attributed idle is >= half the extra time
  static constexpr size_t kMinHistory = 3;        // steps before this one needed for a median
  explicit RecompilationDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
  detail::StepHistory durations_;  // the last 64 step times
};

}  // namespace stepwatch
