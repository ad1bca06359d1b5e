// launch_bound — the host cannot issue kernels as fast as the GPU runs them.
// Catalog: "Launch-bound / host-bound: thousands of <20 µs kernels with inter-kernel gaps;
// cudaLaunchKernel dominates api_sum; python thread pegged."
// Cost: the idle of the short host-activity gaps (rule 3, up to 1 ms from where the GPU went
// idle to where it resumed): their launch part and their host part. Between two tiny kernels
// the GPU waits for Python's per-op overhead as much as for the launch call itself (rule 3 calls
// the former "host"), and fusion or CUDA graphs remove both. A longer gap is host work of its
// own (optimizer on the CPU, GC, compilation) or one slow launch (lazy module loading), not
// per-kernel overhead, and is left to other detectors.
// Judged only when the median kernel is < 20 µs, launch calls take >= 5% of the step, and the
// cost is >= half of the step's idle time; then the common rule.
#include "launch_bound.h"

#include <cstdio>

#include "detector_util.h"

namespace stepwatch {

LaunchBoundDetector::LaunchBoundDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void LaunchBoundDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.kernels == 0 || step.median_kernel_ns >= kMaxMedianKernelNs) return;
  if (double(step.launch_api_ns) < kMinLaunchApiShare * double(step.duration_ns())) return;

  int64_t launch_idle_ns = 0;
  int64_t dispatch_host_ns = 0;
  int64_t dispatch_gaps = 0;
  for (const GapRecord& g : step.gaps) {
    if (g.rule != GapRule::kHostActivity || g.end_ns - g.start_ns > kMaxDispatchGapNs) continue;
    launch_idle_ns += g.parts[IdleCause::kLaunch];
    dispatch_host_ns += g.parts[IdleCause::kHost];
    ++dispatch_gaps;
  }
  const int64_t cost_ns = launch_idle_ns + dispatch_host_ns;
  if (double(cost_ns) < kMinShareOfIdle * double(step.idle.total())) return;
  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  const double median_us = double(step.median_kernel_ns) / 1e3;
  char median_text[32];
  std::snprintf(median_text, sizeof median_text, "%.1f µs", median_us);
  const double api_pct = 100.0 * double(step.launch_api_ns) / double(step.duration_ns());
  f.message = "GPU idle " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") between " + std::to_string(step.kernels) +
              " short kernels (median " + median_text + ") while the host issued them one by one (" +
              std::to_string(step.launches) + " launch calls, " + format_ms(step.launch_api_ns) + " = " +
              format_pct(api_pct) + " of the step in the launch API): launch-bound. Fix: fuse kernels "
              "(torch.compile), capture the step in CUDA graphs, larger batch per kernel.";
  f.with("kernels", static_cast<int64_t>(step.kernels))
      .with("median_kernel_us", round3(median_us))
      .with("launch_calls", static_cast<int64_t>(step.launches))
      .with("launch_api_ms", ms3_of(step.launch_api_ns))
      .with("launch_idle_ms", ms3_of(launch_idle_ns))
      .with("dispatch_host_idle_ms", ms3_of(dispatch_host_ns))
      .with("dispatch_gaps", dispatch_gaps)
      .with("gpu_busy_pct", round3(100.0 * step.duty_cycle()));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
