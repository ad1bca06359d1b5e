// The seam between the live front ends (CUPTI adapter, NVTX injection, C API) and the pipeline.
//
// Front ends convert what they see into `Event`s and hand them to an EventSink from whatever
// thread they run on (application threads, CUPTI's buffer thread, our flush thread). The sink
// never blocks and never throws: when its bounded queues are full it drops the event and counts
// it as data loss. The live session implements it; tests implement it with a recorder.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "stepwatch/core/event.h"

namespace stepwatch::live {

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

class EventSink {
 public:
  virtual ~EventSink() = default;
  // Any thread; never blocks; drops and counts (kQueueFull) when full.
  virtual void submit(const Event& event) noexcept = 0;
  // Any thread. Returns the overflow id (and counts kNameTableFull) past the cap.
  virtual NameId intern(std::string_view name) noexcept = 0;
  virtual void report_loss(LossKind kind, uint64_t count) noexcept = 0;
  // The activity front end has delivered every record that completed before `timestamp_ns`
  // (called after each periodic flush). Steps ending before it can be judged.
  virtual void advance_watermark(int64_t timestamp_ns) noexcept = 0;
  // A one-time status line for the job log ("another CUPTI client holds the subscription: …").
  virtual void status(std::string_view line) noexcept = 0;
};

// The clock every live event uses: CUPTI's activity timestamps are CLOCK_REALTIME nanoseconds,
// so NVTX and C API marks use the same clock.
int64_t now_ns() noexcept;

}  // namespace stepwatch::live
