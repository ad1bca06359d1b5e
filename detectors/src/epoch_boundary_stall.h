#pragma once

#include "periodic_stall.h"
#include "step_history.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

// A periodic pattern: established at the second occurrence, then reported at every occurrence
// on the period (see periodic_stall.h), each finding carrying that occurrence's stall.
class EpochBoundaryStallDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "epoch_boundary_stall";
  static constexpr std::string_view kDescription =
      "A much larger input wait every N steps: DataLoader workers re-created at each epoch (persistent_workers=False)";
  static constexpr double kMinFactor = 4.0;  // the step's input idle is >= 4x the typical step's
  static constexpr size_t kMinHistory = 3;   // steps before this one needed for a median
  explicit EpochBoundaryStallDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
  detail::StepHistory input_idle_;  // the last 64 steps' input-attributed idle
  detail::PeriodicStall series_;
};

}  // namespace stepwatch
