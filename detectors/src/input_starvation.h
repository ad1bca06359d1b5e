#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class InputStarvationDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "input_starvation";
  static constexpr std::string_view kDescription =
      "GPU idle while the host waits for input data (DataLoader / data phase during the gap)";
  explicit InputStarvationDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
