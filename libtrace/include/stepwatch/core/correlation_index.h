// CorrelationIndex: the events of one kind found by their correlation id (a GPU record's launching
// call, an async copy's record), as a flat vector of event indices sorted by (correlation, start):
// 4 bytes an entry, the correlation read from the event itself. A flat index is several times
// cheaper to build than a hash map, and the live path builds one per judged batch of steps.
//
// Older nsys exports write two runtime rows per call with one correlation id: ordered by
// (correlation, start), the first entry of a correlation is the outer call that stands for it.
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
  // After the last add: sorts (a no-op check when the events came in correlation order).
  void build(std::span<const Event> events) {
    auto by_correlation = [&](uint32_t a, uint32_t b) {
      const Event& x = events[a];
      const Event& y = events[b];
      return x.correlation != y.correlation ? x.correlation < y.correlation : x.start_ns < y.start_ns;
    };
    if (!std::is_sorted(index_.begin(), index_.end(), by_correlation)) {
      std::sort(index_.begin(), index_.end(), by_correlation);
    }
  }
  // The first event (by start) with this correlation, or nullptr; `events` is the span added from.
  const Event* find(std::span<const Event> events, uint64_t correlation) const {
    if (correlation == 0) return nullptr;
    auto it = std::lower_bound(index_.begin(), index_.end(), correlation,
                               [&](uint32_t i, uint64_t c) { return events[i].correlation < c; });
    return it != index_.end() && events[*it].correlation == correlation ? &events[*it] : nullptr;
  }
  size_t size() const { return index_.size(); }

 private:
  std::vector<uint32_t> index_;
};

}  // namespace stepwatch
