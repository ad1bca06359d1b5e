#include "core/host_activity.h"

#include <algorithm>

namespace stepwatch {

void HostActivityIndex::add(uint32_t thread, int64_t start_ns, int64_t end_ns, NameId name) {
  if (end_ns > start_ns) pending_[thread].push_back({start_ns, end_ns, name});
}

void HostActivityIndex::build() {
  for (auto& [thread, list] : pending_) segments_.emplace(thread, flatten(std::move(list)));
  pending_.clear();
}

// Outer ranges first at equal starts; a stack of the open ranges gives the innermost one between
// consecutive boundaries.
std::vector<HostActivityIndex::Segment> HostActivityIndex::flatten(std::vector<Segment> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const Segment& a, const Segment& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<Segment> out;
  std::vector<Segment> open;
  int64_t cursor = INT64_MIN;
  auto emit = [&](int64_t until) {
    if (!open.empty() && until > cursor) out.push_back({cursor, until, open.back().name});
    cursor = std::max(cursor, until);
  };
  for (Segment r : ranges) {
    while (!open.empty() && open.back().end_ns <= r.start_ns) {
      emit(open.back().end_ns);
      open.pop_back();
    }
    emit(r.start_ns);
    cursor = std::max(cursor, r.start_ns);
    if (!open.empty()) r.end_ns = std::min(r.end_ns, open.back().end_ns);  // no nesting: clip to the parent
    if (r.end_ns > r.start_ns) open.push_back(r);
  }
  while (!open.empty()) {
    emit(open.back().end_ns);
    open.pop_back();
  }
  // Adjacent segments of one name (a range split by a child that ended) stay apart: harmless.
  return out;
}

void HostActivityIndex::measure(uint32_t thread, const IntervalSet& set,
                                std::unordered_map<NameId, int64_t>& out) const {
  auto it = segments_.find(thread);
  for (const Interval& iv : set.intervals()) {
    int64_t covered = 0;
    if (it != segments_.end()) {
      const std::vector<Segment>& segs = it->second;
      auto s = std::lower_bound(segs.begin(), segs.end(), iv.start,
                                [](const Segment& seg, int64_t t) { return seg.end_ns <= t; });
      for (; s != segs.end() && s->start_ns < iv.end; ++s) {
        const int64_t overlap = std::min(s->end_ns, iv.end) - std::max(s->start_ns, iv.start);
        if (overlap <= 0) continue;
        out[s->name] += overlap;
        covered += overlap;
      }
    }
    if (iv.end - iv.start > covered) out[kNoName] += iv.end - iv.start - covered;
  }
}

}  // namespace stepwatch
