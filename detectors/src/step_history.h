// StepHistory: the bounded window of recent per-step values (ns) that trend detectors judge a
// step against (private to detectors/). Oldest values fall out first; memory is fixed by the
// capacity, whatever the length of the run.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace stepwatch::detail {

class StepHistory {
 public:
  static constexpr size_t kDefaultCapacity = 64;

  explicit StepHistory(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  void push(int64_t value) {
    values_.push_back(value);
    if (values_.size() > capacity_) values_.pop_front();
  }
  void clear() { values_.clear(); }
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  const std::deque<int64_t>& values() const { return values_; }

  // Linear interpolation between closest ranks (numpy's default, as the run summary's p50/p90).
  double quantile(double q) const {
    if (values_.empty()) return 0.0;
    std::vector<int64_t> sorted(values_.begin(), values_.end());
    std::sort(sorted.begin(), sorted.end());
    const double pos = q * double(sorted.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    return double(sorted[lo]) + double(sorted[hi] - sorted[lo]) * (pos - double(lo));
  }
  double median() const { return quantile(0.5); }

  double mean() const {
    if (values_.empty()) return 0.0;
    double sum = 0.0;
    for (int64_t v : values_) sum += double(v);
    return sum / double(values_.size());
  }
  // Population coefficient of variation (the run summary's `cv`).
  double cv() const {
    const double m = mean();
    if (m <= 0.0) return 0.0;
    double var = 0.0;
    for (int64_t v : values_) var += (double(v) - m) * (double(v) - m);
    return std::sqrt(var / double(values_.size())) / m;
  }

 private:
  size_t capacity_;
  std::deque<int64_t> values_;
};

}  // namespace stepwatch::detail
