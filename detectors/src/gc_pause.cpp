// gc_pause — Python garbage collection stalls the launching thread.
// Catalog (minor faults): "GC pauses — irregular ~10–100 ms python-thread stalls; visible as
// launch droughts. gc.disable() + manual collection at step boundary."
// The stall is the largest single gap's **host** part (rule 3: the host launched nothing, waited
// for no data and was in no blocking call). A step is judged when that stall is 10–100 ms and:
//  - confirmed: the Python shim's GC phases (host ranges named "gc") cover at least half of it; or
//  - unconfirmed, while the run has shown no GC phase at all: at least 3 steps came before it and
//    fewer than half of the recent ones (up to 16) had such a stall. A stall on most steps is
//    the loop's own host work, not an irregular pause.
// Once GC phases have been seen, the shim is known to be reporting them: a stall without one is
// not GC and is left to the other detectors.
// Cost: the stall.
#include "gc_pause.h"

#include <algorithm>

#include "detector_util.h"

namespace stepwatch {

GcPauseDetector::GcPauseDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void GcPauseDetector::on_step(const StepView& step, FindingSink& sink) {
  int64_t stall_ns = 0;
  for (const GapRecord& g : step.gaps) {
    if (g.rule == GapRule::kHostActivity) stall_ns = std::max(stall_ns, g.parts[IdleCause::kHost]);
  }
  gc_phases_seen_ |= step.gc_ns > 0;
  const bool in_range = stall_ns >= kMinStallNs && stall_ns <= kMaxStallNs;
  const bool confirmed = in_range && step.gc_ns * 2 >= stall_ns;
  const auto earlier = static_cast<int64_t>(std::count(recent_stalls_.begin(), recent_stalls_.end(), true));
  const auto recent = static_cast<int64_t>(recent_stalls_.size());
  recent_stalls_.push_back(stall_ns >= kMinStallNs);
  if (recent_stalls_.size() > kRecentSteps) recent_stalls_.pop_front();

  if (!in_range) return;
  if (!confirmed) {
    if (gc_phases_seen_) return;
    if (recent < static_cast<int64_t>(kMinHistory) || earlier * 2 >= recent) return;
  }
  Finding f;
  if (!judge_cost(kId, step, stall_ns, thresholds_, f)) return;
  f.message = "host stall of " + format_ms(stall_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) +
              ") with the GPU idle and no launch, data wait or blocking call — a launch drought " +
              (confirmed ? "inside a Python GC phase (gc " + format_ms(step.gc_ns) + " this step)"
                         : "on " + std::to_string(earlier + 1) + " of the last " + std::to_string(recent + 1) +
                               " steps, the signature of a Python GC pause") +
              ". Fix: gc.disable() and gc.collect() at step boundaries (or gc.freeze() after setup).";
  f.with("stall_ms", ms3_of(stall_ns))
      .with("gc_ms", ms3_of(step.gc_ns))
      .with("gc_confirmed", static_cast<int64_t>(confirmed))
      .with("stall_steps", earlier + 1)
      .with("recent_steps", recent + 1);
  f.established = true;
  f.tax_share = TaxShare::kRefinement;
  f.refines = "host_bound";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
