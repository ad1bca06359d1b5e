#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class HiddenSyncDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "hidden_sync";
  static constexpr std::string_view kDescription =
      "GPU drained by host-blocking calls mid-step (stream/device/event syncs, synchronous or pageable copies, .item())";
  explicit HiddenSyncDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
