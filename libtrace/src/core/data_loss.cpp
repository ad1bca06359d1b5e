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
    case LossKind::kLateRecord: return "late_record";
    case LossKind::kClockUncalibrated: return "clock_uncalibrated";
    default: return "unknown";
  }
}

namespace {

uint64_t total_of(const std::map<std::string, uint64_t, std::less<>>& m) {
  uint64_t t = 0;
  for (const auto& [reason, n] : m) t += n;
  return t;
}

std::string text_of(const std::map<std::string, uint64_t, std::less<>>& m) {
  std::string out;
  for (const auto& [reason, n] : m) out += (out.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  return out;
}

}  // namespace

uint64_t LossSnapshot::total_records() const { return total_of(records); }
uint64_t LossSnapshot::total_buffers() const { return total_of(buffers); }
std::string LossSnapshot::records_text() const { return text_of(records); }
std::string LossSnapshot::buffers_text() const { return text_of(buffers); }

void LossSnapshot::add_records(std::string_view reason, uint64_t n) {
  if (n == 0) return;
  auto it = records.find(reason);
  if (it == records.end()) it = records.emplace(std::string(reason), 0).first;
  it->second += n;
}

LossSnapshot snapshot_of(std::span<const uint64_t> counts) {
  LossSnapshot out;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] == 0) continue;
    const auto kind = static_cast<LossKind>(k);
    (counts_buffers(kind) ? out.buffers : out.records)[std::string(to_string(kind))] += counts[k];
  }
  return out;
}

}  // namespace stepwatch
