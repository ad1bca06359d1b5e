#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class HostBoundDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "host_bound";
  static constexpr std::string_view kDescription =
      "The GPU idles while the launching thread does CPU work of its own (no data wait, no blocking call, no "
      "launch): the message names the host activity in the gaps";

  explicit HostBoundDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
