// The detector contract. A detector sees each completed StepView once, in step order, keeps
// bounded state (at most a fixed number of recent steps), and emits findings. One analysis
// thread owns all detectors, so they need no locking.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/data_loss.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/outside_steps.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch {

class FindingSink {
 public:
  virtual ~FindingSink() = default;
  virtual void emit(Finding finding) = 0;
};

// Keeps what it is given, in order (the pipeline collects a step's findings with it; tests too).
class FindingCollector final : public FindingSink {
 public:
  void emit(Finding finding) override { findings.push_back(std::move(finding)); }
  std::vector<Finding> findings;
};

// What a detector sees of the run as a whole when the data ends.
struct RunView {
  int rank = 0;
  uint64_t steps = 0;     // analyzed steps (judged or not)
  int64_t first_step = 0; // the number of the first analyzed step
  int64_t last_step = 0;  // the number of the last analyzed step: run findings carry it
  std::shared_ptr<const LossSnapshot> losses;  // everything lost, final (never null)
  // The time outside the steps (outside_steps.h), handed over by the step pipeline: the data
  // before the first step and after the last (empty when there is none, or no step at all).
  OutsideView before_first;
  OutsideView after_last;
  // One-off initialization inside the first step: when it covered half of the step, the step was
  // measured as warm-up and not judged (first_step_warmup), and its calls are here.
  std::vector<InitCall> first_step_init;
  int64_t first_step_init_idle_ns = 0;
  int64_t first_step_ns = 0;
  bool first_step_warmup = false;
  int64_t data_ns = 0;  // the whole data: before + steps + between + after
  int64_t in_steps_ns = 0;  // the analyzed steps' time
  StepSource source = StepSource::kWholeTrace;  // where the steps came from
  ProgramStack stack;   // what the whole data showed (step_view.h)
};

class Detector {
 public:
  virtual ~Detector() = default;
  virtual std::string_view id() const = 0;
  virtual void on_step(const StepView& step, FindingSink& sink) = 0;
  // End of data: trend / whole-run findings.
  virtual void on_finish(const RunView& /*run*/, FindingSink& /*sink*/) {}
};

// The common per-step rule: faulty when cost >= min_pct of the step and >= min_ms;
// critical when cost >= critical_pct. Fills detector, rank, step, severity and costs.
// Returns false (and leaves `out` untouched) when the step is not faulty.
bool judge_cost(std::string_view detector_id, const StepView& step, int64_t cost_ns,
                const DetectorThresholds& thresholds, Finding& out);

std::string format_ms(int64_t ns);     // "36.9 ms" style, 1 decimal (3 significant for < 1 ms)
std::string format_pct(double pct);    // "40%"

}  // namespace stepwatch
