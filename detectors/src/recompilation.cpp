// recompilation — a recompilation storm (torch.compile / XLA).
// Catalog: "Sawtooth: some steps 10–100× longer, CPU busy in compiler frames, GPU idle."
// A step is judged against the median of the steps before it (the last 64, at least 3): it is a
// recompilation step when it takes >= 10x that median and the GPU idle attributed to **host**
// (rule 3: no data wait, no launch call, no blocking call — the host was busy elsewhere) is at
// least half of the extra time. A long step whose idle is input, sync or copy time is another
// fault (epoch_boundary_stall, checkpoint_stall, hidden_sync); one whose host time is covered by
// the Python shim's GC phases is a GC pause (gc_pause).
// Cost: step time − median. Part of a very long stall can be hidden from the GPU by work queued
// before it (a deep launch queue), which is why only half of the extra time has to be host idle.
#include "recompilation.h"

#include <algorithm>
#include <cstdio>

#include "detector_util.h"

namespace stepwatch {

RecompilationDetector::RecompilationDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void RecompilationDetector::on_step(const StepView& step, FindingSink& sink) {
  const int64_t dur = step.duration_ns();
  if (dur <= 0) return;
  const bool judged = durations_.size() >= kMinHistory;
  const double median_ns = durations_.median();
  durations_.push(dur);
  if (!judged || median_ns <= 0 || double(dur) < kMinFactor * median_ns) return;

  const auto extra_ns = static_cast<int64_t>(double(dur) - median_ns);
  const int64_t host_idle_ns = step.idle[IdleCause::kHost];
  if (double(host_idle_ns) < kMinHostShare * double(extra_ns)) return;
  if (step.gc_ns * 2 >= host_idle_ns) return;  // the shim's GC phases explain the host time
  Finding f;
  if (!judge_cost(kId, step, extra_ns, thresholds_, f)) return;

  int64_t largest_host_gap_ns = 0;
  for (const GapRecord& g : step.gaps) largest_host_gap_ns = std::max(largest_host_gap_ns, g.parts[IdleCause::kHost]);
  const double ratio = double(dur) / median_ns;
  char ratio_text[16];
  std::snprintf(ratio_text, sizeof ratio_text, "%.0fx", ratio);
  f.message = "step took " + format_ms(dur) + ", " + ratio_text + " the median " +
              format_ms(static_cast<int64_t>(median_ns)) + ", with the GPU idle " + format_ms(host_idle_ns) +
              " while the host was busy (no data wait, no blocking call, no launches): the sawtooth of a "
              "recompilation (torch.compile/XLA). Fix: pad or bucket input shapes, mark dynamic dims "
              "(torch._dynamo.mark_dynamic), check the recompile log (TORCH_LOGS=recompiles).";
  f.with("step_ms", ms3_of(dur))
      .with("median_ms", round3(median_ns / 1e6))
      .with("ratio", round3(ratio))
      .with("host_idle_ms", ms3_of(host_idle_ns))
      .with("largest_host_gap_ms", ms3_of(largest_host_gap_ns))
      .with("gpu_busy_pct", round3(100.0 * step.duty_cycle()));
  f.established = true;
  f.tax_share = TaxShare::kRefinement;
  f.refines = "host_bound";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
