// pageable_memcpy — cudaMemcpyAsync with pageable host memory: not async at all.
// Catalog: "Blocking H2D copy" (fix: "Pinned memory + non_blocking=True") and the unpinned-staging
// case of "PCIe path surprises"; nsys expert rule cuda_memcpy_async (pageable). Refines
// hidden_sync, which still reports the GPU idle when the call drained the queue.
// Cost: as sync_memcpy's — host time inside the calls from the start of their copy on the GPU to
// the return, with no compute kernel running. A synchronous cudaMemcpy from pageable memory is
// sync_memcpy's, not this detector's: one record per call.
#include "pageable_memcpy.h"

#include "copy_evidence.h"
#include "detector_util.h"
#include "fix_text.h"

namespace stepwatch {

PageableMemcpyDetector::PageableMemcpyDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void PageableMemcpyDetector::on_step(const StepView& step, FindingSink& sink) {
  const detail::BlockingCopySummary s = detail::summarize_blocking_copies(step, [](const BlockingCallStat& c) {
    return c.api_class == ApiClass::kMemcpyAsync && c.host_memory == MemoryKind::kPageable;
  });
  Finding f;
  if (!judge_cost(kId, step, s.cost_ns, thresholds_, f)) return;

  const std::string direction = detail::join(s.directions, "/");
  std::string what = std::to_string(s.calls) + "x " + detail::join(s.names, ", ") + " (" + direction +
                     " with pageable memory";
  if (s.bytes > 0) what += ", " + detail::format_bytes(s.bytes);
  if (s.copy_gpu_ns > 0) what += " at " + detail::format_gb_per_s(s.gb_per_s());
  what += ")";
  f.message = "host blocked " + format_ms(s.cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") in " + what +
              " with no compute kernel running: an async copy from pageable memory is staged and returns only "
              "when done. Fix: " + fix::pinned_copies(step.stack) + ".";
  f.with("copy_blocked_ms", ms3_of(s.cost_ns))
      .with("calls", static_cast<int64_t>(s.calls))
      .with("bytes", static_cast<int64_t>(s.bytes))
      .with("direction", direction)
      .with("gb_per_s", round3(s.gb_per_s()))
      .with("copy_ms", ms3_of(s.copy_gpu_ns))
      .with("host_ms", ms3_of(s.host_ns))
      .with("api", s.names);
  f.tax_share = TaxShare::kRefinement;
  f.refines = "hidden_sync";
  sink.emit(std::move(f));
}

}  // namespace stepwatch
