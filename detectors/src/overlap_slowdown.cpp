// overlap_slowdown — compute kernels run longer while NCCL kernels run beside them.
// Catalog (minor faults): "Stream-priority inversion: NCCL and compute contend; compute kernels
// get longer only when overlapped with NCCL." Overlap is only worth it while it is cheaper than
// the communication it hides.
// Per step, for each heavy compute kernel name (>= 2% of the step's compute time) with >= 2
// instances that overlapped an NCCL kernel and >= 2 that did not (StepView.top_kernels), the
// overlapped mean is compared with the non-overlapped mean. Slowed: ratio >= 1.3. Fired when the
// slowed kernels hold >= half of the compared kernels' overlapped time, and the cost passes the
// common rule.
// Cost: the extra time of the slowed kernels' overlapped instances, Σ overlapped_count x
// (overlapped mean − non-overlapped mean). Stream-order effects are not subtracted: the cost is
// GPU time on the compute stream, which is step time when the loop is GPU-bound.
#include "overlap_slowdown.h"

#include <cstdio>
#include <vector>

#include "detector_util.h"

namespace stepwatch {

OverlapSlowdownDetector::OverlapSlowdownDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void OverlapSlowdownDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.comm_ns <= 0 || step.compute_ns <= 0) return;
  int compared = 0;
  int slowed = 0;
  int64_t compared_overlapped_ns = 0;
  int64_t slowed_overlapped_ns = 0;
  int64_t extra_ns = 0;
  int64_t overlapped_instances = 0;
  double worst_ratio = 0.0;
  std::string worst;
  for (const KernelStat& k : step.top_kernels) {
    const int other = k.count - k.overlapped_count;
    if (k.overlapped_count < kMinInstances || other < kMinInstances) continue;
    if (double(k.total_ns) < kHeavyShare * double(step.compute_ns)) continue;
    const double overlapped_mean = double(k.overlapped_total_ns) / k.overlapped_count;
    const double other_mean = double(k.total_ns - k.overlapped_total_ns) / other;
    if (other_mean <= 0) continue;
    ++compared;
    compared_overlapped_ns += k.overlapped_total_ns;
    const double ratio = overlapped_mean / other_mean;
    if (ratio < kMinRatio) continue;
    ++slowed;
    slowed_overlapped_ns += k.overlapped_total_ns;
    overlapped_instances += k.overlapped_count;
    extra_ns += static_cast<int64_t>(double(k.overlapped_count) * (overlapped_mean - other_mean));
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = k.name;
    }
  }
  if (slowed == 0 || double(slowed_overlapped_ns) < kMinSlowShare * double(compared_overlapped_ns)) return;
  Finding f;
  if (!judge_cost(kId, step, extra_ns, thresholds_, f)) return;
  const double pooled_ratio =
      slowed_overlapped_ns > extra_ns ? double(slowed_overlapped_ns) / double(slowed_overlapped_ns - extra_ns) : 0.0;
  char ratio_text[16];
  std::snprintf(ratio_text, sizeof ratio_text, "%.2fx", pooled_ratio);
  f.message = std::to_string(slowed) + " of " + std::to_string(compared) +
              " heavy compute kernels ran " + ratio_text + " as long while an NCCL kernel overlapped them as "
              "without: " + format_ms(extra_ns) + " of extra compute time (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) +
              "): communication takes SMs and memory bandwidth from compute (stream-priority inversion). Fix: give "
              "the NCCL stream the right priority, fewer NCCL channels (NCCL_MAX_NCHANNELS), "
              "CUDA_DEVICE_MAX_CONNECTIONS, schedule the overlap (bucket sizes, prefetch depth) so that comm "
              "runs beside the lighter kernels.";
  f.with("extra_ms", ms3_of(extra_ns))
      .with("slowed_kernels", static_cast<int64_t>(slowed))
      .with("compared_kernels", static_cast<int64_t>(compared))
      .with("overlapped_instances", overlapped_instances)
      .with("overlapped_ratio", round3(pooled_ratio))
      .with("slowest_kernel", worst)
      .with("slowest_kernel_ratio", round3(worst_ratio))
      .with("comm_ms", ms3_of(step.comm_ns));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
