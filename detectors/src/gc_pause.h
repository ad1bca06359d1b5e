#pragma once

#include <deque>

#include "stepwatch/core/detector.h"

namespace stepwatch {

class GcPauseDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "gc_pause";
  static constexpr std::string_view kDescription =
      "Irregular 10-100 ms host stalls with the GPU idle (launch droughts): Python garbage collection";
  static constexpr int64_t kMinStallNs = 10'000'000;   // a single host-attributed gap of >= 10 ms ...
  static constexpr int64_t kMaxStallNs = 100'000'000;  // ... and <= 100 ms
  static constexpr size_t kMinHistory = 3;             // unconfirmed: steps before this one needed
  static constexpr size_t kRecentSteps = 16;           // the "surrounding steps" looked at
  explicit GcPauseDetector(const AnalysisConfig& config);
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;

 private:
  DetectorThresholds thresholds_;
  std::deque<bool> recent_stalls_;  // per recent step: had a host stall >= kMinStallNs
  bool gc_phases_seen_ = false;     // the Python shim reports GC phases in this run
};

}  // namespace stepwatch
