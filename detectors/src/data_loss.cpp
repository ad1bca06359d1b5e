// data_loss — records lost before the analysis, by reason. The fix follows the reasons: live
// losses (CUPTI drops, full buffers, queues or tables) → more buffers/memory or more frequent
// flushes; records that arrived after their step was judged → a longer flush period; unpaired
// NVTX ranges → pair them; records the importer could not use → the file itself.
#include "data_loss.h"

#include <algorithm>

#include "detector_util.h"

namespace stepwatch {
namespace {

bool is_live_kind(std::string_view reason) {
  for (size_t k = 0; k < static_cast<size_t>(LossKind::kCount_); ++k) {
    if (to_string(static_cast<LossKind>(k)) == reason) return true;
  }
  return false;
}

std::string fix_for(const LossSnapshot& s) {
  auto only = [&](std::string_view reason) {
    return s.buffers.empty() && s.records.size() == 1 && s.records.begin()->first == reason;
  };
  if (only(to_string(LossKind::kUnpairedRange))) {
    return "Fix: pair every NVTX push/start and stepwatch_phase_push with its pop/end.";
  }
  if (only(to_string(LossKind::kLateRecord))) {
    return "Fix: records arrived after their step was judged — raise STEPWATCH_FLUSH_MS.";
  }
  const bool live = !s.buffers.empty() || std::any_of(s.records.begin(), s.records.end(),
                                                      [](const auto& kv) { return is_live_kind(kv.first); });
  if (!live) {
    return "Fix: the trace holds records stepwatch cannot use (reasons above); the analysis covers the rest. "
           "Re-export the trace, or report the writer if it is a current PyTorch profiler or Nsight Systems.";
  }
  return "Fix: raise STEPWATCH_CUPTI_BUFFER_KB / STEPWATCH_CUPTI_MAX_BUFFERS / STEPWATCH_MEMORY_MB, or flush more "
         "often (STEPWATCH_FLUSH_MS).";
}

}  // namespace

void DataLossDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.losses && *step.losses != reported_) report(step.rank, step.step, *step.losses, sink);
}

void DataLossDetector::on_finish(const RunView& run, FindingSink& sink) {
  if (run.losses && *run.losses != reported_) report(run.rank, run.last_step, *run.losses, sink);
}

void DataLossDetector::report(int rank, int64_t step, const LossSnapshot& now, FindingSink& sink) {
  const uint64_t records = now.total_records(), buffers = now.total_buffers();
  const uint64_t new_records = records - std::min(records, reported_.total_records());
  const bool first = reported_.empty();
  std::string what;
  if (new_records > 0 || buffers == reported_.total_buffers()) {
    what = std::to_string(new_records) + (first ? " trace records lost (" : " more trace records lost (") +
           (first ? "" : std::to_string(records) + " in all: ") + now.records_text() + ")";
  }
  if (buffers != reported_.total_buffers()) {
    what += (what.empty() ? "" : "; ") + std::string("activity buffers lost: ") + now.buffers_text() +
            " (the number of records in them is unknown)";
  }
  Finding f;
  f.detector = std::string(kId);
  f.rank = rank;
  f.step = step;
  f.severity = Severity::kWarning;
  f.established = true;
  f.message = what + ": findings on nearby steps may miss activity. " + fix_for(now);
  f.with("lost", static_cast<int64_t>(new_records))
      .with("lost_total", static_cast<int64_t>(records))
      .with("buffers_total", static_cast<int64_t>(buffers));
  for (const auto& [reason, n] : now.records) f.with(reason, static_cast<int64_t>(n));
  for (const auto& [reason, n] : now.buffers) f.with(reason, static_cast<int64_t>(n));
  reported_ = now;
  f.tax_share = TaxShare::kOverlapping;
  sink.emit(std::move(f));
}

}  // namespace stepwatch
