// CorrelationIndex: the events of one kind found by their correlation id (a GPU record's launching
// call, an async copy's record), as a flat vector of event indices sorted by (correlation, start):
// 4 bytes an entry, the correlation read from the event itself. A flat index is several times
// cheaper to build than a hash map, and the live path builds one per judged batch of steps.
//
// Older nsys exports write two runtime rows per call with one correlation id: ordered by
// (correlation, start), the first entry of a correlation is the outer call that stands for it.
//
// CUDA and ROCm number correlations from 1 up in a process, so a trace's ids are usually dense
// (param-linear: 14.5K calls over 94K ids). Where they span at most 8 times their count, build()
// turns the index into a table by id (4 bytes an id): a lookup is one load instead of a binary
// search whose every step reads another event.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "stepwatch/core/event.h"

namespace stepwatch {

class CorrelationIndex {
 public:
  void reserve(size_t n) { index_.reserve(n); }
  // Adds events[i]; events without a correlation id (0) are never found and not held.
  void add(std::span<const Event> events, uint32_t i) {
    if (events[i].correlation != 0) index_.push_back(i);
  }
  // After the last add: the table by id, or the index sorted (a no-op check when the events came
  // in correlation order).
  void build(std::span<const Event> events) {
    if (index_.empty()) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i : index_) {
      lo = std::min(lo, events[i].correlation);
      hi = std::max(hi, events[i].correlation);
    }
    if (hi - lo < 8 * uint64_t{index_.size()} + 4096) {
      base_ = lo;
      table_.assign(hi - lo + 1, 0);
      for (uint32_t i : index_) {
        uint32_t& slot = table_[events[i].correlation - lo];
        // The earliest start stands for the id; of equal starts, the first added (as the sort's
        // order keeps them when the events came in order).
        if (slot == 0 || events[i].start_ns < events[slot - 1].start_ns) slot = i + 1;
      }
      std::vector<uint32_t>().swap(index_);
      return;
    }
    auto by_correlation = [&](uint32_t a, uint32_t b) {
      const Event& x = events[a];
      const Event& y = events[b];
      if (x.correlation != y.correlation) return x.correlation < y.correlation;
      return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : a < b;  // equal starts: first added first
    };
    if (!std::is_sorted(index_.begin(), index_.end(), by_correlation)) {
      std::sort(index_.begin(), index_.end(), by_correlation);
    }
  }
  // The first event (by start) with this correlation, or nullptr; `events` is the span added from.
  const Event* find(std::span<const Event> events, uint64_t correlation) const {
    if (correlation == 0) return nullptr;
    if (!table_.empty()) {
      if (correlation < base_ || correlation - base_ >= table_.size()) return nullptr;
      const uint32_t slot = table_[correlation - base_];
      return slot == 0 ? nullptr : &events[slot - 1];
    }
    auto it = std::lower_bound(index_.begin(), index_.end(), correlation,
                               [&](uint32_t i, uint64_t c) { return events[i].correlation < c; });
    return it != index_.end() && events[*it].correlation == correlation ? &events[*it] : nullptr;
  }

 private:
  std::vector<uint32_t> index_;  // until build(), and after it where the ids are sparse
  std::vector<uint32_t> table_;  // dense ids: event index + 1 by (id - base_), 0 for none
  uint64_t base_ = 0;
};

}  // namespace stepwatch
