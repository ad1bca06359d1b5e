// The median of a sample of nanosecond (or other integer) values: the mean of the two middle
// values for an even count, 0 for none. Takes its argument by value (it reorders it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace stepwatch {

inline int64_t median_of(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const int64_t hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const int64_t lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lo + (hi - lo) / 2;
}

}  // namespace stepwatch
