// step_variance — step times vary a lot from step to step.
// Catalog (§2 reading order, step 1): "Measure 3–5 steps; note variance. High variance is itself
// a finding (throttling, input jitter, checkpoint stalls)." The statistic is the population
// coefficient of variation of the step time over the last 64 steps (the run summary's `cv`).
//
// The first step of the data never enters the statistic: a capture's first step routinely
// differs from the steady state for reasons that are not a fault of the loop (profiler start-up,
// a warm-up step the schedule did not skip — hta-ns_resolution's step 101 takes 35 ms against
// 72–96 ms for the next four). Live, the warm-up steps are already dropped before detectors run;
// one more step costs nothing. Nor do the run's start-up steps (robust statistics): a leading ramp
// of at least two steps each faster (or each slower) than every step after it and > 20% off their
// median — a capture of 4.8, 9.1, 13 ms start-up steps before steady 45 ms ones has a CV over
// 0.2 that says nothing about the loop. The ramp is found again at every step (the later steps
// tell where the level is) until the window no longer holds the run's start.
//
// The message says what the slower-than-median steps are slow with: GPU idle (then a per-step
// detector names the cause), more GPU work (more kernels: the work per step varies), or the same
// kernels running longer (throttling, contention).
//
// Cost: the time the window's slower-than-median steps took beyond the median, Σ (d − p50) over
// them, and its share of the window's wall time — the goodput tax of the variation over the
// window (a trend finding: not one step's tax).
#include "step_variance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <vector>

#include "detector_util.h"

namespace stepwatch {
namespace {

double median_of(std::vector<int64_t> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? double(v[n / 2]) : 0.5 * (double(v[n / 2 - 1]) + double(v[n / 2]));
}

constexpr size_t kMinRampSteps = 2;

// The length of the start-up ramp at the front of `d` (see the file comment).
size_t startup_ramp(const std::deque<int64_t>& d, double share) {
  size_t j = 0;
  int side = 0;
  for (; j + 1 < d.size(); ++j) {
    const std::vector<int64_t> rest(d.begin() + static_cast<std::ptrdiff_t>(j + 1), d.end());
    const double level = median_of(rest);
    const auto [lo, hi] = std::minmax_element(rest.begin(), rest.end());
    const int64_t v = d[j];
    // Faster (slower) than every later step, and by more than `share` of their median.
    const bool faster = v < *lo && double(v) < (1.0 - share) * level;
    const bool slower = v > *hi && double(v) > (1.0 + share) * level;
    const int s = faster ? -1 : slower ? 1 : 0;
    if (s == 0 || (side != 0 && s != side)) break;
    side = s;
  }
  // One off step is no ramp: it may be the jitter itself (the data's first step is left out already).
  return j >= kMinRampSteps ? j : 0;
}

// The window without its first `skip` values.
detail::StepHistory without_first(const detail::StepHistory& h, size_t skip) {
  detail::StepHistory out;
  for (size_t i = skip; i < h.size(); ++i) out.push(h.values()[i]);
  return out;
}

}  // namespace

StepVarianceDetector::StepVarianceDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void StepVarianceDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.duration_ns() <= 0) return;
  if (!first_step_seen_) {
    first_step_seen_ = true;
    return;
  }
  durations_.push(step.duration_ns());
  busy_.push(step.busy_ns);
  kernels_.push(step.kernels);
  ++pushed_;
  const size_t ramp =
      pushed_ <= detail::StepHistory::kDefaultCapacity ? startup_ramp(durations_.values(), kRampShare) : 0;
  const detail::StepHistory durations = without_first(durations_, ramp);
  const detail::StepHistory busy = without_first(busy_, ramp);
  const detail::StepHistory kernels = without_first(kernels_, ramp);
  if (durations.size() < kMinSteps) return;
  const double cv = durations.cv();
  if (established_) {
    if (cv < kClearCv) established_ = false;
    return;
  }
  if (cv < kMinCv) return;

  const double mean_ns = durations.mean();
  const double p50_ns = durations.median();
  const double p90_ns = durations.quantile(0.9);
  const auto [min_it, max_it] = std::minmax_element(durations.values().begin(), durations.values().end());
  const auto steps = static_cast<int64_t>(durations.size());

  // The slower-than-median steps: how much of their excess time is GPU busy time, and how many
  // kernels they launch against the median step.
  const double busy_p50 = busy.median();
  const double kernels_p50 = kernels.median();
  double excess_ns = 0.0;
  double excess_busy_ns = 0.0;
  double slow_kernels = 0.0;
  int slow = 0;
  for (size_t i = 0; i < durations.size(); ++i) {
    const double d = double(durations.values()[i]);
    if (d <= p50_ns) continue;
    excess_ns += d - p50_ns;
    excess_busy_ns += double(busy.values()[i]) - busy_p50;
    slow_kernels += double(kernels.values()[i]);
    ++slow;
  }
  const auto cost_ns = static_cast<int64_t>(excess_ns);
  const double window_ns = mean_ns * double(steps);
  const double busy_share = excess_ns > 0 ? std::clamp(excess_busy_ns / excess_ns, 0.0, 1.0) : 0.0;
  const double kernel_ratio = slow > 0 && kernels_p50 > 0 ? slow_kernels / double(slow) / kernels_p50 : 1.0;

  std::string diagnosis;
  if (excess_ns <= 0) {
    diagnosis = "no step is slower than the median: faster steps vary (partial or skipped work)";
  } else if (busy_share < 0.5) {
    diagnosis = "the slower steps are slower by GPU idle time (" + format_pct(100.0 * (1.0 - busy_share)) +
                " of their excess)";
  } else if (kernel_ratio >= 1.2) {
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.1fx", kernel_ratio);
    diagnosis = "the slower steps run more GPU work (" + std::string(ratio) +
                " the median step's kernels): the work per step varies (input shapes, dynamic batching)";
  } else {
    diagnosis = "the slower steps run the same kernels for longer (GPU busy " + format_pct(100.0 * busy_share) +
                " of their excess): throttling or another process on the GPU";
  }

  // The cost rule, as for every detector: a CV inflated by a few fast start-up steps costs nothing
  // (the slower-than-median steps are barely slower) and is no finding.
  const double cost_pct = window_ns > 0 ? 100.0 * double(cost_ns) / window_ns : 0.0;
  if (cost_pct < thresholds_.min_pct || ms_of(cost_ns) < thresholds_.min_ms) return;
  established_ = true;
  Finding f;
  f.detector = std::string(kId);
  f.rank = step.rank;
  f.step = step.step;
  f.cost_ms = ms_of(cost_ns);
  f.cost_pct = cost_pct;
  f.severity = f.cost_pct >= thresholds_.critical_pct ? Severity::kCritical : Severity::kWarning;
  char cv_text[16];
  std::snprintf(cv_text, sizeof cv_text, "%.2f", cv);
  f.message = "step time varies: CV " + std::string(cv_text) + " over the last " + std::to_string(steps) +
              " steps (p50 " + format_ms(static_cast<int64_t>(p50_ns)) + ", p90 " +
              format_ms(static_cast<int64_t>(p90_ns)) + ", max " + format_ms(*max_it) + "), " + diagnosis +
              "; they took " + format_ms(cost_ns) + " beyond the median (" + format_pct(f.cost_pct) + " of the " +
              format_ms(static_cast<int64_t>(window_ns)) + " of these steps). Fix: find what makes the slow steps slow — input jitter (input_starvation, epoch_boundary_stall), "
              "checkpoints (checkpoint_stall), recompilation (recompilation), GC pauses (gc_pause), throttling "
              "(throttle) — see the per-step findings on them; bucket or pad input shapes if the work varies.";
  f.with("cv", round3(cv))
      .with("steps", steps)
      .with("mean_ms", round3(mean_ns / 1e6))
      .with("p50_ms", round3(p50_ns / 1e6))
      .with("p90_ms", round3(p90_ns / 1e6))
      .with("min_ms", ms3_of(*min_it))
      .with("max_ms", ms3_of(*max_it))
      .with("slow_busy_share_pct", round3(100.0 * busy_share))
      .with("slow_kernel_ratio", round3(kernel_ratio));
  f.established = true;
  f.tax_share = TaxShare::kOverlapping;
  sink.emit(std::move(f));
}

}  // namespace stepwatch
