// straggler — one rank's view of a late peer: this rank waits inside the collective.
// Catalog: "Straggler rank: NCCL kernels on the fast ranks are much longer than the bytes
// need; they wait inside the collective for the slow rank."
// Bytes would give the expected time, but Kineto's NCCL kernels carry none (live, NCCL's NVTX ranges
// give them: live/nccl_join.h), so the rule is the robust single-rank signature: per collective type,
// the step's NCCL busy time (|N_type ∩ W|) against the best (minimum) of the last 8 steps without
// a straggler with the same number of collective kernels and, where both sizes are known, the same
// message bytes (within 10%: a bigger message is not a late peer) (>= 2 of them). Fired when the time is
// >= 2x that best while the rest of the step is unchanged (compute time within 15% and kernel
// count within 10% of the median of those steps: a bigger step, not a late peer, otherwise).
// Cost: the extra collective time the step could not hide, min(busy − best, exposed − the best
// steps' exposed time) of the flagged types; then the common rule. A straggler step does not
// enter the history.
// Limits: a peer that is late on every step is this rank's normal (no baseline to beat), and
// naming the late rank needs the other ranks' traces (multi-rank merge, issue 6).
#include "straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "copy_evidence.h"
#include "detector_util.h"

namespace stepwatch {

StragglerDetector::StragglerDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void StragglerDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.duration_ns() <= 0) return;
  const bool unchanged =
      compute_.size() >= kMinHistory &&
      std::fabs(double(step.compute_ns) - compute_.median()) <= kMaxComputeChange * compute_.median() &&
      std::fabs(double(step.kernels) - kernels_.median()) <= kMaxKernelChange * kernels_.median();

  int64_t cost_ns = 0;
  std::vector<std::string> types;
  std::string what;
  double worst_ratio = 0.0;
  int64_t worst_busy = 0, worst_best = 0;
  uint64_t worst_bytes = 0;
  if (unchanged) {
    for (const CollectiveStat& c : step.collectives) {
      const auto t = static_cast<size_t>(c.type);
      if (t >= kTypes || c.kernels <= 0) continue;
      int64_t best = std::numeric_limits<int64_t>::max();
      int64_t best_exposed = 0;
      size_t same = 0;
      for (const Sample& s : history_[t]) {
        if (s.kernels != c.kernels) continue;
        const bool sizes_known = s.bytes > 0 && c.bytes > 0;
        if (sizes_known && std::fabs(double(s.bytes) - double(c.bytes)) > 0.10 * double(s.bytes)) continue;
        ++same;
        if (s.busy_ns < best) {
          best = s.busy_ns;
          best_exposed = s.exposed_ns;
        }
      }
      if (same < kMinHistory || best <= 0 || double(c.busy_ns) < kMinRatio * double(best)) continue;
      const int64_t extra = std::max<int64_t>(0, std::min(c.busy_ns - best, c.exposed_ns - best_exposed));
      cost_ns += extra;
      types.emplace_back(to_string(c.type));
      what += (what.empty() ? "" : ", ") + std::string(to_string(c.type)) +
              (c.bytes > 0 ? " of " + detail::format_bytes(c.bytes) : std::string()) + " " + format_ms(c.busy_ns) +
              " (best " + format_ms(best) + ")";
      const double ratio = double(c.busy_ns) / double(best);
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst_busy = c.busy_ns;
        worst_best = best;
        worst_bytes = c.bytes;
      }
    }
  }

  if (types.empty()) {
    for (const CollectiveStat& c : step.collectives) {
      const auto t = static_cast<size_t>(c.type);
      if (t >= kTypes || c.kernels <= 0) continue;
      history_[t].push_back(Sample{c.kernels, c.busy_ns, c.exposed_ns, c.bytes});
      if (history_[t].size() > kHistorySteps) history_[t].pop_front();
    }
    compute_.push(step.compute_ns);
    kernels_.push(step.kernels);
    return;
  }

  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;
  char ratio_text[16];
  std::snprintf(ratio_text, sizeof ratio_text, "%.1fx", worst_ratio);
  f.message = "NCCL " + what + " ran " + ratio_text +
              " its best recent time with the same kernels while the rest of the step is unchanged: this rank "
              "waited inside the collective for a late peer (straggler), " +
              format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " + format_ms(step.duration_ns()) +
              ") of it exposed. Naming the late rank needs the other ranks' traces (stepwatch analyze over every rank's trace: late_rank). "
              "Fix: find the slow rank (compare per-rank step times), then its cause — input pipeline, host "
              "contention, throttling, a slow link (NCCL_DEBUG=INFO, nvidia-smi topo -m).";
  f.with("extra_exposed_ms", ms3_of(cost_ns))
      .with("collectives", types)
      .with("collective_ms", ms3_of(worst_busy))
      .with("best_ms", ms3_of(worst_best))
      .with("ratio", round3(worst_ratio))
      .with("compute_ms", ms3_of(step.compute_ns));
  if (worst_bytes > 0) f.with("bytes", static_cast<int64_t>(worst_bytes));  // the slowest collective's messages
  f.tax_share = TaxShare::kRefinement;
  f.refines = "exposed_collective";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
