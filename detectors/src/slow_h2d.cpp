// slow_h2d — host-to-device copies far slower than the link allows.
// Catalog (minor faults): "PCIe path surprises — H2D at ~6 GB/s instead of ~24 GB/s: wrong NUMA
// node, missing ACS/p2p, or unpinned staging. Check cuda_gpu_mem_time_sum throughput."
// Judged copies: HtoD copies of >= 1 MB starting in the step whose host side is not pageable
// memory. Pageable copies are staged by the driver and slow by nature; they are pageable_memcpy's
// (unpinned staging) and are neither judged nor part of the baseline. The baseline is the best
// rate of the judged copies seen so far in the run, this step's included (one number of state).
// A copy is slow below 1/3 of that, or below 3 GB/s whatever the run has shown.
// Cost: per slow copy, its time beyond the reference rate (max(best, 3 GB/s)), but no more than
// the part of the copy with no kernel running: a slow copy hidden under compute costs nothing.
#include "slow_h2d.h"

#include <algorithm>

#include "copy_evidence.h"
#include "detector_util.h"
#include "fix_text.h"

namespace stepwatch {
namespace {

bool judged(const CopyRecord& c) {
  return c.kind == CopyKind::kHtoD && c.bytes >= SlowH2dDetector::kMinBytes && c.duration_ns > 0 &&
         c.src != MemoryKind::kPageable;
}

}  // namespace

SlowH2dDetector::SlowH2dDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void SlowH2dDetector::on_step(const StepView& step, FindingSink& sink) {
  for (const CopyRecord& c : step.copies) {
    if (judged(c)) best_gb_per_s_ = std::max(best_gb_per_s_, c.gb_per_s());
  }
  const double reference = std::max(best_gb_per_s_, kMinExpectedGbPerS);

  int64_t cost_ns = 0;
  int64_t slow_copies = 0;
  uint64_t slow_bytes = 0;
  int64_t slow_ns = 0;
  for (const CopyRecord& c : step.copies) {
    if (!judged(c)) continue;
    const double rate = c.gb_per_s();
    if (rate * kSlowRatio >= best_gb_per_s_ && rate >= kMinExpectedGbPerS) continue;
    const auto at_reference_ns = static_cast<int64_t>(double(c.bytes) / reference);
    cost_ns += std::clamp<int64_t>(c.duration_ns - at_reference_ns, 0, c.exposed_ns);
    ++slow_copies;
    slow_bytes += c.bytes;
    slow_ns += c.duration_ns;
  }
  Finding f;
  if (slow_copies == 0 || !judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  const double slow_gb_per_s = slow_ns > 0 ? double(slow_bytes) / double(slow_ns) : 0.0;
  f.message = std::to_string(slow_copies) + " HtoD cop" + (slow_copies == 1 ? "y" : "ies") + " of " +
              detail::format_bytes(slow_bytes) + " ran at " + detail::format_gb_per_s(slow_gb_per_s) + ", below " +
              (best_gb_per_s_ >= kSlowRatio * kMinExpectedGbPerS
                   ? "1/3 of the " + detail::format_gb_per_s(best_gb_per_s_) + " this run has reached"
                   : "the " + detail::format_gb_per_s(kMinExpectedGbPerS) + " any PCIe link sustains") +
              ": " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " + format_ms(step.duration_ns()) +
              ") lost on the PCIe path. Fix: pinned host memory; " + fix::pcie(step.stack) + ".";
  f.with("extra_ms", ms3_of(cost_ns))
      .with("copies", slow_copies)
      .with("bytes", static_cast<int64_t>(slow_bytes))
      .with("gb_per_s", round3(slow_gb_per_s))
      .with("best_gb_per_s", round3(best_gb_per_s_))
      .with("copy_ms", ms3_of(slow_ns));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
