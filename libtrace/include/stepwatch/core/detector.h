// The detector contract. A detector sees each completed StepView once, in step order, keeps
// bounded state (at most a fixed number of recent steps), and emits findings. One analysis
// thread owns all detectors, so they need no locking.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch {

class FindingSink {
 public:
  virtual ~FindingSink() = default;
  virtual void emit(Finding finding) = 0;
};

class Detector {
 public:
  virtual ~Detector() = default;
  virtual std::string_view id() const = 0;
  virtual void on_step(const StepView& step, FindingSink& sink) = 0;
  // End of data: trend / whole-run findings.
  virtual void on_finish(FindingSink& /*sink*/) {}
};

// The common per-step rule: faulty when cost >= min_pct of the step and >= min_ms;
// critical when cost >= critical_pct. Fills detector, rank, step, severity and costs.
// Returns false (and leaves `out` untouched) when the step is not faulty.
bool judge_cost(std::string_view detector_id, const StepView& step, int64_t cost_ns,
                const DetectorThresholds& thresholds, Finding& out);

std::string format_ms(int64_t ns);     // "36.9 ms" style, 1 decimal (3 significant for < 1 ms)
std::string format_pct(double pct);    // "40%"

}  // namespace stepwatch
