#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class SyncMemcpyDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "sync_memcpy";
  static constexpr std::string_view kDescription =
      "Synchronous memcpy calls (cudaMemcpy, cuMemcpyDtoH, …): the host waits for the copy, whatever the memory";
  explicit SyncMemcpyDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
