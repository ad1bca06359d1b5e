// throttle — the GPU runs the same kernels slower: lower clocks (DVFS, power cap, thermal).
// Catalog: "Thermal / power throttling: same kernels (same name, grid, block) get uniformly
// slower over the run; no new gaps. Confirm with nvidia-smi -q -d PERFORMANCE / dmon."
// The trace has kernel names, not grid and block: a kernel is its name, and "the same work" is
// the same name launched about as often (within 25%) as in its baseline.
//
// Baseline: per kernel name, its per-step mean duration over the last 8 steps that were not
// judged throttled (bounded: at most 64 names), the first step of the data excluded; the
// reference is the median of those means with a launch count within 25% of this step's, needing
// >= 3 of them. (The median, not the minimum: per-step means of jittery kernels spread by ~10%,
// and the minimum of 8 sits well below a typical step.)
// Early baseline: each name's first 8 unthrottled steps are also kept for the run; the reference
// is the lower of the two medians. A gradual slowdown (4% per step) moves the recent baseline with
// it and never trips it; against the run's early steps it does.
// Rule: the heavy kernels (compute, >= 5% of the step's compute time) with a reference are
// compared; >= 2 of them, and >= 2/3 of them run >= 1.15x their reference; and the step's GPU idle
// did not grow (idle <= median idle of the baseline steps + max(1 ms, 5% of their median step
// time)): slower kernels with new gaps are not a clock problem. NCCL kernels are never compared
// (their time depends on the peers: straggler).
// Cost: the extra kernel time of the slowed heavy kernels, Σ count x (mean − reference); then the
// common rule. A throttled step does not enter the baseline, so a lasting slowdown keeps firing.
// NVML evidence (live, when libnvidia-ml can be loaded; StepView::gpu_clocks): with SM clock samples
// in the step, the verdict needs the clock to confirm it — the step's median SM clock below 92% of
// the reference (the median clock of the baseline steps, or the device's maximum before there are
// 3 of them), or a power/thermal clock event reason (sw/hw power cap, thermal or hw slowdown)
// sampled in the step. Kernels slower at an unchanged clock are something else (another process on
// the GPU, memory contention): silent. The finding then cites the clock (min/median over the step),
// the reference, the maximum clock, temperature, power and the reasons. Without samples (offline
// data, NVML absent) the kernel rule alone decides, as the catalog's signature.
#include "throttle.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "detector_util.h"
#include "fix_text.h"
#include "stepwatch/core/gpu_samples.h"

namespace stepwatch {
namespace {

bool is_nccl(std::string_view name) {
  return name.find("nccl") != std::string_view::npos || name.find("NCCL") != std::string_view::npos;
}

}  // namespace

ThrottleDetector::ThrottleDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void ThrottleDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.duration_ns() <= 0 || step.kernels == 0) return;
  if (!first_step_seen_) {
    first_step_seen_ = true;
    return;
  }

  int compared = 0;
  int slowed = 0;
  int early_refs = 0;  // slowed kernels judged against their early baseline
  int64_t extra_ns = 0;
  std::vector<double> ratios;
  const KernelStat* worst = nullptr;
  double worst_ratio = 0.0;
  for (const KernelStat& k : step.top_kernels) {
    if (k.count <= 0 || is_nccl(k.name) || double(k.total_ns) < kHeavyShare * double(step.compute_ns)) continue;
    // The reference: the median of the recent baseline, or of the early one when that is lower —
    // the best early baseline catches a drift the moving window follows.
    auto reference_of = [&](const auto& samples, size_t min_samples) -> int64_t {
      std::vector<int64_t> means;
      for (const Sample& s : samples) {
        if (std::fabs(double(s.count - k.count)) <= kMaxCountChange * double(s.count)) means.push_back(s.mean_ns);
      }
      if (means.size() < min_samples) return 0;
      std::nth_element(means.begin(), means.begin() + static_cast<std::ptrdiff_t>(means.size() / 2), means.end());
      return means[means.size() / 2];
    };
    auto it = baseline_.find(k.name);
    auto early = early_.find(k.name);
    const int64_t recent = it == baseline_.end() ? 0 : reference_of(it->second, kMinBaselineSteps);
    const int64_t first = early == early_.end() ? 0 : reference_of(early->second, kBaselineSteps);
    // A tie is the same steps (a run with no more than 8 unthrottled steps): those are the early ones.
    const bool from_early = first > 0 && (recent <= 0 || first <= recent);
    const int64_t reference = from_early ? first : recent;
    if (reference <= 0) continue;
    const int64_t mean = k.total_ns / k.count;
    const double ratio = double(mean) / double(reference);
    ++compared;
    ratios.push_back(ratio);
    if (ratio >= kMinSlowdown) {
      ++slowed;
      early_refs += from_early ? 1 : 0;
      extra_ns += int64_t{k.count} * (mean - reference);
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = &k;
      }
    }
  }
  const double idle_ref = idle_.median();
  const double idle_limit =
      idle_ref + std::max(double(kMinIdleGrowthNs), kIdleGrowthShare * duration_.median());
  const bool idle_grew = double(step.idle.total()) > idle_limit;
  bool throttled = compared >= kMinCompared && double(slowed) >= kMinSlowShare * double(compared) &&
                   !idle_grew && duration_.size() >= kMinBaselineSteps;
  const GpuClockStat& clocks = step.gpu_clocks;
  const double clock_ref =
      clock_mhz_.size() >= kMinBaselineSteps ? clock_mhz_.median() : double(clocks.max_sm_clock_mhz);
  const uint64_t throttle_reasons = clocks.clock_event_reasons & clock_reason::kThrottling;
  const bool clock_dropped = clock_ref > 0 && double(clocks.sm_clock_median_mhz) < kClockDropShare * clock_ref;
  if (throttled && clocks.samples > 0 && clock_ref > 0 && !clock_dropped && throttle_reasons == 0) {
    throttled = false;  // the clock held: the kernels are slower for another reason
  }

  if (!throttled) {
    // Healthy (or slow for another reason): the step joins the baseline.
    for (const KernelStat& k : step.top_kernels) {
      if (k.count <= 0 || is_nccl(k.name)) continue;
      auto it = baseline_.find(k.name);
      if (it == baseline_.end()) {
        if (baseline_.size() >= kMaxNames) continue;
        it = baseline_.emplace(k.name, std::deque<Sample>{}).first;
      }
      it->second.push_back(Sample{k.count, k.total_ns / k.count});
      if (it->second.size() > kBaselineSteps) it->second.pop_front();
      std::vector<Sample>& first = early_[k.name];
      if (first.size() < kBaselineSteps) first.push_back(Sample{k.count, k.total_ns / k.count});
    }
    idle_.push(step.idle.total());
    duration_.push(step.duration_ns());
    if (clocks.samples > 0) clock_mhz_.push(clocks.sm_clock_median_mhz);
    return;
  }

  Finding f;
  if (!judge_cost(kId, step, extra_ns, thresholds_, f)) return;
  std::sort(ratios.begin(), ratios.end());
  const double median_slowdown_pct = 100.0 * (ratios[ratios.size() / 2] - 1.0);
  f.message = std::to_string(slowed) + " of " + std::to_string(compared) + " heavy kernels ran >= 15% longer than " +
              (2 * early_refs > slowed ? "their own early baseline (the run's first unthrottled steps)"
                                       : "their own recent baseline") +
              " at the same launch count (median " +
              format_pct(median_slowdown_pct) + " slower) with no new GPU idle: " + format_ms(extra_ns) +
              " of extra kernel time (" + format_pct(f.cost_pct) + " of " + format_ms(step.duration_ns()) +
              "), the signature of clock throttling (DVFS, power cap, thermal). Fix: " + fix::clocks(step.stack) +
              ", the power/thermal budget (cooling, power limit), spread the load.";
  f.with("extra_kernel_ms", ms3_of(extra_ns))
      .with("slowed_kernels", static_cast<int64_t>(slowed))
      .with("compared_kernels", static_cast<int64_t>(compared))
      .with("median_slowdown_pct", round3(median_slowdown_pct))
      .with("idle_ms", ms3_of(step.idle.total()))
      .with("baseline_idle_ms", round3(idle_ref / 1e6))
      .with("early_baseline_kernels", static_cast<int64_t>(early_refs));
  if (worst != nullptr) {
    f.with("slowest_kernel", worst->name).with("slowest_kernel_ratio", round3(worst_ratio));
  }
  if (clocks.samples > 0) {
    // NVML confirmed it: cite the clock, and the power/thermal state that explains it.
    std::string nvml = " NVML: SM clock " + std::to_string(clocks.sm_clock_median_mhz) + " MHz (min " +
                       std::to_string(clocks.sm_clock_min_mhz) + ", reference " +
                       std::to_string(static_cast<int64_t>(clock_ref)) + " MHz";
    if (clocks.max_sm_clock_mhz > 0) nvml += ", max " + std::to_string(clocks.max_sm_clock_mhz) + " MHz";
    nvml += ")";
    if (clocks.temperature_max_c > 0) nvml += ", " + std::to_string(clocks.temperature_max_c) + " C";
    if (clocks.power_median_mw > 0) nvml += ", " + std::to_string(clocks.power_median_mw / 1000) + " W";
    if (throttle_reasons != 0) nvml += ", clock event reasons: " + clock_reasons_text(throttle_reasons);
    const size_t fix_at = f.message.find(" Fix: ");
    f.message.insert(fix_at == std::string::npos ? f.message.size() : fix_at, nvml + ".");
    f.with("sm_clock_mhz", clocks.sm_clock_median_mhz)
        .with("sm_clock_min_mhz", clocks.sm_clock_min_mhz)
        .with("reference_sm_clock_mhz", static_cast<int64_t>(clock_ref))
        .with("max_clock_mhz", clocks.max_sm_clock_mhz)
        .with("clock_samples", static_cast<int64_t>(clocks.samples));
    if (clocks.temperature_max_c > 0) f.with("temperature_c", clocks.temperature_max_c);
    if (clocks.power_median_mw > 0) f.with("power_w", round3(double(clocks.power_median_mw) / 1000.0));
    f.with("throttle_reasons", clock_reasons_text(clocks.clock_event_reasons));
  }
  sink.emit(std::move(f));
}

}  // namespace stepwatch
