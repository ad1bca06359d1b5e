// Between the live pipeline and the run outputs: how late steps are judged, and the live wording
// of the findings whose advice differs live.
//
// Judgement lag = when a step is judged minus when it ended: what the completeness watermark costs
// (cupti/launch_tracker.h: records of a step arrive when CUPTI hands back the buffers holding them).
// The session logs it at exit next to the exit summary, and per flush at debug level together with
// what the tracer delivered, so that a first GPU run tells a watermark problem from a detector one.
//
// `no_step_marks` live: the pipeline's fix text (shared with offline) recommends torch.profiler's
// ProfilerStep ranges, which name steps offline but never reach the live path (ProfilerStep is a
// Kineto RecordFunction, not an NVTX range); live it recommends what works live.
//
// Analysis thread only (like the pipeline it decorates).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stepwatch/core/reporter.h"

namespace stepwatch::live {

// The `no_step_marks` fix text for the live library.
std::string live_no_step_marks_advice();

class JudgementMeter final : public Reporter {
 public:
  struct Counts {
    uint64_t judged = 0, warmup = 0, untraced = 0, incomplete = 0;
    uint64_t total() const { return judged + warmup + untraced + incomplete; }
  };

  // `now_ns` reads the clock of the step windows (tests pass a fake one).
  JudgementMeter(Reporter& next, int64_t (*now_ns)() noexcept);

  void on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) override;
  void on_run_finding(const Finding& finding) override;
  void on_first_fire(const Finding& finding, std::span<const StepCapture* const> recent,
                     const NameTable& names) override;
  void on_events(std::span<const Event> events) override;
  void on_summary(const RunSummary& summary) override;

  const Counts& counts() const { return counts_; }
  // Lag percentiles (ms) over every analyzed step, or -1 when none: q in [0, 1].
  double lag_ms(double q) const;
  // "judgement: 198 of 200 steps judged complete (99.0%), 0 incomplete; lag step end → judged:
  // median 310 ms, p90 420 ms, max 610 ms"; empty before any step.
  std::string summary_line() const;
  // Since the last call: steps analyzed, of which incomplete (the per-flush line).
  Counts take_delta();

 private:
  Reporter& next_;
  int64_t (*now_ns_)() noexcept;
  Counts counts_, reported_;
  std::vector<int64_t> lags_ns_;  // bounded: the most recent kMaxLags
};

}  // namespace stepwatch::live
