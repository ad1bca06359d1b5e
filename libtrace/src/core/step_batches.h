// StepBatches: the final offline pass judged a batch of steps at a time, each batch over a Timeline
// of only the events its steps' analysis reads.
//
// One Timeline over a whole trace of millions of events holds about as much again as the events
// themselves (its unions, per-thread launch sets, host-activity and correlation indexes); over a
// batch it holds a batch's worth. The events a window's analysis reads are those overlapping
// [lo, hi]:
//   lo  the earliest of: the previous window's start (what the live path keeps, step_pipeline.h),
//       where the GPU last went idle before the batch (the first gap reaches back there; rule 2's
//       blocking call ended within `slack_ns` of it), and the launching call of every GPU record
//       in the batch (the GPU can run far behind the host);
//   hi  the first GPU record at or after the batch's last window end (it ends that window's last
//       gap), the end of every call and GPU record starting in the batch (each is measured whole:
//       an allocation call's GPU-idle part runs past the window), and the copy record of every API
//       call in the batch (whether an async copy blocked reads its host memory); the last batch
//       reaches to the end of the data.
// An event overlaps [lo, hi] when it ends at or after lo and starts at or before hi. Every
// question the analysis asks of a window — unions clipped to it, the innermost host range or frame
// at a moment inside it, a call's launcher or copy — then gets the answer it gets from a Timeline
// over everything (the batch-size parity test, tests/scenario/step_batches_test.cpp).
//
// Needs the events sorted by start and the windows in start order (offline analysis sorts them).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stepwatch/core/correlation_index.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

class StepBatches {
 public:
  // `batch_events`: about how many events (by start inside the windows) one batch holds; a window
  // larger than that is a batch of its own.
  StepBatches(std::span<const Event> events, std::span<const StepWindow> windows, int64_t slack_ns,
              size_t batch_events);

  struct Batch {
    size_t first_window = 0, end_window = 0;  // [first, end) of the windows
  };
  // The next batch, its events copied into `slice` (in start order); false after the last.
  bool next(Batch& batch, std::vector<Event>& slice);

  // Every API call of the data by correlation (kept for the run-level comm/comp overlap).
  const CorrelationIndex& calls() const { return calls_; }

 private:
  size_t first_starting_at(int64_t t) const;   // index of the first event with start >= t
  size_t first_starting_after(int64_t t) const;  // index of the first event with start > t
  void collect_open(int64_t lo, size_t begin);

  std::span<const Event> events_;
  std::span<const StepWindow> windows_;
  int64_t slack_ns_;
  size_t batch_events_;
  CorrelationIndex calls_, copies_;
  size_t next_window_ = 0;
  // Events starting before the scanned prefix's end that may still end after a later batch's lo
  // (whole-run ranges, outer Python frames, long kernels), in index order.
  std::vector<uint32_t> open_;
  size_t scanned_ = 0;
  int64_t open_lo_ = INT64_MIN;
  int64_t gpu_end_before_ = INT64_MIN;  // running max end of the GPU records in the scanned prefix
  size_t gpu_scanned_ = 0;
};

}  // namespace stepwatch
