// Why trace records were lost, live: every kind is counted and reported (the `data_loss` finding,
// the exit summary), never silent. Offline importers count what they leave out by reason
// (Trace::skipped) for the same finding.
#pragma once

#include <cstdint>
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
  kClockUncalibrated,    // GPU records set aside while another client's change of CUPTI's clock was calibrated
  kCount_,
};
std::string_view to_string(LossKind kind);
// Buffer-pool kinds count activity buffers, not records: the records a refused buffer would have
// held reach us as CUPTI's dropped count, so adding the two would count them twice.
inline bool counts_buffers(LossKind kind) {
  return kind == LossKind::kBufferPoolExhausted || kind == LossKind::kBuffersAbandoned;
}

// Loss counts (indexed by LossKind) split into records and buffers, each with its list of kinds
// ("cupti_dropped 12, queue_full 3"): what the data_loss finding and the exit summary say.
struct LossSummary {
  uint64_t records = 0;
  uint64_t buffers = 0;
  std::string record_kinds;
  std::string buffer_kinds;
};
LossSummary summarize_losses(std::span<const uint64_t> counts);

}  // namespace stepwatch
