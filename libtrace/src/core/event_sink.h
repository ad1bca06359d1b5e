// The seam between the live front ends (CUPTI adapter, NVTX injection, C API) and the pipeline.
//
// Front ends convert what they see into `Event`s and hand them to an EventSink from whatever
// thread they run on (application threads, CUPTI's buffer thread, our flush thread). The sink
// never blocks and never throws: when its bounded queues are full it drops the event and counts
// it as data loss. The live session implements it; tests implement it with a recorder. It sits in
// core, below both the adapters that write into it and the session that drives them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stepwatch/core/data_loss.h"
#include "stepwatch/core/event.h"

namespace stepwatch {

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
  // GPU records of work launched in [start_ns, end_ns) may never arrive (the tracer stopped
  // waiting for them): steps overlapping the interval are judged incomplete — timed and counted,
  // never judged from missing records (that would read as GPU idle).
  virtual void mark_incomplete(int64_t start_ns, int64_t end_ns) noexcept = 0;
  // A one-time status line for the job log ("another CUPTI client holds the subscription: …").
  virtual void status(std::string_view line) noexcept = 0;
};

// The clock every live event uses: CUPTI's activity timestamps are CLOCK_REALTIME nanoseconds,
// so NVTX and C API marks use the same clock.
int64_t now_ns() noexcept;

}  // namespace stepwatch
