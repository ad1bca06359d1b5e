#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class SlowH2dDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "slow_h2d";
  static constexpr std::string_view kDescription =
      "Large host-to-device copies far below the best rate of the run or any PCIe link: a PCIe path surprise";
  static constexpr uint64_t kMinBytes = 1'000'000;
  // Slow: below 1/kSlowRatio of the best rate observed so far, or below kMinExpectedGbPerS,
  // half of what a PCIe Gen3 x8 link moves from pinned memory (~6 GB/s).
  static constexpr double kSlowRatio = 3.0;
  static constexpr double kMinExpectedGbPerS = 3.0;

  explicit SlowH2dDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
  double best_gb_per_s_ = 0.0;  // the whole run's state: the best HtoD rate seen so far
};

}  // namespace stepwatch
