#pragma once

#include "stepwatch/core/detector.h"

namespace stepwatch {

class LaunchBoundDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "launch_bound";
  static constexpr std::string_view kDescription =
      "Many short kernels (median < 20 µs) with the GPU idle between them while the host launches them one by one";
  // The signature: kernels this short, launch calls this large a share of the step, and the
  // inter-kernel gaps this large a share of the step's idle time.
  static constexpr int64_t kMaxMedianKernelNs = 20'000;
  static constexpr double kMinLaunchApiShare = 0.05;
  static constexpr double kMinShareOfIdle = 0.5;
  // A host-activity gap up to this long is per-op dispatch overhead (Python and the launch call
  // between two kernels); a longer one is host work of its own (optimizer on CPU, GC, compile).
  static constexpr int64_t kMaxDispatchGapNs = 1'000'000;

  explicit LaunchBoundDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
};

}  // namespace stepwatch
