// Sample statistics and time units: the one home for median, percentile, mean and CV (the run
// summary, the exit summary, the rank merge, clock alignment and the detectors use these), and for
// the ns → ms conversions every output uses.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace stepwatch {

// The median of integer (ns) values: the mean of the two middle values for an even count, 0 for
// none. Takes its argument by value (it reorders it).
inline int64_t median_of(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const int64_t hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const int64_t lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lo + (hi - lo) / 2;
}

// The q-quantile (0..1) of a sample, linear interpolation between closest ranks (numpy's
// default); 0 for none. Takes its argument by value (it sorts it).
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * double(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

// Mean, median, p90 and the population coefficient of variation (stddev / mean; 0 when the mean
// is 0) of a sample.
struct SampleStats {
  double mean = 0, median = 0, p90 = 0, cv = 0;
};
inline SampleStats sample_stats(const std::vector<double>& v) {
  SampleStats s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  var /= double(v.size());
  s.cv = s.mean > 0 ? std::sqrt(var) / s.mean : 0;
  s.median = percentile(v, 0.5);
  s.p90 = percentile(v, 0.9);
  return s;
}

// A bounded sample of a long series: every value until `cap`, then every other one of those kept
// and every 2nd new value, and so on (a fixed stride stays representative of the whole run for
// percentiles, in bounded memory: a live job runs millions of steps).
class BoundedSample {
 public:
  explicit BoundedSample(size_t cap = 1u << 16) : cap_(std::max<size_t>(cap, 2)) {}
  void add(double v) {
    if (seen_++ % stride_ != 0) return;
    values_.push_back(v);
    if (values_.size() < cap_) return;
    std::vector<double> half;
    half.reserve(cap_ / 2 + 1);
    for (size_t i = 0; i < values_.size(); i += 2) half.push_back(values_[i]);
    values_.swap(half);
    stride_ *= 2;
  }
  const std::vector<double>& values() const { return values_; }

 private:
  size_t cap_;
  size_t stride_ = 1, seen_ = 0;
  std::vector<double> values_;
};

// ns → ms, and ms rounded to µs precision: the precision of every ms figure in outputs.
inline double ms_of(int64_t ns) { return double(ns) / 1e6; }
inline double round3(double v) { return std::round(v * 1000.0) / 1000.0; }
inline double ms3_of(int64_t ns) { return std::round(double(ns) / 1e3) / 1e3; }

}  // namespace stepwatch
