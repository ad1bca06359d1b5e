// Interval algebra on half-open [start, end) nanosecond intervals.
//
// An IntervalSet is sorted and disjoint (a union of busy intervals). Everything the timeline
// analysis measures — duty cycle, exposed comm, copy-only time, idle gaps — is a length of a
// union, intersection or difference of such sets, clipped to a step window.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace stepwatch {

struct Interval {
  int64_t start = 0;
  int64_t end = 0;
  int64_t length() const { return end > start ? end - start : 0; }
  bool operator==(const Interval&) const = default;
};

class IntervalSet {
 public:
  IntervalSet() = default;
  // Sorts and merges; empty and inverted intervals are dropped.
  static IntervalSet from_unsorted(std::vector<Interval> intervals);
  // `sorted` must be sorted by start (may overlap); merges in one pass.
  static IntervalSet from_sorted(std::span<const Interval> sorted);

  std::span<const Interval> intervals() const { return parts_; }
  bool empty() const { return parts_.empty(); }
  size_t size() const { return parts_.size(); }
  int64_t total_length() const;

  // The parts overlapping [lo, hi), clipped to it.
  IntervalSet clip(int64_t lo, int64_t hi) const;
  // |this ∩ [lo, hi)| in O(log n) (prefix sums).
  int64_t measure_within(int64_t lo, int64_t hi) const;
  // Index of the first part whose end > t (the part containing t, or the next one).
  size_t first_ending_after(int64_t t) const;

  IntervalSet unite(const IntervalSet& other) const;
  IntervalSet intersect(const IntervalSet& other) const;
  IntervalSet subtract(const IntervalSet& other) const;
  // Gaps of this set inside [lo, hi).
  IntervalSet complement_within(int64_t lo, int64_t hi) const;

 private:
  void rebuild_prefix();
  std::vector<Interval> parts_;
  std::vector<int64_t> prefix_;  // prefix_[i] = total length of parts_[0..i)
};

}  // namespace stepwatch
