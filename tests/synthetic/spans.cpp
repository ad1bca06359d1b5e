#include "synthetic/spans.h"

#include <algorithm>

namespace stepwatch::synthetic {

Spans merge_spans(Spans spans) {
  std::erase_if(spans, [](const auto& s) { return s.second <= s.first; });
  std::sort(spans.begin(), spans.end());
  Spans out;
  for (const auto& s : spans) {
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

Spans clip_spans(const Spans& spans, int64_t lo, int64_t hi) {
  Spans out;
  for (const auto& [s, e] : spans) {
    const int64_t a = std::max(s, lo);
    const int64_t b = std::min(e, hi);
    if (b > a) out.emplace_back(a, b);
  }
  return out;
}

Spans intersect_spans(const Spans& a, const Spans& b) {
  Spans out;
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first);
    const int64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) out.emplace_back(lo, hi);
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

Spans subtract_spans(const Spans& a, const Spans& b) {
  Spans out;
  size_t j = 0;
  for (const auto& [s, e] : a) {
    int64_t cur = s;
    while (j < b.size() && b[j].second <= cur) ++j;
    size_t k = j;
    while (k < b.size() && b[k].first < e) {
      if (b[k].first > cur) out.emplace_back(cur, b[k].first);
      cur = std::max(cur, b[k].second);
      ++k;
    }
    if (cur < e) out.emplace_back(cur, e);
  }
  return out;
}

Spans unite_spans(const Spans& a, const Spans& b) {
  Spans all = a;
  all.insert(all.end(), b.begin(), b.end());
  return merge_spans(std::move(all));
}

Spans gaps_within(const Spans& busy, int64_t lo, int64_t hi) {
  return subtract_spans(Spans{{lo, hi}}, clip_spans(busy, lo, hi));
}

int64_t total_length(const Spans& spans) {
  int64_t sum = 0;
  for (const auto& [s, e] : spans) sum += e - s;
  return sum;
}

}  // namespace stepwatch::synthetic
