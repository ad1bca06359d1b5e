// Who owns a step's short host-activity gaps (private to detectors/). Between two kernels the GPU
// waits for the host's per-op dispatch — Python and the launch call. When the launch-lag evidence
// holds (kernels start right after their launch, launch calls take a real share of the step) that
// wait is launch overhead, launch_bound's; otherwise the host's part of those gaps is CPU work of its
// own, chopped into pieces shorter than a dispatch gap (DDP's unflatten: a stream of small CPU ops
// each launching a tiny copy), and host_bound's. One predicate for both, so the two never count the
// same idle.
#pragma once

#include <cstdint>

#include "stepwatch/core/step_view.h"

namespace stepwatch::detail {

struct DispatchGaps {
  int64_t launch_ns = 0;  // rule 3's launch part of the short gaps
  int64_t host_ns = 0;    // and its host part
  int64_t gaps = 0;
};

// Rule 3 gaps up to StepView::kDispatchGapNs, from where the GPU went idle to where it resumed.
DispatchGaps dispatch_gaps(const StepView& step);

// The short gaps are per-op launch overhead: >= 20 kernels with their launch in the data, >= a
// quarter of them starting within 50 µs of their launch's return (nothing else was queued), and
// launch calls >= 5% of the step. Otherwise their host part is host_bound's.
inline constexpr double kMinPromptShare = 0.25;
inline constexpr int kMinLaunchedKernels = 20;
inline constexpr double kMinLaunchApiShare = 0.05;
bool dispatch_is_launch_overhead(const StepView& step);

// launch_bound's evidence: the above, and the short gaps >= half the step's idle (the step is
// launch-bound, not merely launching between longer stalls).
inline constexpr double kMinShareOfIdle = 0.5;
bool launch_lag_evident(const StepView& step, const DispatchGaps& g);

}  // namespace stepwatch::detail
