// checkpoint_stall — a synchronous checkpoint every N steps.
// Catalog: "Every N steps: long D2H memcpy burst + osrt write, compute idle. Periodicity ×
// duration ÷ interval = goodput tax."
// An occurrence is a step that (1) takes longer than the median of the steps before it (the last
// 64, at least 3) by the common rule (>= 5% of the step and >= 1 ms), (2) has a device-to-host
// copy burst that passes the same rule on its own (the GPU time of its DtoH copies: StepView keeps
// the 32 largest copies, which a checkpoint's big tensors dominate), and (3) ran most of that
// burst with compute idle (copy-only time >= half the DtoH time). `.item()`-sized DtoH copies
// never pass (2). Occurrences are reported from the second one on, when they fall on a regular
// period (periodic_stall.h).
// Cost: the stall = step time − median (the copies, the file write after them, the drain).
#include "checkpoint_stall.h"

#include <cstdio>

#include "detector_util.h"

namespace stepwatch {
namespace {

std::string format_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB", double(bytes) / double(1ull << 20));
  }
  return buf;
}

}  // namespace

CheckpointStallDetector::CheckpointStallDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void CheckpointStallDetector::on_step(const StepView& step, FindingSink& sink) {
  const int64_t dur = step.duration_ns();
  if (dur <= 0) return;
  const bool judged = durations_.size() >= kMinHistory;
  const double median_ns = durations_.median();
  durations_.push(dur);
  if (!judged) return;

  int64_t dtoh_ns = 0;
  uint64_t dtoh_bytes = 0;
  int dtoh_copies = 0;
  for (const CopyRecord& c : step.copies) {
    if (c.kind != CopyKind::kDtoH) continue;
    dtoh_ns += c.duration_ns;
    dtoh_bytes += c.bytes;
    ++dtoh_copies;
  }
  Finding burst;
  if (!judge_cost(kId, step, dtoh_ns, thresholds_, burst)) return;
  if (step.copy_only_ns * 2 < dtoh_ns) return;  // the copies overlapped compute: no stall
  const auto extra_ns = static_cast<int64_t>(double(dur) - median_ns);
  Finding f;
  if (!judge_cost(kId, step, extra_ns, thresholds_, f)) return;

  const detail::PeriodicStall::Verdict v = series_.occurrence(step.step, step.start_ns);
  if (!v.report) return;
  const double tax_pct = v.interval_ns > 0 ? 100.0 * double(extra_ns) / double(v.interval_ns) : 0.0;
  const double gb_per_s = dtoh_ns > 0 ? double(dtoh_bytes) / double(dtoh_ns) : 0.0;
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f GB/s", gb_per_s);
  f.message = "every " + std::to_string(v.period_steps) + " steps a checkpoint stall: " + format_ms(dtoh_ns) +
              " of device-to-host copies (" + format_bytes(dtoh_bytes) + " at " + rate +
              ") with compute idle; the step took " + format_ms(extra_ns) + " more than the median " +
              format_ms(static_cast<int64_t>(median_ns)) + ", a " + format_pct(tax_pct) + " goodput tax over the " +
              format_ms(v.interval_ns) +
              " between checkpoints. Fix: asynchronous/sharded checkpointing "
              "(torch.distributed.checkpoint.async_save), checkpoint less often.";
  f.with("stall_ms", ms3_of(extra_ns))
      .with("median_step_ms", round3(median_ns / 1e6))
      .with("period_steps", v.period_steps)
      .with("interval_ms", ms3_of(v.interval_ns))
      .with("tax_pct", round3(tax_pct))
      .with("dtoh_ms", ms3_of(dtoh_ns))
      .with("dtoh_bytes", static_cast<int64_t>(dtoh_bytes))
      .with("dtoh_copies", static_cast<int64_t>(dtoh_copies))
      .with("copy_only_ms", ms3_of(step.copy_only_ns))
      .with("occurrences", static_cast<int64_t>(v.occurrences));
  f.established = true;
  f.tax_share = TaxShare::kRefinement;
  f.refines = "hidden_sync";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
