#include "stepwatch/core/interval.h"

#include <algorithm>

namespace stepwatch {

IntervalSet IntervalSet::from_unsorted(std::vector<Interval> intervals) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  // Events usually arrive sorted by start already: checking is O(n), sorting is not.
  if (!std::is_sorted(intervals.begin(), intervals.end(), by_start)) {
    std::sort(intervals.begin(), intervals.end(), by_start);
  }
  // Merged in place: the given storage becomes the set's (no second buffer of the same size;
  // offline these are the whole trace's kernels and launches).
  size_t kept = 0;
  for (const Interval& iv : intervals) {
    if (iv.end <= iv.start) continue;
    if (kept > 0 && iv.start <= intervals[kept - 1].end) {
      intervals[kept - 1].end = std::max(intervals[kept - 1].end, iv.end);
    } else {
      intervals[kept++] = iv;
    }
  }
  intervals.resize(kept);
  IntervalSet set;
  set.parts_ = std::move(intervals);
  set.rebuild_prefix();
  return set;
}

IntervalSet IntervalSet::from_sorted(std::span<const Interval> sorted) {
  IntervalSet set;
  set.parts_.reserve(sorted.size());
  for (const Interval& iv : sorted) {
    if (iv.end <= iv.start) continue;
    if (!set.parts_.empty() && iv.start <= set.parts_.back().end) {
      set.parts_.back().end = std::max(set.parts_.back().end, iv.end);
    } else {
      set.parts_.push_back(iv);
    }
  }
  set.rebuild_prefix();
  return set;
}

void IntervalSet::rebuild_prefix() {
  prefix_.resize(parts_.size() + 1);
  prefix_[0] = 0;
  for (size_t i = 0; i < parts_.size(); ++i) prefix_[i + 1] = prefix_[i] + parts_[i].length();
}

int64_t IntervalSet::total_length() const { return prefix_.empty() ? 0 : prefix_.back(); }

size_t IntervalSet::first_ending_after(int64_t t) const {
  auto it = std::upper_bound(parts_.begin(), parts_.end(), t,
                             [](int64_t v, const Interval& iv) { return v < iv.end; });
  return static_cast<size_t>(it - parts_.begin());
}

IntervalSet IntervalSet::clip(int64_t lo, int64_t hi) const {
  IntervalSet out;
  for (size_t i = first_ending_after(lo); i < parts_.size() && parts_[i].start < hi; ++i) {
    Interval iv{std::max(parts_[i].start, lo), std::min(parts_[i].end, hi)};
    if (iv.end > iv.start) out.parts_.push_back(iv);
  }
  out.rebuild_prefix();
  return out;
}

int64_t IntervalSet::measure_within(int64_t lo, int64_t hi) const {
  if (hi <= lo || parts_.empty()) return 0;
  const size_t first = first_ending_after(lo);
  // Last part starting before hi.
  auto it = std::lower_bound(parts_.begin(), parts_.end(), hi,
                             [](const Interval& iv, int64_t v) { return iv.start < v; });
  const size_t last = static_cast<size_t>(it - parts_.begin());  // exclusive
  if (first >= last) return 0;
  int64_t total = prefix_[last] - prefix_[first];
  // Trim the partial overlaps at both ends.
  if (parts_[first].start < lo) total -= lo - parts_[first].start;
  if (parts_[last - 1].end > hi) total -= parts_[last - 1].end - hi;
  return total;
}

IntervalSet IntervalSet::unite(const IntervalSet& other) const {
  std::vector<Interval> merged;
  merged.reserve(parts_.size() + other.parts_.size());
  std::merge(parts_.begin(), parts_.end(), other.parts_.begin(), other.parts_.end(), std::back_inserter(merged),
             [](const Interval& a, const Interval& b) { return a.start < b.start; });
  return from_sorted(merged);
}

IntervalSet IntervalSet::intersect(const IntervalSet& other) const {
  IntervalSet out;
  size_t i = 0, j = 0;
  while (i < parts_.size() && j < other.parts_.size()) {
    const Interval& a = parts_[i];
    const Interval& b = other.parts_[j];
    const int64_t lo = std::max(a.start, b.start);
    const int64_t hi = std::min(a.end, b.end);
    if (hi > lo) out.parts_.push_back({lo, hi});
    if (a.end < b.end) ++i; else ++j;
  }
  out.rebuild_prefix();
  return out;
}

IntervalSet IntervalSet::subtract(const IntervalSet& other) const {
  IntervalSet out;
  size_t j = 0;
  for (const Interval& a : parts_) {
    int64_t cur = a.start;
    while (j < other.parts_.size() && other.parts_[j].end <= cur) ++j;
    size_t k = j;
    while (k < other.parts_.size() && other.parts_[k].start < a.end) {
      if (other.parts_[k].start > cur) out.parts_.push_back({cur, other.parts_[k].start});
      cur = std::max(cur, other.parts_[k].end);
      if (cur >= a.end) break;
      ++k;
    }
    if (cur < a.end) out.parts_.push_back({cur, a.end});
  }
  out.rebuild_prefix();
  return out;
}

IntervalSet IntervalSet::complement_within(int64_t lo, int64_t hi) const {
  IntervalSet window;
  if (hi > lo) window.parts_.push_back({lo, hi});
  window.rebuild_prefix();
  return window.subtract(*this);
}

}  // namespace stepwatch
