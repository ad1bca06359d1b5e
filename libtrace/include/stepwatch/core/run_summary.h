// The run summary: one builder and one schema for `stepwatch analyze --json`'s `summary` record,
// the text and HTML reports, and the live exit summary (summary.json / summary.txt add live-only
// tables on top: kern_sum, api_sum, self overhead).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "stepwatch/core/data_loss.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/stats.h"
#include "stepwatch/core/step_status.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch {

struct StepTimeStats {
  double mean_ms = 0, median_ms = 0, p90_ms = 0, cv = 0;
};

struct DetectorTotal {
  int steps = 0;  // findings (steps affected; run findings count once)
  double cost_ms = 0;
  TaxShare tax_share = TaxShare::kOwn;  // how its cost enters tax_ms
  std::string refines;                  // a refinement's umbrella (kRefinement only): reports nest it there
};

// Where the whole trace's time went (the steps are only part of a capture): before the first
// step, inside the steps (any status), between steps (ranges that leave gaps, windows dropped as no
// step), after the last; the parts add up to trace_ms.
struct TimeAccounting {
  double trace_ms = 0;
  double before_first_step_ms = 0;
  double in_steps_ms = 0;
  double between_steps_ms = 0;
  double after_last_step_ms = 0;
  double gpu_busy_pct = 0;  // over the whole trace (the summary's gpu_busy_pct is over the steps)
  int dropped_windows = 0;  // step windows that held no GPU work and no CUDA call (a trailing mark)
};

struct RunSummary {
  int rank = 0;
  int steps = 0;  // analyzed: judged + warm-up + untraced + incomplete
  int judged_steps = 0, warmup_steps = 0, untraced_steps = 0, incomplete_steps = 0;
  // Steps found but not analyzed at all: the exit path's time bound was reached first.
  int skipped_steps = 0;
  // Over the steps whose GPU breakdown is known (judged and warm-up).
  StepTimeStats step_ms;
  double gpu_busy_pct = 0;
  // Mean per step with a breakdown, ms: compute + exposed comm + copy-only + Σ idle = mean step.
  double compute_ms = 0, exposed_comm_ms = 0, copy_only_ms = 0;
  std::array<double, 5> idle_ms{};  // by IdleCause
  double comm_comp_overlap_pct = std::nan("");  // HTA definition (offline); NaN when unknown / no comm
  std::map<std::string, DetectorTotal> findings;  // detector id -> totals
  // The run's goodput tax with every idle interval counted once: per judged step, the costs of its
  // kOwn findings (refinements and cross-cause views left out, they overlap those), at most the
  // step; summed over the steps. tax_pct is its share of the judged steps' wall time (<= 100%).
  double tax_ms = 0;
  double tax_pct = 0;
  TimeAccounting time;
  LossSnapshot data_loss;                          // everything lost, by reason
};

// Bounded: step durations are sampled (BoundedSample) past 65,536 steps.
class RunSummaryBuilder {
 public:
  explicit RunSummaryBuilder(int rank) : rank_(rank) {}
  void add_step(const StepView& step, StepStatus status, std::span<const Finding> findings);
  void add_run_finding(const Finding& finding);
  void add_skipped(size_t steps) { skipped_ += static_cast<int>(steps); }
  void set_losses(const LossSnapshot& losses) { losses_ = losses; }
  void set_comm_comp_overlap_pct(double pct) { overlap_pct_ = pct; }
  void set_time(const TimeAccounting& t) { time_ = t; }
  int64_t busy_ns() const { return busy_ns_; }  // GPU busy in the steps with a breakdown
  RunSummary build() const;

 private:
  int rank_;
  int steps_ = 0, judged_ = 0, warmup_ = 0, untraced_ = 0, incomplete_ = 0, with_breakdown_ = 0, skipped_ = 0;
  BoundedSample step_ms_;
  int64_t wall_ns_ = 0, busy_ns_ = 0, compute_ns_ = 0, exposed_ns_ = 0, copy_only_ns_ = 0;
  int64_t judged_wall_ns_ = 0;
  double tax_ms_ = 0;
  IdleBreakdown idle_;
  double overlap_pct_ = std::nan("");
  TimeAccounting time_;
  std::map<std::string, DetectorTotal> findings_;
  LossSnapshot losses_;
};

}  // namespace stepwatch
