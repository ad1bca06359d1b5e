// epoch_boundary_stall — the DataLoader re-creates its workers at every epoch boundary.
// Catalog (minor faults): "persistent_workers=False — worker respawn gap at every epoch boundary
// (a one-line fix that reads as a mystery periodic stall)."
// An occurrence is a step whose GPU idle attributed to **input** is >= 4x the median of the steps
// before it (the last 64, at least 3) and exceeds it by the common rule (>= 5% of the step and
// >= 1 ms). A loop starved on every step stays input_starvation's; only the spike on top of the
// usual wait is this detector's. A data wait the launch queue hides costs nothing and is not an
// occurrence. Occurrences are reported from the second one on, when they fall on a regular period
// (periodic_stall.h): epochs have a fixed number of steps.
// Cost: input idle − the typical step's input idle.
#include "epoch_boundary_stall.h"

#include "detector_util.h"

namespace stepwatch {

EpochBoundaryStallDetector::EpochBoundaryStallDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void EpochBoundaryStallDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.duration_ns() <= 0) return;
  const int64_t input_ns = step.idle[IdleCause::kInput];
  const bool judged = input_idle_.size() >= kMinHistory;
  const double typical_ns = input_idle_.median();
  input_idle_.push(input_ns);
  if (!judged || double(input_ns) < kMinFactor * typical_ns) return;
  const auto extra_ns = static_cast<int64_t>(double(input_ns) - typical_ns);
  Finding f;
  if (!judge_cost(kId, step, extra_ns, thresholds_, f)) return;

  const detail::PeriodicStall::Verdict v = series_.occurrence(step.step, step.start_ns);
  if (!v.report) return;
  const double tax_pct = v.interval_ns > 0 ? 100.0 * double(extra_ns) / double(v.interval_ns) : 0.0;
  f.message = "every " + std::to_string(v.period_steps) + " steps the input wait spikes: GPU idle " +
              format_ms(input_ns) + " waiting for data (data loading " + format_ms(step.data_wait_ns) +
              " this step) against " + format_ms(static_cast<int64_t>(typical_ns)) +
              " on a typical step — DataLoader workers re-created at each epoch boundary, a " + format_pct(tax_pct) +
              " goodput tax over the " + format_ms(v.interval_ns) +
              " between them. Fix: DataLoader(persistent_workers=True), prefetch_factor; keep worker start-up "
              "(imports, dataset open) cheap.";
  f.with("input_idle_ms", ms3_of(input_ns))
      .with("typical_input_idle_ms", round3(typical_ns / 1e6))
      .with("data_wait_ms", ms3_of(step.data_wait_ns))
      .with("period_steps", v.period_steps)
      .with("interval_ms", ms3_of(v.interval_ns))
      .with("tax_pct", round3(tax_pct))
      .with("occurrences", static_cast<int64_t>(v.occurrences));
  f.established = true;
  f.tax_share = TaxShare::kRefinement;
  f.refines = "input_starvation";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
