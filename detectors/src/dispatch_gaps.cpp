#include "dispatch_gaps.h"

namespace stepwatch::detail {

DispatchGaps dispatch_gaps(const StepView& step) {
  DispatchGaps d;
  for (const GapRecord& g : step.gaps) {
    if (g.rule != GapRule::kHostActivity || g.end_ns - g.start_ns > StepView::kDispatchGapNs) continue;
    d.launch_ns += g.parts[IdleCause::kLaunch];
    d.host_ns += g.parts[IdleCause::kHost];
    ++d.gaps;
  }
  return d;
}

bool dispatch_is_launch_overhead(const StepView& step) {
  if (step.launched_kernels < kMinLaunchedKernels || step.duration_ns() <= 0) return false;
  const double prompt_share = double(step.prompt_kernels) / double(step.launched_kernels);
  if (prompt_share < kMinPromptShare) return false;
  return double(step.launch_api_ns) >= kMinLaunchApiShare * double(step.duration_ns());
}

bool launch_lag_evident(const StepView& step, const DispatchGaps& g) {
  return dispatch_is_launch_overhead(step) &&
         double(g.launch_ns + g.host_ns) >= kMinShareOfIdle * double(step.idle.total());
}

}  // namespace stepwatch::detail
