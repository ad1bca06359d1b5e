#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class ExposedCollectiveDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "exposed_collective";
  static constexpr std::string_view kDescription =
      "NCCL collectives running with no compute kernel to hide them (unoverlapped all-reduce, exposed all-to-all)";
  explicit ExposedCollectiveDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
