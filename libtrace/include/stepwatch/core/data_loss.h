// Why trace records were lost: every loss is counted and reported (the `data_loss` finding, the
// run summary, the exit summary), never silent. Live, the front ends count by LossKind; offline,
// the importers count what they leave out by reason (Trace::skipped). Both become a LossSnapshot.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace stepwatch {

// Why records were lost; each kind is counted and reported (the `data_loss` finding, the exit
// summary) — never silent.
enum class LossKind : uint8_t {
  kCuptiDropped,         // cuptiActivityGetNumDroppedRecords
  kBufferPoolExhausted,  // bufferRequested found the pool at its cap: CUPTI drops the records
  kZeroTimestamp,        // start == end == 0: timing lost (device buffer too small)
  kIncompleteRecord,     // CUPTI_ERROR_INVALID_KIND while iterating a buffer
  kQueueFull,            // our per-thread queue was full
  kNameTableFull,        // the interned-name cap was reached
  kUnpairedRange,        // an NVTX pop/end without its push/start
  kRetentionCap,         // events evicted unjudged because the retained window hit the memory cap
  kBuffersAbandoned,     // activity buffers still inside CUPTI at shutdown (final flush hung/skipped)
  kLateRecord,           // a record that arrived after the step it belongs to was judged
  kClockUncalibrated,    // GPU records set aside while another client's change of CUPTI's clock was calibrated
  kCount_,
};
std::string_view to_string(LossKind kind);
// Buffer-pool kinds count activity buffers, not records: the records a refused buffer would have
// held reach us as CUPTI's dropped count, so adding the two would count them twice.
inline bool counts_buffers(LossKind kind) {
  return kind == LossKind::kBufferPoolExhausted || kind == LossKind::kBuffersAbandoned;
}

// Records (and activity buffers) lost so far, by reason ("cupti_dropped", "negative_duration", ...).
// Buffers are counted apart: the number of records a lost buffer held is unknown.
struct LossSnapshot {
  std::map<std::string, uint64_t, std::less<>> records;
  std::map<std::string, uint64_t, std::less<>> buffers;

  uint64_t total_records() const;
  uint64_t total_buffers() const;
  bool empty() const { return records.empty() && buffers.empty(); }
  // "cupti_dropped 12, queue_full 3" (empty when none).
  std::string records_text() const;
  std::string buffers_text() const;
  void add_records(std::string_view reason, uint64_t n);
  bool operator==(const LossSnapshot&) const = default;
};
// The live counters (indexed by LossKind) as a snapshot; zero counts are left out.
LossSnapshot snapshot_of(std::span<const uint64_t> counts);

}  // namespace stepwatch
