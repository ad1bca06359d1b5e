#include "stepwatch/core/run_summary.h"

#include <algorithm>

namespace stepwatch {

std::string_view to_string(StepStatus s) {
  switch (s) {
    case StepStatus::kJudged: return "judged";
    case StepStatus::kWarmup: return "warmup";
    case StepStatus::kUntraced: return "untraced";
    case StepStatus::kIncomplete: return "incomplete";
  }
  return "unknown";
}

void RunSummaryBuilder::add_step(const StepView& v, StepStatus status, std::span<const Finding> findings) {
  ++steps_;
  switch (status) {
    case StepStatus::kJudged: ++judged_; break;
    case StepStatus::kWarmup: ++warmup_; break;
    case StepStatus::kUntraced: ++untraced_; break;
    case StepStatus::kIncomplete: ++incomplete_; break;
  }
  for (const Finding& f : findings) add_run_finding(f);
  if (status == StepStatus::kJudged) {
    // Each idle interval once: only the step's own costs, never more than the step itself.
    double own_ms = 0;
    for (const Finding& f : findings) own_ms += f.tax_share == TaxShare::kOwn ? f.cost_ms : 0.0;
    tax_ms_ += std::min(own_ms, ms_of(v.duration_ns()));
    judged_wall_ns_ += v.duration_ns();
  }
  // Without a GPU breakdown a step would read as all idle: it stays out of the totals.
  if (!has_breakdown(status)) return;
  ++with_breakdown_;
  step_ms_.add(ms_of(v.duration_ns()));
  wall_ns_ += v.duration_ns();
  busy_ns_ += v.busy_ns;
  compute_ns_ += v.compute_ns;
  exposed_ns_ += v.exposed_comm_ns;
  copy_only_ns_ += v.copy_only_ns;
  for (IdleCause c : kIdleCauses) idle_[c] += v.idle[c];
}

void RunSummaryBuilder::add_run_finding(const Finding& f) {
  DetectorTotal& t = findings_[f.detector];
  ++t.steps;
  t.cost_ms += f.cost_ms;
  // A detector that stood on its own on any step (a refinement without its umbrella) is reported
  // as its own, not nested under an umbrella that may never have fired.
  if (t.steps == 1 || f.tax_share == TaxShare::kOwn) t.tax_share = f.tax_share;
  t.refines = t.tax_share == TaxShare::kRefinement ? f.refines : std::string();
}

RunSummary RunSummaryBuilder::build() const {
  RunSummary s;
  s.rank = rank_;
  s.steps = steps_;
  s.judged_steps = judged_;
  s.warmup_steps = warmup_;
  s.untraced_steps = untraced_;
  s.incomplete_steps = incomplete_;
  s.skipped_steps = skipped_;
  const SampleStats st = sample_stats(step_ms_.values());
  s.step_ms = StepTimeStats{st.mean, st.median, st.p90, st.cv};
  s.gpu_busy_pct = wall_ns_ > 0 ? 100.0 * double(busy_ns_) / double(wall_ns_) : 0;
  if (with_breakdown_ > 0) {
    const double n = double(with_breakdown_);
    s.compute_ms = ms_of(compute_ns_) / n;
    s.exposed_comm_ms = ms_of(exposed_ns_) / n;
    s.copy_only_ms = ms_of(copy_only_ns_) / n;
    for (IdleCause c : kIdleCauses) s.idle_ms[static_cast<size_t>(c)] = ms_of(idle_[c]) / n;
  }
  s.comm_comp_overlap_pct = overlap_pct_;
  s.time = time_;
  s.tax_ms = tax_ms_;
  s.tax_pct = judged_wall_ns_ > 0 ? 100.0 * tax_ms_ / ms_of(judged_wall_ns_) : 0.0;
  s.findings = findings_;
  s.data_loss = losses_;
  return s;
}

}  // namespace stepwatch
