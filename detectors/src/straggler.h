#pragma once

#include <array>
#include <deque>

#include "step_history.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

class StragglerDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "straggler";
  static constexpr std::string_view kDescription =
      "A collective far longer than its best recent time with the rest of the step unchanged: this rank waited "
      "inside it for a late peer (one rank's view)";
  static constexpr double kMinRatio = 2.0;           // collective time >= 2x its best recent ...
  static constexpr size_t kHistorySteps = 8;         // ... over the last 8 steps without a straggler
  static constexpr size_t kMinHistory = 2;           // ... with the same kernel count, >= 2 of them
  static constexpr double kMaxComputeChange = 0.15;  // "unchanged": compute time within 15% of the median ...
  static constexpr double kMaxKernelChange = 0.10;   // ... and kernels within 10%

  explicit StragglerDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  struct Sample {
    int kernels = 0;
    int64_t busy_ns = 0;
    int64_t exposed_ns = 0;
    uint64_t bytes = 0;  // 0: unknown
  };
  static constexpr size_t kTypes = 9;  // CollectiveType values
  DetectorThresholds thresholds_;
  std::array<std::deque<Sample>, kTypes> history_;
  detail::StepHistory compute_{kHistorySteps};
  detail::StepHistory kernels_{kHistorySteps};
};

}  // namespace stepwatch
