// step_variance — step times vary a lot from step to step.
// Catalog (§2 reading order, step 1): "Measure 3–5 steps; note variance. High variance is itself
// a finding (throttling, input jitter, checkpoint stalls)." The statistic is the population
// coefficient of variation of the step time over the last 64 steps (the run summary's `cv`).
//
// The first step of the data never enters the statistic: a capture's first step routinely
// differs from the steady state for reasons that are not a fault of the loop (profiler start-up,
// a warm-up step the schedule did not skip — hta-ns_resolution's step 101 takes 35 ms against
// 95 ms for the next four). Live, the warm-up steps are already dropped before detectors run;
// one more step costs nothing.
//
// Cost: mean − p50 over the window, the time an average step loses to the slower-than-typical
// steps (0 when only fast outliers vary); a trend finding, not a per-step tax.
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
  if (durations_.size() < kMinSteps) return;
  const double cv = durations_.cv();
  if (established_) {
    if (cv < kClearCv) established_ = false;
    return;
  }
  if (cv < kMinCv) return;
  established_ = true;

  const double mean_ns = durations_.mean();
  const double p50_ns = durations_.median();
  const double p90_ns = durations_.quantile(0.9);
  const auto [min_it, max_it] = std::minmax_element(durations_.values().begin(), durations_.values().end());
  const auto cost_ns = static_cast<int64_t>(std::max(0.0, mean_ns - p50_ns));
  const auto steps = static_cast<int64_t>(durations_.size());

  Finding f;
  f.detector = std::string(kId);
  f.rank = step.rank;
  f.step = step.step;
  f.cost_ms = detail::ns_to_ms(cost_ns);
  f.cost_pct = mean_ns > 0 ? 100.0 * double(cost_ns) / mean_ns : 0.0;
  f.severity = f.cost_pct >= thresholds_.critical_pct ? Severity::kCritical : Severity::kWarning;
  char cv_text[16];
  std::snprintf(cv_text, sizeof cv_text, "%.2f", cv);
  f.message = "step time varies: CV " + std::string(cv_text) + " over the last " + std::to_string(steps) +
              " steps (p50 " + format_ms(static_cast<int64_t>(p50_ns)) + ", p90 " +
              format_ms(static_cast<int64_t>(p90_ns)) + ", max " + format_ms(*max_it) +
              "); the slower steps cost an average step " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) +
              " of the mean " + format_ms(static_cast<int64_t>(mean_ns)) +
              "). Fix: find what makes the slow steps slow — input jitter (input_starvation, "
              "epoch_boundary_stall), checkpoints (checkpoint_stall), recompilation (recompilation), GC pauses "
              "(gc_pause), throttling (throttle): see the per-step findings on the slow steps.";
  f.with("cv", detail::ms3(cv))
      .with("steps", steps)
      .with("mean_ms", detail::ms3(mean_ns / 1e6))
      .with("p50_ms", detail::ms3(p50_ns / 1e6))
      .with("p90_ms", detail::ms3(p90_ns / 1e6))
      .with("min_ms", detail::ms3_ns(*min_it))
      .with("max_ms", detail::ms3_ns(*max_it));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
