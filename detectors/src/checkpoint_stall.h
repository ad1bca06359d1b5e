#pragma once

#include "periodic_stall.h"
#include "step_history.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

// A periodic pattern: established at the second occurrence, then reported at every occurrence
// on the period (see periodic_stall.h), each finding carrying that occurrence's stall.
class CheckpointStallDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "checkpoint_stall";
  static constexpr std::string_view kDescription =
      "Every N steps a long device-to-host copy burst with compute idle (synchronous checkpointing)";
  static constexpr size_t kMinHistory = 3;  // steps before this one needed for a median
  explicit CheckpointStallDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
  detail::StepHistory durations_;  // the last 64 step times
  detail::PeriodicStall series_;
};

}  // namespace stepwatch
