// step_variance — step times vary a lot from step to step.
// Catalog (§2 reading order, step 1): "Measure 3–5 steps; note variance. High variance is itself
// a finding (throttling, input jitter, checkpoint stalls)." The statistic is the population
// coefficient of variation of the step time over the last 64 steps (the run summary's `cv`).
//
// The first step of the data never enters the statistic: a capture's first step routinely
// differs from the steady state for reasons that are not a fault of the loop (profiler start-up,
// a warm-up step the schedule did not skip — hta-ns_resolution's step 101 takes 35 ms against
// 72–96 ms for the next four). Live, the warm-up steps are already dropped before detectors run;
// one more step costs nothing.
//
// The message says what the slower-than-median steps are slow with: GPU idle (then a per-step
// detector names the cause), more GPU work (more kernels: the work per step varies), or the same
// kernels running longer (throttling, contention).
//
// Cost: the time the window's slower-than-median steps took beyond the median, Σ (d − p50) over
// them, and its share of the window's wall time — the goodput tax of the variation over the
// window (a trend finding: not one step's tax).
#include "step_variance.h"

#include <algorithm>
#include <cstdio>

#include "detector_util.h"

namespace stepwatch {

StepVarianceDetector::StepVarianceDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void StepVarianceDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.duration_ns() <= 0) return;
  if (!first_step_seen_) {
    first_step_seen_ = true;
    return;
  }
  durations_.push(step.duration_ns());
  busy_.push(step.busy_ns);
  kernels_.push(step.kernels);
  if (durations_.size() < kMinSteps) return;
  const double cv = durations_.cv();
  if (established_) {
    if (cv < kClearCv) established_ = false;
    return;
  }
  if (cv < kMinCv) return;

  const double mean_ns = durations_.mean();
  const double p50_ns = durations_.median();
  const double p90_ns = durations_.quantile(0.9);
  const auto [min_it, max_it] = std::minmax_element(durations_.values().begin(), durations_.values().end());
  const auto steps = static_cast<int64_t>(durations_.size());

  // The slower-than-median steps: how much of their excess time is GPU busy time, and how many
  // kernels they launch against the median step.
  const double busy_p50 = busy_.median();
  const double kernels_p50 = kernels_.median();
  double excess_ns = 0.0;
  double excess_busy_ns = 0.0;
  double slow_kernels = 0.0;
  int slow = 0;
  for (size_t i = 0; i < durations_.size(); ++i) {
    const double d = double(durations_.values()[i]);
    if (d <= p50_ns) continue;
    excess_ns += d - p50_ns;
    excess_busy_ns += double(busy_.values()[i]) - busy_p50;
    slow_kernels += double(kernels_.values()[i]);
    ++slow;
  }
  const auto cost_ns = static_cast<int64_t>(excess_ns);
  const double window_ns = mean_ns * double(steps);
  const double busy_share = excess_ns > 0 ? std::clamp(excess_busy_ns / excess_ns, 0.0, 1.0) : 0.0;
  const double kernel_ratio = slow > 0 && kernels_p50 > 0 ? slow_kernels / double(slow) / kernels_p50 : 1.0;

  std::string diagnosis;
  if (excess_ns <= 0) {
    diagnosis = "no step is slower than the median: faster steps vary (partial or skipped work)";
  } else if (busy_share < 0.5) {
    diagnosis = "the slower steps are slower by GPU idle time (" + format_pct(100.0 * (1.0 - busy_share)) +
                " of their excess)";
  } else if (kernel_ratio >= 1.2) {
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.1fx", kernel_ratio);
    diagnosis = "the slower steps run more GPU work (" + std::string(ratio) +
                " the median step's kernels): the work per step varies (input shapes, dynamic batching)";
  } else {
    diagnosis = "the slower steps run the same kernels for longer (GPU busy " + format_pct(100.0 * busy_share) +
                " of their excess): throttling or another process on the GPU";
  }

  // The cost rule, as for every detector: a CV inflated by a few fast start-up steps costs nothing
  // (the slower-than-median steps are barely slower) and is no finding.
  const double cost_pct = window_ns > 0 ? 100.0 * double(cost_ns) / window_ns : 0.0;
  if (cost_pct < thresholds_.min_pct || ms_of(cost_ns) < thresholds_.min_ms) return;
  established_ = true;
  Finding f;
  f.detector = std::string(kId);
  f.rank = step.rank;
  f.step = step.step;
  f.cost_ms = ms_of(cost_ns);
  f.cost_pct = cost_pct;
  f.severity = f.cost_pct >= thresholds_.critical_pct ? Severity::kCritical : Severity::kWarning;
  char cv_text[16];
  std::snprintf(cv_text, sizeof cv_text, "%.2f", cv);
  f.message = "step time varies: CV " + std::string(cv_text) + " over the last " + std::to_string(steps) +
              " steps (p50 " + format_ms(static_cast<int64_t>(p50_ns)) + ", p90 " +
              format_ms(static_cast<int64_t>(p90_ns)) + ", max " + format_ms(*max_it) + "), " + diagnosis +
              "; they took " + format_ms(cost_ns) + " beyond the median (" + format_pct(f.cost_pct) + " of the " +
              format_ms(static_cast<int64_t>(window_ns)) + " of these steps). Fix: find what makes the slow steps slow — input jitter (input_starvation, epoch_boundary_stall), "
              "checkpoints (checkpoint_stall), recompilation (recompilation), GC pauses (gc_pause), throttling "
              "(throttle) — see the per-step findings on them; bucket or pad input shapes if the work varies.";
  f.with("cv", round3(cv))
      .with("steps", steps)
      .with("mean_ms", round3(mean_ns / 1e6))
      .with("p50_ms", round3(p50_ns / 1e6))
      .with("p90_ms", round3(p90_ns / 1e6))
      .with("min_ms", ms3_of(*min_it))
      .with("max_ms", ms3_of(*max_it))
      .with("slow_busy_share_pct", round3(100.0 * busy_share))
      .with("slow_kernel_ratio", round3(kernel_ratio));
  f.established = true;
  f.tax_share = TaxShare::kOverlapping;
  sink.emit(std::move(f));
}

}  // namespace stepwatch
