#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class AllocatorChurnDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "allocator_churn";
  static constexpr std::string_view kDescription =
      "cudaMalloc/cudaFree-class calls mid-step (caching-allocator misses) idling the GPU; 100 ms+ stalls";
  // One call this long is reported even below the common rule (the catalog's "occasional
  // 100 ms+ malloc stalls").
  static constexpr int64_t kStallNs = 100'000'000;

  explicit AllocatorChurnDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
