#include "stepwatch/core/data_loss.h"

namespace stepwatch {

std::string_view to_string(LossKind kind) {
  switch (kind) {
    case LossKind::kCuptiDropped: return "cupti_dropped";
    case LossKind::kBufferPoolExhausted: return "buffer_pool_exhausted";
    case LossKind::kZeroTimestamp: return "zero_timestamp";
    case LossKind::kIncompleteRecord: return "incomplete_record";
    case LossKind::kQueueFull: return "queue_full";
    case LossKind::kNameTableFull: return "name_table_full";
    case LossKind::kUnpairedRange: return "unpaired_range";
    case LossKind::kRetentionCap: return "retention_cap";
    case LossKind::kBuffersAbandoned: return "buffers_abandoned";
    case LossKind::kClockUncalibrated: return "clock_uncalibrated";
    default: return "unknown";
  }
}

LossSummary summarize_losses(std::span<const uint64_t> counts) {
  LossSummary out;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] == 0) continue;
    const auto kind = static_cast<LossKind>(k);
    const bool buffers = counts_buffers(kind);
    (buffers ? out.buffers : out.records) += counts[k];
    std::string& list = buffers ? out.buffer_kinds : out.record_kinds;
    list += (list.empty() ? "" : ", ") + std::string(to_string(kind)) + " " + std::to_string(counts[k]);
  }
  return out;
}

}  // namespace stepwatch
