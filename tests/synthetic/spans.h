// Interval arithmetic for the synthetic model's ground truth. Deliberately separate from the
// core's IntervalSet: the truth must not be computed by the code it checks.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace stepwatch::synthetic {

using Spans = std::vector<std::pair<int64_t, int64_t>>;  // [start, end) pairs

// Sorted, disjoint, non-empty parts.
Spans merge_spans(Spans spans);
// The following take and return merged spans.
Spans clip_spans(const Spans& spans, int64_t lo, int64_t hi);
Spans intersect_spans(const Spans& a, const Spans& b);
Spans subtract_spans(const Spans& a, const Spans& b);
Spans unite_spans(const Spans& a, const Spans& b);
Spans gaps_within(const Spans& busy, int64_t lo, int64_t hi);
int64_t total_length(const Spans& spans);

}  // namespace stepwatch::synthetic
