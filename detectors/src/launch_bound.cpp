// launch_bound — the host cannot issue kernels as fast as the GPU runs them.
// Catalog: "Launch-bound / host-bound: thousands of <20 µs kernels with inter-kernel gaps;
// cudaLaunchKernel dominates api_sum; python thread pegged."
// Judged on the launch lag, not on kernel length: kernels that start right after their launch call
// returns (StepView::prompt_kernels) had nothing queued before them, so the GPU was waiting for
// the host; a GPU-bound loop of tiny kernels has its launches far ahead (calls blocking on a full
// queue) and is silent. A torch.compile'd model with 20–30 µs kernels and a Python wrapper between
// them is launch-bound as much as an eager loop of 8 µs kernels.
// Cost: the idle of the short host-activity gaps (rule 3, up to StepView::kDispatchGapNs from
// where the GPU went idle to where it resumed): their launch part and their host part. Between two
// kernels the GPU waits for Python's per-op overhead as much as for the launch call itself (rule 3
// calls the former "host"), and fusion or graphs remove both. A longer gap is host work of its own
// (host_bound) or one slow launch (lazy module loading), not per-kernel overhead.
// Judged when >= a quarter of the kernels started promptly, launch calls take >= 5% of the step, and the
// cost is >= half of the step's idle time (detail::launch_lag_evident); then the common rule.
// Without that evidence the short gaps' host part is host_bound's (dispatch_gaps.h).
#include "launch_bound.h"

#include <cstdio>

#include "detector_util.h"
#include "dispatch_gaps.h"
#include "fix_text.h"

namespace stepwatch {
namespace {

// "Python between launches" or "aten::add (2.1 ms), ...": what the host did in the dispatch gaps.
std::string between_launches(const std::vector<HostActivityStat>& activity) {
  std::string text;
  for (const HostActivityStat& a : activity) {
    if (text.size() > 160) break;
    text += (text.empty() ? "" : ", ") + (a.name.empty() ? std::string("no profiler range (Python)") : a.name) +
            " " + format_ms(a.ns);
  }
  return text;
}

}  // namespace

LaunchBoundDetector::LaunchBoundDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void LaunchBoundDetector::on_step(const StepView& step, FindingSink& sink) {
  const detail::DispatchGaps gaps = detail::dispatch_gaps(step);
  if (!detail::launch_lag_evident(step, gaps)) return;
  const double prompt_share = double(step.prompt_kernels) / double(step.launched_kernels);
  const int64_t launch_idle_ns = gaps.launch_ns;
  const int64_t dispatch_host_ns = gaps.host_ns;
  const int64_t dispatch_gaps = gaps.gaps;
  const int64_t cost_ns = launch_idle_ns + dispatch_host_ns;
  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  const double median_us = double(step.median_kernel_ns) / 1e3;
  char median_text[32];
  std::snprintf(median_text, sizeof median_text, "%.1f µs", median_us);
  const double api_pct = 100.0 * double(step.launch_api_ns) / double(step.duration_ns());
  const std::string host_text = between_launches(step.dispatch_activity);
  f.message = "GPU idle " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") in " + std::to_string(dispatch_gaps) + " short gaps between " +
              std::to_string(step.kernels) + " kernels (median " + median_text + "), " +
              format_pct(100.0 * prompt_share) + " of them starting within 50 µs of their launch: the GPU waits "
              "for the host, which issues them one by one (" + std::to_string(step.launches) + " launch calls, " +
              format_ms(step.launch_api_ns) + " = " + format_pct(api_pct) + " of the step in the launch API" +
              (host_text.empty() ? std::string() : "; between launches: " + host_text) +
              "): launch-bound. Fix: " + fix::launch_overhead(step.stack) + ".";
  f.with("kernels", static_cast<int64_t>(step.kernels))
      .with("median_kernel_us", round3(median_us))
      .with("prompt_start_pct", round3(100.0 * prompt_share))
      .with("launch_calls", static_cast<int64_t>(step.launches))
      .with("launch_api_ms", ms3_of(step.launch_api_ns))
      .with("launch_idle_ms", ms3_of(launch_idle_ns))
      .with("dispatch_host_idle_ms", ms3_of(dispatch_host_ns))
      .with("dispatch_gaps", dispatch_gaps)
      .with("gpu_busy_pct", round3(100.0 * step.duty_cycle()));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
