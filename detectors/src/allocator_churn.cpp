// allocator_churn — the caching allocator falls through to the driver mid-step.
// Catalog: "Allocator churn / fragmentation: cudaMalloc/cudaFree mid-step in api_sum (caching
// allocator should make these rare); occasional 100 ms+ malloc stalls."
// Cost: the part of the host time inside cudaMalloc/cudaFree-class calls (runtime, driver, HIP;
// calls starting in the step) during which the GPU was idle. A call that returns while queued
// work keeps the GPU busy costs nothing; cudaFree synchronizes the device, so its wait for queued
// work is busy time and its own work after the drain is idle time. The GPU idle a cudaFree leaves
// behind until new work arrives is hidden_sync's (cudaFree is a blocking call).
// Threshold: the common rule, or any single call >= 100 ms (with some GPU idle) whatever its share.
// Whole-trace pseudo-steps are not judged: they include start-up, where the first cudaFree or
// cudaMalloc creates the CUDA context (0.3–0.8 s in the corpus) and the allocator warms up.
#include "allocator_churn.h"

#include "copy_evidence.h"
#include "detector_util.h"
#include "fix_text.h"

namespace stepwatch {

AllocatorChurnDetector::AllocatorChurnDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void AllocatorChurnDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.source == StepSource::kWholeTrace) return;
  const AllocationStat& a = step.allocations;
  if (a.calls == 0) return;
  const int64_t cost_ns = a.gpu_idle_ns;
  const bool stall = a.max_call_ns >= kStallNs;
  DetectorThresholds rule = thresholds_;
  if (stall) rule.min_pct = rule.min_ms = 0.0;
  Finding f;
  if (!judge_cost(kId, step, cost_ns, rule, f)) return;

  std::string driver;
  if (a.driver_events > 0) {
    driver = "; " + std::to_string(a.driver_events) + " device allocation events" +
             (a.bytes > 0 ? ", " + detail::format_bytes(a.bytes) + " allocated" : std::string());
  }
  f.message = "GPU idle " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") while the host was in " + std::to_string(a.calls) +
              " " + fix::api(step.stack) + "Malloc/" + fix::api(step.stack) + "Free-class calls mid-step (" +
              format_ms(a.host_ns) + " in all, slowest " +
              a.slowest_call + " " + format_ms(a.max_call_ns) + (stall ? ": an allocation stall" : "") + driver +
              "): the caching allocator is missing. Fix: " + fix::allocator(step.stack) + ".";
  f.with("alloc_idle_ms", ms3_of(cost_ns))
      .with("calls", static_cast<int64_t>(a.calls))
      .with("host_ms", ms3_of(a.host_ns))
      .with("slowest_call", a.slowest_call)
      .with("slowest_call_ms", ms3_of(a.max_call_ns))
      .with("driver_events", static_cast<int64_t>(a.driver_events))
      .with("bytes", static_cast<int64_t>(a.bytes));
  f.tax_share = TaxShare::kRefinement;
  f.refines = "hidden_sync";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
