// input_starvation — the GPU idles while the host waits for the next batch.
// Catalog: "Gap at start of each step; DataLoader workers or osrt read busy during the gap;
// GPU fully idle." Cost: idle attributed to input (rule 3's data-wait part).
#include "input_starvation.h"

#include "detector_util.h"

namespace stepwatch {

InputStarvationDetector::InputStarvationDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void InputStarvationDetector::on_step(const StepView& step, FindingSink& sink) {
  const int64_t cost_ns = step.idle[IdleCause::kInput];
  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  int64_t largest_gap_ns = 0;
  bool at_step_start = false;
  for (const GapRecord& g : step.gaps) {
    if (g.parts[IdleCause::kInput] > largest_gap_ns) {
      largest_gap_ns = g.parts[IdleCause::kInput];
      // "At step start": the gap begins within the first tenth of the step.
      at_step_start = g.start_ns <= step.start_ns + step.duration_ns() / 10;
    }
  }
  f.message = "GPU idle " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") while the host waited for data (data loading " +
              format_ms(step.data_wait_ns) + " this step" + (at_step_start ? ", gap at step start" : "") +
              "). Fix: more/persistent DataLoader workers, prefetch, pin_memory, pre-decoded data; "
              "move transforms off the hot path.";
  f.with("input_idle_ms", ms3_of(cost_ns))
      .with("data_wait_ms", ms3_of(step.data_wait_ns))
      .with("largest_gap_ms", ms3_of(largest_gap_ns))
      .with("gap_at_step_start", static_cast<int64_t>(at_step_start))
      .with("gpu_busy_pct", round3(100.0 * step.duty_cycle()));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
