#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class PageableMemcpyDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "pageable_memcpy";
  static constexpr std::string_view kDescription =
      "Async memcpy to/from pageable host memory: staged, the call blocks until the copy is done";
  explicit PageableMemcpyDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
