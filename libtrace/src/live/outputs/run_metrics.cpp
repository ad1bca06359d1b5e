#include "live/outputs/run_metrics.h"

#include "core/event_sink.h"

namespace stepwatch::live {

std::string_view to_string(BreakdownCategory category) {
  switch (category) {
    case BreakdownCategory::kCompute: return "compute";
    case BreakdownCategory::kCommExposed: return "comm_exposed";
    case BreakdownCategory::kCopyOnly: return "copy_only";
    case BreakdownCategory::kInput: return "input";
    case BreakdownCategory::kSync: return "sync";
    case BreakdownCategory::kLaunch: return "launch";
    case BreakdownCategory::kHost: return "host";
    case BreakdownCategory::kOther: return "other";
  }
  return "unknown";
}

RunMetrics::RunMetrics(int rank, std::string version) {
  snapshot_.rank = rank;
  snapshot_.version = std::move(version);
}

void RunMetrics::add_step(const StepView& step, StepStatus status, std::span<const Finding> findings) {
  MetricsSnapshot& m = snapshot_;
  const double seconds = double(step.duration_ns()) / 1e9;
  ++m.steps;
  if (status == StepStatus::kJudged) ++m.judged_steps;
  m.step_seconds_sum += seconds;
  for (size_t b = 0; b < kStepSecondsBuckets.size(); ++b) {
    if (seconds <= kStepSecondsBuckets[b]) {
      ++m.step_bucket_counts[b];
      break;
    }
  }
  m.last_step_seconds = seconds;
  // Untraced steps have no GPU data: their breakdown would read as all idle, so it is left out
  // (as steps.jsonl leaves them out).
  if (has_breakdown(status)) {
    m.gpu_duty_cycle = step.duty_cycle();
    auto add = [&](BreakdownCategory c, int64_t ns) { m.breakdown_seconds[static_cast<size_t>(c)] += double(ns) / 1e9; };
    add(BreakdownCategory::kCompute, step.compute_ns);
    add(BreakdownCategory::kCommExposed, step.exposed_comm_ns);
    add(BreakdownCategory::kCopyOnly, step.copy_only_ns);
    add(BreakdownCategory::kInput, step.idle[IdleCause::kInput]);
    add(BreakdownCategory::kSync, step.idle[IdleCause::kSync]);
    add(BreakdownCategory::kLaunch, step.idle[IdleCause::kLaunch]);
    add(BreakdownCategory::kHost, step.idle[IdleCause::kHost]);
    add(BreakdownCategory::kOther, step.idle[IdleCause::kOther]);
  }
  for (const Finding& f : findings) add_finding(f);
}

void RunMetrics::add_run_finding(const Finding& finding) { add_finding(finding); }

void RunMetrics::add_finding(const Finding& finding) {
  DetectorCounters& d = snapshot_.detectors[finding.detector];
  ++d.findings;
  if (finding.cost_ms > 0) d.cost_seconds += finding.cost_ms / 1e3;
}

void RunMetrics::set_individual_scores(std::optional<double> step_time, std::optional<double> collective_wait) {
  snapshot_.individual_step_score = step_time;
  snapshot_.individual_collective_score = collective_wait;
}

void RunMetrics::set_losses(std::span<const uint64_t> losses) {
  for (size_t k = 0; k < losses.size() && k < static_cast<size_t>(LossKind::kCount_); ++k) {
    // Buffer counts apart: their records are already in cupti_dropped (see counts_buffers).
    const auto kind = static_cast<LossKind>(k);
    (counts_buffers(kind) ? snapshot_.dropped_buffers : snapshot_.dropped_records)[std::string(to_string(kind))] =
        losses[k];
  }
}

}  // namespace stepwatch::live
