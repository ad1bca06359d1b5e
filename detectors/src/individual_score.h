#pragma once

#include "stepwatch/core/detector.h"
#include "stepwatch/detectors/individual_score.h"

namespace stepwatch {

// A rank that slowed down against its own history (step time, or the time spent waiting inside
// collectives, at < 0.7 of its best recent: IndividualScoreTracker). Cost: the step's extra time
// over the best recent value of the worse signal; the per-step rule applies to it.
class IndividualScoreDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "individual_score";
  static constexpr std::string_view kDescription =
      "This rank slowed against its own recent best (step time or collective wait below 0.7 of it)";
  explicit IndividualScoreDetector(const AnalysisConfig& config) : thresholds_(config.thresholds_for(std::string(kId))) {}
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
  IndividualScoreTracker tracker_;
};

}  // namespace stepwatch
