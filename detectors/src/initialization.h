#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class InitializationDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "initialization";
  static constexpr std::string_view kDescription =
      "One-off initialization in the capture (CUDA context creation, lazy module loading, allocator set-up) "
      "before the first step, after the last, or filling the first step: reported once, never as a step fault";

  explicit InitializationDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView&, FindingSink&) override {}
  void on_finish(const RunView& run, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
