#include "core/step_batches.h"

#include <algorithm>
#include <limits>

namespace stepwatch {

StepBatches::StepBatches(std::span<const Event> events, std::span<const StepWindow> windows, int64_t slack_ns,
                         size_t batch_events)
    : events_(events), windows_(windows), slack_ns_(slack_ns), batch_events_(std::max<size_t>(batch_events, 1)) {
  size_t n_api = 0, n_copy = 0;
  for (const Event& e : events) {
    n_api += e.kind == EventKind::kApiCall;
    n_copy += e.kind == EventKind::kMemcpy;
  }
  calls_.reserve(n_api);
  copies_.reserve(n_copy);
  for (uint32_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == EventKind::kApiCall) calls_.add(events, i);
    if (events[i].kind == EventKind::kMemcpy) copies_.add(events, i);
  }
  calls_.build(events);
  copies_.build(events);
}

size_t StepBatches::first_starting_at(int64_t t) const {
  auto it = std::lower_bound(events_.begin(), events_.end(), t,
                             [](const Event& e, int64_t v) { return e.start_ns < v; });
  return static_cast<size_t>(it - events_.begin());
}

size_t StepBatches::first_starting_after(int64_t t) const {
  auto it = std::upper_bound(events_.begin(), events_.end(), t,
                             [](int64_t v, const Event& e) { return v < e.start_ns; });
  return static_cast<size_t>(it - events_.begin());
}

// open_ becomes every event before first_starting_at(lo) that ends at or after lo. Forward-only
// in the common case (lo grows batch by batch); a lo below the last one rescans from the start.
void StepBatches::collect_open(int64_t lo, size_t begin) {
  if (lo < open_lo_ || begin < scanned_) {
    open_.clear();
    scanned_ = 0;
  } else {
    std::erase_if(open_, [&](uint32_t i) { return events_[i].end_ns < lo; });
  }
  for (size_t i = scanned_; i < begin; ++i) {
    if (events_[i].end_ns >= lo) open_.push_back(static_cast<uint32_t>(i));
  }
  scanned_ = begin;
  open_lo_ = lo;
}

bool StepBatches::next(Batch& batch, std::vector<Event>& slice) {
  if (next_window_ >= windows_.size()) return false;
  const size_t first = next_window_;
  const int64_t t0 = windows_[first].start_ns;
  const size_t begin = first_starting_at(t0);
  size_t end = first + 1;
  int64_t t1 = windows_[first].end_ns;
  while (end < windows_.size() && first_starting_at(windows_[end].end_ns) - begin <= batch_events_) {
    t1 = std::max(t1, windows_[end].end_ns);
    ++end;
  }
  const bool last = end == windows_.size();

  // lo: the previous window's start, and where the GPU last went idle before the batch.
  int64_t lo = t0;
  if (first > 0) lo = std::min(lo, windows_[first - 1].start_ns);
  for (; gpu_scanned_ < begin; ++gpu_scanned_) {
    const Event& e = events_[gpu_scanned_];
    if (e.is_gpu_record()) gpu_end_before_ = std::max(gpu_end_before_, e.end_ns);
  }
  if (gpu_end_before_ != std::numeric_limits<int64_t>::min()) lo = std::min(lo, gpu_end_before_);
  if (first == 0) lo = std::numeric_limits<int64_t>::min();  // the time before the first step is described too
  // Saturating: a record at INT64_MIN (nsys exports have held such) must not overflow.
  const int64_t reach = std::max<int64_t>(slack_ns_, 0) + 1;
  lo = lo < std::numeric_limits<int64_t>::min() + reach ? std::numeric_limits<int64_t>::min() : lo - reach;

  // hi: the first GPU record at or after the batch's end (it ends the last window's last gap).
  int64_t hi = std::numeric_limits<int64_t>::max();
  if (!last) {
    for (size_t i = first_starting_at(t1); i < events_.size(); ++i) {
      if (events_[i].is_gpu_record()) {
        hi = events_[i].start_ns;
        break;
      }
    }
  }

  // A call or GPU record that starts in the batch is measured whole (an allocation call's GPU-idle
  // part, a copy's exposed part), past the window's end too.
  for (size_t i = begin, stop = first_starting_after(t1); i < stop; ++i) {
    const Event& e = events_[i];
    if (e.kind != EventKind::kRange && e.kind != EventKind::kPythonFrame) hi = std::max(hi, e.end_ns);
  }

  // Correlated partners: a GPU record's launching call, an API call's copy record. Widening
  // [lo, hi] to reach them brings in more events, whose partners are looked up in the next round
  // (a round changes nothing in practice after the first; bounded for adversarial input).
  if (lo < open_lo_) collect_open(lo, first_starting_at(lo));
  auto for_each_candidate = [&](int64_t l, int64_t h, auto&& f) {
    for (uint32_t i : open_) {
      if (events_[i].end_ns >= l) f(events_[i]);
    }
    const size_t stop = first_starting_after(h);
    for (size_t i = scanned_; i < stop; ++i) {
      if (events_[i].end_ns >= l) f(events_[i]);
    }
  };
  for (int round = 0; round < 4; ++round) {
    int64_t new_lo = lo, new_hi = hi;
    for_each_candidate(lo, hi, [&](const Event& e) {
      if (e.is_gpu_record()) {
        if (const Event* call = calls_.find(events_, e.correlation)) new_lo = std::min(new_lo, call->start_ns);
      } else if (e.kind == EventKind::kApiCall) {
        if (const Event* copy = copies_.find(events_, e.correlation)) {
          new_lo = std::min(new_lo, copy->start_ns);
          new_hi = std::max(new_hi, copy->start_ns);
        }
      }
    });
    if (new_lo == lo && new_hi == hi) break;
    if (new_lo < lo && new_lo < open_lo_) collect_open(new_lo, first_starting_at(new_lo));
    lo = new_lo;
    hi = new_hi;
  }

  slice.clear();
  for_each_candidate(lo, hi, [&](const Event& e) { slice.push_back(e); });
  // What later batches can still need: events ending at or after this batch's lo.
  collect_open(lo, first_starting_at(lo) < scanned_ ? scanned_ : first_starting_at(lo));

  batch.first_window = first;
  batch.end_window = end;
  next_window_ = end;
  return true;
}

}  // namespace stepwatch
