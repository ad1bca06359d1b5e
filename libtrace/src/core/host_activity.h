// What a host thread was doing, moment by moment: the reference's "what is running instead?" for
// GPU idle that no data wait, blocking call or launch explains (ARCHITECTURE.md rule 3's host part).
//
// Host ranges (profiler ops and annotations, NVTX ranges) and CUDA calls of one thread nest; at
// each moment the innermost one is what the thread was doing (self time, as a profiler's
// "self CPU" column): `aten::copy_` inside `Optimizer.step#SGD.step` inside `ProfilerStep#3` is
// copy time, not optimizer time. The index flattens each thread's ranges once into consecutive
// segments labelled with their innermost range, so a gap's host part is measured in O(log n) per
// interval. Time covered by no range is labelled kNoName (plain Python, or waiting on something
// the profiler did not trace). Ranges that overlap without nesting are clipped to their parent.
// A thread's segments are kept as boundaries (a start and its label; each segment ends where the
// next begins, the last boundary is a kNoName one), 16 bytes a segment.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/core/interval.h"

namespace stepwatch {

class HostActivityIndex {
 public:
  // Collect, then build once. `reserve`: about how many will be added (all threads together).
  void reserve(size_t n) { pending_.reserve(n); }
  void add(uint32_t thread, int64_t start_ns, int64_t end_ns, NameId name);
  void build();

  // For every interval of `set` (on `thread`'s timeline), adds to `out[name]` the time `name` was
  // the thread's innermost activity; uncovered time goes to out[kNoName].
  void measure(uint32_t thread, const IntervalSet& set, std::unordered_map<NameId, int64_t>& out) const;

 private:
  struct Segment {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    NameId name = kNoName;
    uint32_t thread = 0;
  };
  // Where the innermost activity changes: from start_ns to the next boundary it is `name`.
  struct Boundary {
    int64_t start_ns = 0;
    NameId name = kNoName;
  };
  // `ranges`: one thread's, sorted by start, outer first at equal starts.
  static std::vector<Boundary> flatten(std::span<const Segment> ranges);
  template <typename Order>
  void sort_by_thread(Order order);

  // Every thread's ranges in one vector (sized once), sorted by thread at build: per-thread
  // vectors grown by doubling cost more in copies and page faults than the index itself.
  std::vector<Segment> pending_;
  std::unordered_map<uint32_t, std::vector<Boundary>> segments_;  // by thread, in time order
};

}  // namespace stepwatch
