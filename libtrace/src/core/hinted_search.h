// A binary search that starts from the previous answer. Private to libtrace/src/core.
//
// Step inference looks up, for every GPU record in launch order, the records of its stream and the
// calls of its thread that started before it: both lists are in start order and the lookups come
// nearly in that order too, so the previous answer is almost always a step or two away.
#pragma once

#include <cstddef>

namespace stepwatch {

// The first index in [0, n) whose element is not below the value sought (below(k): element k is;
// elements below come first), or n; `hint`, the previous answer, becomes this one. From the hint,
// up to 8 steps forward are tried, then a binary search over what is left on the answer's side.
template <typename Below>
size_t lower_bound_from(size_t n, size_t& hint, Below below) {
  size_t lo = 0, hi = n;  // the answer lies in [lo, hi]
  if (hint > 0 && hint <= n && !below(hint - 1)) {
    hi = hint - 1;
  } else if (hint <= n) {
    lo = hint;  // everything before the hint is below
    for (int k = 0; k < 8 && lo < n; ++k, ++lo) {
      if (!below(lo)) return hint = lo;
    }
  }
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (below(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return hint = lo;
}

}  // namespace stepwatch
