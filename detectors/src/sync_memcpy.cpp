// sync_memcpy — a synchronous memcpy API call: the host waits for the copy, whatever the memory.
// Catalog: "Blocking H2D copy: cudaMemcpy (sync variant) on API row stalls launches; Memcpy row
// at step start not overlapped" (nsys expert rule cuda_memcpy_sync). Refines hidden_sync, which
// still reports the GPU idle when the call drained the queue.
// Cost: host time inside the calls from the start of their copy on the GPU to the return, with
// no compute kernel running (BlockingCallStat::transfer_no_compute_ns): the copy's own cost. The
// wait for work queued before the copy is not counted here: it is a drain, and what it costs
// (GPU idle) is hidden_sync's.
#include "sync_memcpy.h"

#include "copy_evidence.h"
#include "detector_util.h"
#include "fix_text.h"

namespace stepwatch {

SyncMemcpyDetector::SyncMemcpyDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void SyncMemcpyDetector::on_step(const StepView& step, FindingSink& sink) {
  const detail::BlockingCopySummary s = detail::summarize_blocking_copies(
      step, [](const BlockingCallStat& c) { return c.api_class == ApiClass::kMemcpySync; });
  Finding f;
  if (!judge_cost(kId, step, s.cost_ns, thresholds_, f)) return;

  const std::string direction = detail::join(s.directions, "/");
  std::string what = std::to_string(s.calls) + "x " + detail::join(s.names, ", ") + " (synchronous " + direction;
  if (s.bytes > 0) what += ", " + detail::format_bytes(s.bytes);
  if (s.copy_gpu_ns > 0) what += " at " + detail::format_gb_per_s(s.gb_per_s());
  what += ", " + detail::join(s.host_memories, "/") + " host memory)";
  f.message = "host blocked " + format_ms(s.cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") in " + what +
              " with no compute kernel running: a blocking copy stalls launches. Fix: " + fix::async_copies(step.stack) + ".";
  f.with("copy_blocked_ms", ms3_of(s.cost_ns))
      .with("calls", static_cast<int64_t>(s.calls))
      .with("bytes", static_cast<int64_t>(s.bytes))
      .with("direction", direction)
      .with("gb_per_s", round3(s.gb_per_s()))
      .with("copy_ms", ms3_of(s.copy_gpu_ns))
      .with("host_ms", ms3_of(s.host_ns))
      .with("host_memory", detail::join(s.host_memories, "/"))
      .with("api", s.names);
  f.tax_share = TaxShare::kRefinement;
  f.refines = "hidden_sync";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
