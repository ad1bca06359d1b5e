#pragma once

#include <vector>

#include "stepwatch/core/stats.h"

#include "stepwatch/core/detector.h"

namespace stepwatch {

// Not a fault of the program but of the capture: without step marks the steps are either
// inferred from the loop (the finding says how, once, at the first inferred step, when the data
// ends) or, when no period is found, the data is one pseudo-step and every per-step diagnosis is
// diluted over it (reported once, at the pseudo-step).
class NoStepMarksDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "no_step_marks";
  static constexpr bool kNoCost = true;  // says how steps were found: nothing to threshold
  static constexpr std::string_view kDescription =
      "No step marks or step ranges: steps inferred from the loop, or the data analyzed as one pseudo-step";
  explicit NoStepMarksDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;
  void on_finish(const RunView& run, FindingSink& sink) override;

 private:
  std::string step_pattern_;
  bool reported_ = false;
  // Inferred steps: the first one (the finding's step), their count and a bounded sample of their
  // durations (live runs are long).
  bool inferred_ = false;
  uint64_t inferred_steps_ = 0;
  int rank_ = 0;
  int64_t first_inferred_step_ = 0;
  std::string_view inferred_from_;
  int32_t inferred_period_ = 0;
  BoundedSample inferred_ns_;
};

}  // namespace stepwatch
