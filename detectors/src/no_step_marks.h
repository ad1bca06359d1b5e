#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

// Not a fault of the program but of the capture: without step ranges every per-step diagnosis
// is diluted over the whole trace. Reported once, at the pseudo-step.
class NoStepMarksDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "no_step_marks";
  static constexpr std::string_view kDescription =
      "No step marks or step ranges: the data was analyzed as one pseudo-step";
  explicit NoStepMarksDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  std::string step_pattern_;
  bool reported_ = false;
};

}  // namespace stepwatch
