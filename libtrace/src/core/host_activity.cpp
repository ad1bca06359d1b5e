#include "core/host_activity.h"

#include <algorithm>

namespace stepwatch {

void HostActivityIndex::add(uint32_t thread, int64_t start_ns, int64_t end_ns, NameId name) {
  if (end_ns > start_ns) pending_.push_back({start_ns, end_ns, name, thread});
}

void HostActivityIndex::build() {
  // By thread, then start; outer ranges first at equal starts; ranges of equal extent by name, so
  // the innermost of two is the same whatever order they came in (a batch's slice, the whole trace).
  const auto order = [](const Segment& a, const Segment& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns != b.end_ns ? a.end_ns > b.end_ns : a.name < b.name;
  };
  if (!std::is_sorted(pending_.begin(), pending_.end(), order)) sort_by_thread(order);
  for (size_t i = 0; i < pending_.size();) {
    size_t j = i;
    while (j < pending_.size() && pending_[j].thread == pending_[i].thread) ++j;
    segments_.emplace(pending_[i].thread, flatten(std::span<const Segment>(pending_).subspan(i, j - i)));
    i = j;
  }
  std::vector<Segment>().swap(pending_);
}

// The ranges of a trace come in start order, threads interleaved: a counting sort by thread (there
// are few) keeps each thread's in that order, and then only runs of equal starts need ordering. A
// thread whose ranges did not come by start is sorted whole.
template <typename Order>
void HostActivityIndex::sort_by_thread(Order order) {
  std::vector<uint32_t> threads;
  for (const Segment& s : pending_) {
    if (threads.empty() || threads.back() != s.thread) threads.push_back(s.thread);
  }
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  const auto bucket_of = [&](uint32_t thread) {
    return static_cast<size_t>(std::lower_bound(threads.begin(), threads.end(), thread) - threads.begin());
  };
  std::vector<size_t> begin(threads.size() + 1, 0);
  uint32_t last_thread = 0;
  size_t last_bucket = SIZE_MAX;
  const auto cached_bucket = [&](uint32_t thread) {
    if (last_bucket == SIZE_MAX || thread != last_thread) {
      last_thread = thread;
      last_bucket = bucket_of(thread);
    }
    return last_bucket;
  };
  for (const Segment& s : pending_) ++begin[cached_bucket(s.thread) + 1];
  for (size_t b = 1; b < begin.size(); ++b) begin[b] += begin[b - 1];
  std::vector<Segment> sorted(pending_.size());
  std::vector<size_t> at(begin.begin(), begin.end() - 1);
  for (const Segment& s : pending_) sorted[at[cached_bucket(s.thread)]++] = s;
  for (size_t b = 0; b < threads.size(); ++b) {
    const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(begin[b]);
    const auto last = sorted.begin() + static_cast<std::ptrdiff_t>(begin[b + 1]);
    if (std::is_sorted(first, last, order)) continue;
    for (auto run = first; run != last;) {
      auto run_end = run + 1;
      while (run_end != last && run_end->start_ns == run->start_ns) ++run_end;
      if (run_end - run > 1) std::sort(run, run_end, order);
      run = run_end;
    }
    if (!std::is_sorted(first, last, order)) std::sort(first, last, order);
  }
  pending_.swap(sorted);
}

// A stack of the open ranges gives the innermost one between consecutive boundaries. Every range
// adds at most two boundaries (where it starts, where its parent resumes), so one reservation
// holds them all; of it, only what is written is ever touched.
std::vector<HostActivityIndex::Boundary> HostActivityIndex::flatten(std::span<const Segment> ranges) {
  std::vector<Boundary> out;
  out.reserve(2 * ranges.size() + 1);
  std::vector<Segment> open;
  // The innermost activity is `name` from `at` on: a new boundary, or a relabel of one at the same
  // time (a segment of no length), and none where the label does not change.
  auto mark = [&](int64_t at, NameId name) {
    if (!out.empty() && out.back().start_ns == at) {
      out.back().name = name;
      if (out.size() >= 2 && out[out.size() - 2].name == name) out.pop_back();
      return;
    }
    if (out.empty() ? name == kNoName : out.back().name == name) return;
    out.push_back({at, name});
  };
  auto close_until = [&](int64_t until) {
    while (!open.empty() && open.back().end_ns <= until) {
      const int64_t end = open.back().end_ns;
      open.pop_back();
      mark(end, open.empty() ? kNoName : open.back().name);
    }
  };
  for (Segment r : ranges) {
    close_until(r.start_ns);
    if (!open.empty()) r.end_ns = std::min(r.end_ns, open.back().end_ns);  // no nesting: clip to the parent
    if (r.end_ns <= r.start_ns) continue;
    open.push_back(r);
    mark(r.start_ns, r.name);
  }
  close_until(INT64_MAX);
  return out;
}

void HostActivityIndex::measure(uint32_t thread, const IntervalSet& set,
                                std::unordered_map<NameId, int64_t>& out) const {
  auto it = segments_.find(thread);
  for (const Interval& iv : set.intervals()) {
    int64_t covered = 0;
    if (it != segments_.end() && !it->second.empty()) {
      const std::vector<Boundary>& b = it->second;
      // The segment holding iv.start: the last boundary at or before it (none: uncovered time).
      auto s = std::upper_bound(b.begin(), b.end(), iv.start,
                                [](int64_t t, const Boundary& x) { return t < x.start_ns; });
      if (s != b.begin()) --s;
      for (; s != b.end() && s->start_ns < iv.end; ++s) {
        if (s->name == kNoName) continue;
        const int64_t seg_end = s + 1 != b.end() ? (s + 1)->start_ns : INT64_MAX;
        const int64_t overlap = std::min(seg_end, iv.end) - std::max(s->start_ns, iv.start);
        if (overlap <= 0) continue;
        out[s->name] += overlap;
        covered += overlap;
      }
    }
    if (iv.end - iv.start > covered) out[kNoName] += iv.end - iv.start - covered;
  }
}

}  // namespace stepwatch
