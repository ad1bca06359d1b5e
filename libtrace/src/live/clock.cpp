#include <ctime>

#include "live/event_sink.h"

namespace stepwatch::live {

int64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

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
    default: return "unknown";
  }
}

}  // namespace stepwatch::live
