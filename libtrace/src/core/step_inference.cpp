#include "core/step_inference.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/hinted_search.h"
#include "stepwatch/core/classify.h"


namespace stepwatch {
namespace {

constexpr std::string_view kOptimizerPrefix = "Optimizer.step#";
constexpr std::string_view kOptimizerSuffix = ".step";
constexpr size_t kRecentWindows = 64;  // windows whose median decides whether a partial one is a step

bool is_optimizer_step(std::string_view name) {
  return name.size() > kOptimizerPrefix.size() + kOptimizerSuffix.size() && name.starts_with(kOptimizerPrefix) &&
         name.ends_with(kOptimizerSuffix);
}

// Where the host's last CUDA call ended (the data's end without calls). The last inferred step
// ends there, as a step range would: the GPU work still queued then is the drain of the capture.
int64_t host_end(std::span<const Event> events, Interval extent) {
  int64_t end = std::numeric_limits<int64_t>::min();
  for (const Event& e : events) {
    if (e.kind == EventKind::kApiCall) end = std::max(end, e.end_ns);
  }
  return end == std::numeric_limits<int64_t>::min() ? extent.end : end;
}

// The upper median (the middle value of an odd count, the upper of the two middle ones otherwise).
double upper_median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return double(v[v.size() / 2]);
}

bool looks_like_a_step(int64_t duration_ns, double median_ns) {
  return double(duration_ns) >= 0.5 * median_ns && double(duration_ns) <= 1.5 * median_ns;
}

// Sorted by start; events arrive in start order offline, so the check is usually all it costs.
void sort_pointers_by_start(std::vector<const Event*>& list) {
  const auto by_start = [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; };
  if (!std::is_sorted(list.begin(), list.end(), by_start)) std::sort(list.begin(), list.end(), by_start);
}

// Events by correlation id. CUDA and ROCm number correlations from 1 up in a process (a trace holds
// some of them: param-linear's 14.5K calls span 94K ids), so where the ids span at most 8 times
// their count a table indexed by id holds them — no node allocated per event, one load per lookup,
// at most a pointer per id, 64 bytes per member like the member itself; sparser ids go to a hash map.
class ByCorrelation {
 public:
  // `is_member` picks the events; of two with one id the first kept is the earlier-starting one
  // (`earliest`) or the first seen.
  template <typename IsMember>
  ByCorrelation(std::span<const Event> events, IsMember is_member, bool earliest) {
    uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
    size_t count = 0;
    for (const Event& e : events) {
      if (e.correlation == 0 || !is_member(e)) continue;
      lo = std::min(lo, e.correlation);
      hi = std::max(hi, e.correlation);
      ++count;
    }
    if (count == 0) return;
    dense_ = hi - lo < 8 * static_cast<uint64_t>(count) + 4096;
    base_ = lo;
    if (dense_) table_.assign(hi - lo + 1, nullptr);
    for (const Event& e : events) {
      if (e.correlation == 0 || !is_member(e)) continue;
      const Event*& slot = dense_ ? table_[e.correlation - base_] : sparse_[e.correlation];
      if (slot == nullptr || (earliest && e.start_ns < slot->start_ns)) slot = &e;
    }
  }
  const Event* find(uint64_t correlation) const {
    if (dense_) {
      return correlation >= base_ && correlation - base_ < table_.size() ? table_[correlation - base_] : nullptr;
    }
    const auto it = sparse_.find(correlation);
    return it == sparse_.end() ? nullptr : it->second;
  }

 private:
  bool dense_ = false;
  uint64_t base_ = 0;
  std::vector<const Event*> table_;
  std::unordered_map<uint64_t, const Event*> sparse_;
};

// The ends of the outermost optimizer ranges, sorted (the same range recorded twice — cpu_op and
// user_annotation — is one optimizer step). `first` names one of them, for messages.
std::vector<int64_t> optimizer_ends(std::span<const Event> events, const NameTable& names, std::string* first) {
  // Name ids are dense: a flat table decides each name once.
  constexpr uint8_t kUndecided = 0xFF;
  std::vector<uint8_t> is_opt;
  std::vector<const Event*> ranges;
  for (const Event& e : events) {
    if (e.kind != EventKind::kRange || e.has_flag(event_flags::kOnDevice) || e.end_ns <= e.start_ns) continue;
    if (e.name >= is_opt.size()) is_opt.resize(size_t{e.name} + 1, kUndecided);
    uint8_t& decided = is_opt[e.name];
    if (decided == kUndecided) decided = is_optimizer_step(names.view(e.name)) ? 1 : 0;
    if (decided == 1) ranges.push_back(&e);
  }
  std::sort(ranges.begin(), ranges.end(), [](const Event* a, const Event* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  std::vector<int64_t> ends;
  int64_t outer_end = std::numeric_limits<int64_t>::min();
  for (const Event* r : ranges) {
    if (r->end_ns <= outer_end) continue;
    outer_end = r->end_ns;
    ends.push_back(r->end_ns);
  }
  if (first != nullptr && !ranges.empty()) *first = std::string(names.view(ranges.front()->name));
  std::sort(ends.begin(), ends.end());
  return ends;
}

// ---- the GPU record sequence in launch order ------------------------------------------------------

struct Record {
  int64_t key = 0;  // launch order: the launching call's start, else the record's start
  const Event* event = nullptr;
  const Event* launcher = nullptr;
  bool launched_in_data = false;  // its launch call is in the data (not queued before the capture)
};

// The GPU records in program order, with, for each, the host pause before it (or the GPU idle
// before it, in GPU order) and the time a step beginning at that record would begin.
struct LaunchSequence {
  std::vector<Record> recs;
  std::vector<int64_t> pause, begin;
  // The end of the record before each one on its stream (INT64_MIN: none): where the GPU finished
  // the work queued before it. A step cut there holds the GPU work its host window launched even
  // when the GPU runs far behind the host.
  std::vector<int64_t> stream_prev_end;
  std::vector<uint8_t> known;  // whether anything precedes the record (its pause is known)
  bool by_launch = false;
};

// Every GPU record of each stream (those queued before the capture included), by start: where the
// GPU finished the work queued on a record's stream before it. Starts and running ends are kept
// side by side in flat arrays (a lookup's binary search reads no event), built once per pass and
// shared by the sequence and the optimizer bounds.
class StreamIndex {
 public:
  explicit StreamIndex(std::span<const Event> events) {
    std::unordered_map<uint32_t, size_t> slot_of;
    size_t last = SIZE_MAX;  // records come in runs of one stream's
    for (const Event& e : events) {
      if (!e.is_gpu_record()) continue;
      if (last == SIZE_MAX || streams_[last].id != e.stream) {
        const auto [it, added] = slot_of.try_emplace(e.stream, streams_.size());
        if (added) streams_.push_back(Stream{e.stream, {}, {}});
        last = it->second;
      }
      streams_[last].starts.push_back(e.start_ns);
      streams_[last].ends.push_back(e.end_ns);
    }
    for (Stream& s : streams_) {
      if (!std::is_sorted(s.starts.begin(), s.starts.end())) {
        // Which of equal starts comes first does not matter: a lookup reads the ends of all
        // records that started before the one asked about.
        std::vector<std::pair<int64_t, int64_t>> by_start(s.starts.size());
        for (size_t k = 0; k < by_start.size(); ++k) by_start[k] = {s.starts[k], s.ends[k]};
        std::sort(by_start.begin(), by_start.end());
        for (size_t k = 0; k < by_start.size(); ++k) std::tie(s.starts[k], s.ends[k]) = by_start[k];
      }
      for (size_t k = 1; k < s.ends.size(); ++k) s.ends[k] = std::max(s.ends[k], s.ends[k - 1]);
    }
  }
  // The latest end among the records of `r`'s stream that started before it (INT64_MIN: none).
  int64_t prev_end(const Event& r) const {
    const Stream* s = find(r.stream);
    if (s == nullptr) return std::numeric_limits<int64_t>::min();
    const size_t before =
        lower_bound_from(s->starts.size(), s->hint, [&](size_t k) { return s->starts[k] < r.start_ns; });
    if (before == 0) return std::numeric_limits<int64_t>::min();
    return s->ends[before - 1];
  }

 private:
  struct Stream {
    uint32_t id = 0;
    std::vector<int64_t> starts;  // sorted
    std::vector<int64_t> ends;    // running max of end, in start order
    mutable size_t hint = 0;      // the last lookup's answer (an index is one thread's)
  };
  // A trace has a handful of streams: a scan beats a hash, the last one found first.
  const Stream* find(uint32_t stream) const {
    if (last_found_ < streams_.size() && streams_[last_found_].id == stream) return &streams_[last_found_];
    for (size_t k = 0; k < streams_.size(); ++k) {
      if (streams_[k].id == stream) {
        last_found_ = k;
        return &streams_[k];
      }
    }
    return nullptr;
  }
  std::vector<Stream> streams_;
  mutable size_t last_found_ = 0;
};

// `force_by_launch`: 1 or 0 to keep the order chosen at the lock, -1 to choose.
LaunchSequence build_sequence(std::span<const Event> events, const StreamIndex& streams, int force_by_launch) {
  // Launching calls by correlation (the earliest call of a correlation stands for it).
  const ByCorrelation call_of(events, [](const Event& e) { return e.kind == EventKind::kApiCall; }, true);
  struct ThreadCalls {
    std::vector<const Event*> list;  // by start
    size_t hint = 0;                 // lower_bound_from's
  };
  std::unordered_map<uint32_t, ThreadCalls> calls_by_thread;
  uint32_t last_thread = 0;
  ThreadCalls* last_calls = nullptr;  // calls come in runs of one thread's
  size_t gpu_records = 0;
  for (const Event& e : events) {
    gpu_records += e.is_gpu_record();
    if (e.kind != EventKind::kApiCall) continue;
    if (last_calls == nullptr || e.thread != last_thread) {
      last_thread = e.thread;
      last_calls = &calls_by_thread[e.thread];  // references into an unordered_map stay valid
    }
    last_calls->list.push_back(&e);
  }
  for (auto& [thread, calls] : calls_by_thread) sort_pointers_by_start(calls.list);
  LaunchSequence seq;
  seq.recs.reserve(gpu_records);
  size_t launched = 0;
  for (const Event& e : events) {
    if (!e.is_gpu_record()) continue;
    Record r{e.start_ns, &e, nullptr};
    if (e.correlation != 0) r.launcher = call_of.find(e.correlation);
    launched += r.launcher != nullptr;
    r.launched_in_data = r.launcher != nullptr;
    seq.recs.push_back(r);
  }
  // Launch order is program order; GPU order interleaves streams. Records without their call in
  // the data (queued before the capture began) are out of program order: dropped when most
  // records have calls; with few calls, GPU order for all.
  seq.by_launch = force_by_launch >= 0 ? force_by_launch == 1 : 2 * launched >= seq.recs.size() && launched > 0;
  if (seq.by_launch) {
    std::erase_if(seq.recs, [](const Record& r) { return r.launcher == nullptr; });
    for (Record& r : seq.recs) r.key = r.launcher->start_ns;
  } else {
    for (Record& r : seq.recs) r.launcher = nullptr;
  }
  std::sort(seq.recs.begin(), seq.recs.end(), [](const Record& a, const Record& b) {
    return a.key != b.key ? a.key < b.key : a.event->start_ns < b.event->start_ns;
  });
  const size_t total = seq.recs.size();
  seq.pause.assign(total, 0);
  seq.begin.assign(total, 0);
  seq.known.assign(total, 0);
  seq.stream_prev_end.assign(total, std::numeric_limits<int64_t>::min());
  for (size_t i = 0; i < total; ++i) seq.stream_prev_end[i] = streams.prev_end(*seq.recs[i].event);
  int64_t gpu_end = std::numeric_limits<int64_t>::min();
  last_calls = nullptr;
  for (size_t i = 0; i < total; ++i) {
    const Event& e = *seq.recs[i].event;
    if (const Event* call = seq.recs[i].launcher) {
      if (last_calls == nullptr || call->thread != last_thread) {
        last_thread = call->thread;
        last_calls = &calls_by_thread[call->thread];
      }
      const std::vector<const Event*>& list = last_calls->list;
      const size_t at = lower_bound_from(list.size(), last_calls->hint,
                                         [&](size_t k) { return list[k]->start_ns < call->start_ns; });
      seq.begin[i] = call->start_ns;
      if (at > 0) {
        const int64_t prev_end = list[at - 1]->end_ns;
        seq.known[i] = 1;
        if (prev_end <= call->start_ns) {
          seq.pause[i] = call->start_ns - prev_end;
          seq.begin[i] = prev_end;
        }
      }
    } else {
      seq.begin[i] = e.start_ns;
      seq.known[i] = gpu_end > std::numeric_limits<int64_t>::min();
      if (seq.known[i] && gpu_end < e.start_ns) {
        seq.pause[i] = e.start_ns - gpu_end;
        seq.begin[i] = gpu_end;
      }
      gpu_end = std::max(gpu_end, e.end_ns);
    }
  }
  return seq;
}

// ---- the period and the phase ------------------------------------------------------------------------

// Whether `longer` is (nearly) a whole multiple of `shorter`: within one record or 2% (a loop whose
// record count varies by one between steps has the same period).
bool is_multiple(size_t longer, size_t shorter) {
  if (shorter == 0) return false;
  const size_t k = (longer + shorter / 2) / shorter;
  if (k == 0) return false;
  const size_t diff = longer > k * shorter ? longer - k * shorter : k * shorter - longer;
  return double(diff) <= std::max(1.0, 0.02 * double(longer));
}

// Candidates are the distances between consecutive occurrences of a name; the period is the
// smallest whose score (share of records equal to the one a period later) is >= min_match and
// within match_slack of the best, searched in the first max_records records.
std::optional<std::pair<size_t, double>> find_period(const LaunchSequence& seq, const StepInferenceParams& params) {
  const auto& recs = seq.recs;
  const size_t n = std::min(recs.size(), params.max_records);
  const auto min_period = static_cast<size_t>(std::max(params.min_period_records, 1));
  const auto min_reps = static_cast<size_t>(std::max(params.min_repetitions, 2));
  if (n < min_period * min_reps) return std::nullopt;

  std::unordered_map<NameId, size_t> last_seen;
  std::unordered_map<size_t, int> distance_count;
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = last_seen.try_emplace(recs[i].event->name, i);
    if (inserted) continue;
    const size_t d = i - it->second;
    it->second = i;
    if (d >= min_period && d * min_reps <= n) ++distance_count[d];
  }
  std::vector<std::pair<size_t, int>> candidates;
  for (const auto& [d, count] : distance_count) {
    if (count >= 2) candidates.emplace_back(d, count);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  if (candidates.size() > params.max_candidates) candidates.resize(params.max_candidates);
  std::sort(candidates.begin(), candidates.end());
  if (candidates.empty()) return std::nullopt;

  std::vector<double> score(candidates.size(), 0.0);
  double best = 0.0;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const size_t p = candidates[c].first;
    size_t same = 0;
    for (size_t i = 0; i + p < n; ++i) same += recs[i].event->name == recs[i + p].event->name;
    score[c] = double(same) / double(n - p);
    best = std::max(best, score[c]);
  }
  // Among the candidates that score as well as the best, the longest that is not a multiple of a
  // shorter one: a multiple of the step period scores the same and is no new period, but a longer
  // period that is no multiple is the loop around the shorter one (layers inside a step, micro-batches
  // inside an optimizer step).
  std::optional<std::pair<size_t, double>> chosen;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (score[c] < params.min_match || score[c] < best - params.match_slack) continue;
    const size_t p = candidates[c].first;
    if (chosen && is_multiple(p, chosen->first)) continue;
    chosen = std::make_pair(p, score[c]);
  }
  return chosen;
}

// The position in the period where a step begins, as the index of its occurrence in a reference
// period in the middle of the sample (a warm-up head does not decide it): the first host-to-device
// copy (the input batch) if the period has one, preferring the one after the longest host pause;
// otherwise the record after the longest mean host pause (the loop head).
size_t choose_phase(const LaunchSequence& seq, size_t period, size_t n) {
  const size_t total = seq.recs.size();
  const size_t ref = (n / 2 / period) * period;
  std::vector<double> mean_pause(period, 0.0);
  for (size_t j = 0; j < period; ++j) {
    double sum = 0;
    int count = 0;
    for (size_t i = j; i < n; i += period) {
      sum += double(seq.pause[i]);
      ++count;
    }
    mean_pause[j] = count > 0 ? sum / count : 0.0;
  }
  auto is_h2d = [](const Event& e) { return e.kind == EventKind::kMemcpy && e.copy_kind() == CopyKind::kHtoD; };
  size_t phase = period;
  for (size_t j = 0; j < period; ++j) {
    if (ref + j >= total || !is_h2d(*seq.recs[ref + j].event)) continue;
    if (phase == period || mean_pause[j] > mean_pause[phase]) phase = j;
  }
  if (phase == period) {
    phase = 0;
    for (size_t j = 1; j < period; ++j) {
      if (mean_pause[j] > mean_pause[phase]) phase = j;
    }
  }
  return ref + phase;
}

// The cut chain from `from`: each next (previous, when `step` < 0) cut is the record named
// `phase` nearest to one period later (earlier), within a quarter period, while the sequence
// lasts. Forward cuts whose search would reach past `horizon` (records that may still be missing)
// are not taken.
std::vector<size_t> chain(const LaunchSequence& seq, size_t from, size_t period, NameId phase, int step,
                          size_t horizon) {
  const auto total = static_cast<int64_t>(seq.recs.size());
  const auto reach = static_cast<int64_t>(std::max<size_t>(period / 4, 1));
  auto nearest = [&](int64_t expected) -> int64_t {
    for (int64_t k = 0; k <= reach; ++k) {
      for (int64_t at : {expected - k, expected + k}) {
        if (at >= 0 && at < total && seq.recs[static_cast<size_t>(at)].event->name == phase) return at;
      }
    }
    return -1;
  };
  std::vector<size_t> cuts;
  for (auto pos = static_cast<int64_t>(from);;) {
    const int64_t expected = pos + step * static_cast<int64_t>(period);
    if (step > 0 && horizon != SIZE_MAX && expected + reach >= static_cast<int64_t>(horizon)) break;
    const int64_t next = nearest(expected);
    if (next < 0 || (step > 0 ? next <= pos : next >= pos)) break;
    cuts.push_back(static_cast<size_t>(next));
    pos = next;
  }
  return cuts;
}

// Boundaries from cuts: a cut with nothing before it in the data (the capture's first call) does
// not show where its step began (the data wait before it is not in the data). A boundary is where
// the host began the step, or — when the GPU runs behind the host — where the GPU finished the work
// queued before the cut record on its stream, whichever is later: the window then holds the GPU
// work its host window launched. (The stream's previous record ended before the cut record began,
// so whenever the cut record is in the data, live or offline, so is it.)
std::vector<int64_t> bounds_of(const LaunchSequence& seq, const std::vector<size_t>& cuts) {
  std::vector<int64_t> bounds;
  for (size_t c : cuts) {
    if (seq.known[c]) bounds.push_back(std::max(seq.begin[c], seq.stream_prev_end[c]));
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

// Whether inferred windows are steps of this data: they hold at least `min_share` of its GPU busy
// time and of the span from its first GPU record to its last. Windows that hold almost none are
// something else repeating — the layers of one forward pass launched far ahead of the GPU (24
// windows of 0.9 ms with no kernel in them), or a short periodic stretch of a long trace (36 layer
// windows covering 28 ms of a 987 ms capture).
// (GPU work queued before the capture began — records without their launch call, dropped from a
// launch-ordered sequence — belongs to no step and is not counted.)
// Live (before the end), only the work launched before the last boundary counts: what comes after it
// belongs to steps not formed yet.
bool covers_the_gpu_work(const std::vector<StepWindow>& windows, const LaunchSequence& seq, double min_share,
                         int64_t key_limit) {
  std::vector<Interval> gpu, covered;
  Interval span{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  const bool any_launched =
      std::any_of(seq.recs.begin(), seq.recs.end(), [](const Record& r) { return r.launched_in_data; });
  for (const Record& r : seq.recs) {
    if ((any_launched && !r.launched_in_data) || r.key >= key_limit) continue;
    const Event& e = *r.event;
    gpu.push_back({e.start_ns, e.end_ns});
    span.start = std::min(span.start, e.start_ns);
    span.end = std::max(span.end, e.end_ns);
  }
  for (const StepWindow& w : windows) covered.push_back({w.start_ns, w.end_ns});
  const IntervalSet busy = IntervalSet::from_unsorted(std::move(gpu));
  const IntervalSet in_steps = IntervalSet::from_unsorted(std::move(covered));
  if (busy.total_length() == 0 || span.end <= span.start) return true;
  const double busy_share = double(busy.intersect(in_steps).total_length()) / double(busy.total_length());
  const double span_share = double(in_steps.measure_within(span.start, span.end)) / double(span.end - span.start);
  return busy_share >= min_share && span_share >= min_share;
}

// The host's own boundaries of the cuts (where the host began each step), for the pacing check.
std::vector<int64_t> host_bounds_of(const LaunchSequence& seq, const std::vector<size_t>& cuts) {
  std::vector<int64_t> bounds;
  for (size_t c : cuts) {
    if (seq.known[c]) bounds.push_back(seq.begin[c]);
  }
  std::sort(bounds.begin(), bounds.end());
  return bounds;
}

int64_t median_spacing(const std::vector<int64_t>& bounds) {
  std::vector<int64_t> d;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) d.push_back(bounds[i + 1] - bounds[i]);
  return static_cast<int64_t>(upper_median(std::move(d)));
}

// Host boundaries (optimizer range ends) moved to where the GPU finished the work launched before
// them (bounds_of's rule), through the first GPU record launched at or after each. Live (not
// `final`), a boundary whose deciding record may still be missing — a call after it that creates
// GPU work has no record in the data yet — waits, with every later one.
std::vector<int64_t> align_host_bounds(std::span<const Event> events, const StreamIndex& streams,
                                       const std::vector<int64_t>& host, bool final) {
  int64_t gpu_end = std::numeric_limits<int64_t>::min();
  std::vector<const Event*> calls;  // calls that create GPU work, by start
  for (const Event& e : events) {
    if (e.is_gpu_record()) gpu_end = std::max(gpu_end, e.end_ns);
    const ApiClass c = e.api_class();
    if (e.kind == EventKind::kApiCall && e.correlation != 0 &&
        (is_enqueue(c) || c == ApiClass::kMemcpySync || c == ApiClass::kMemsetSync)) {
      calls.push_back(&e);
    }
  }
  sort_pointers_by_start(calls);
  // The first call at or after each boundary, then the first GPU record of each of those calls'
  // correlations: one boundary a step, so the records are found by a pass over the events that
  // looks up a few dozen ids, not through an index of every record.
  std::vector<const Event*> call_after(host.size(), nullptr);
  std::vector<uint64_t> wanted;
  for (size_t k = 0; k < host.size(); ++k) {
    auto c = std::lower_bound(calls.begin(), calls.end(), host[k],
                              [](const Event* x, int64_t t) { return x->start_ns < t; });
    if (c == calls.end()) continue;
    call_after[k] = *c;
    wanted.push_back((*c)->correlation);
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<const Event*> record_of_wanted(wanted.size(), nullptr);
  if (!wanted.empty()) {
    for (const Event& e : events) {
      if (!e.is_gpu_record() || e.correlation < wanted.front() || e.correlation > wanted.back()) continue;
      const auto w = std::lower_bound(wanted.begin(), wanted.end(), e.correlation);
      if (w == wanted.end() || *w != e.correlation) continue;
      const Event*& slot = record_of_wanted[static_cast<size_t>(w - wanted.begin())];
      if (slot == nullptr) slot = &e;  // the first seen
    }
  }
  auto record_of = [&](const Event* call) -> const Event* {
    const auto w = std::lower_bound(wanted.begin(), wanted.end(), call->correlation);
    return record_of_wanted[static_cast<size_t>(w - wanted.begin())];
  };
  std::vector<int64_t> out;
  for (size_t k = 0; k < host.size(); ++k) {
    const int64_t h = host[k];
    const Event* r = call_after[k] == nullptr ? nullptr : record_of(call_after[k]);
    if (!final && r == nullptr) break;  // its record may still come
    int64_t b = h;
    if (r != nullptr) {
      b = std::max(h, streams.prev_end(*r));
    } else if (call_after[k] == nullptr) {
      b = std::max(h, gpu_end);  // nothing launched after it (the data's last step): all the work ended
    }
    out.push_back(std::max(b, out.empty() ? b : out.back()));
  }
  return out;
}

// Where the GPU work launched at or after `key` (launch order) ends: the last step ends there when
// the GPU runs behind the host, as it ends at the host's last call when it does not.
int64_t gpu_end_from(const LaunchSequence& seq, int64_t key) {
  int64_t end = std::numeric_limits<int64_t>::min();
  for (const Record& r : seq.recs) {
    if (r.key >= key) end = std::max(end, r.event->end_ns);
  }
  return end;
}

// The host time of the phase record whose boundary is `bound` (where its step's host work began):
// live retention keeps the data from there, so that the next cut finds its launch calls.
int64_t host_begin_of_bound(const LaunchSequence& seq, NameId phase, int64_t bound) {
  for (size_t i = 0; i < seq.recs.size(); ++i) {
    if (seq.recs[i].event->name == phase && seq.known[i] && std::max(seq.begin[i], seq.stream_prev_end[i]) == bound) {
      return seq.begin[i];
    }
  }
  return bound;
}

std::string period_description(bool by_launch, size_t period, double match) {
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * match);
  return "the period of the GPU " + std::string(by_launch ? "launch" : "record") + " sequence (" +
         std::to_string(period) + " records per step, " + pct + " repeat one period later)";
}

}  // namespace

// Windows from boundary to boundary; the partial windows before the first boundary (from the
// data's start) and after the last (to the end of the host's last CUDA call) only when they look
// like a step (0.5–1.5x the median): a capture rarely starts or ends on a step boundary.
std::vector<StepWindow> StepInferrer::finish_windows(std::vector<int64_t> bounds, int64_t tail_end, bool final) {
  std::vector<StepWindow> out;
  auto add = [&](int64_t s, int64_t e) {
    out.push_back(StepWindow{s, e, ordinal_++, StepSource::kInferred});
    recent_ns_.push_back(e - s);
  };
  if (last_bound_ != INT64_MIN) bounds.insert(bounds.begin(), last_bound_);
  for (size_t i = 0; i + 1 < bounds.size(); ++i) add(bounds[i], bounds[i + 1]);
  if (!bounds.empty()) last_bound_ = bounds.back();
  if (final && !recent_ns_.empty() && tail_end > last_bound_) {
    const double median = upper_median(recent_ns_);
    if (looks_like_a_step(tail_end - last_bound_, median)) add(last_bound_, tail_end);
    last_bound_ = tail_end;
  }
  // Bounded: the median of the last windows is what a later partial window is judged against.
  if (recent_ns_.size() > kRecentWindows) {
    recent_ns_.erase(recent_ns_.begin(), recent_ns_.end() - static_cast<std::ptrdiff_t>(kRecentWindows));
  }
  return out;
}

std::optional<std::vector<StepWindow>> StepInferrer::lock(std::span<const Event> events, const NameTable& names,
                                                          Interval extent, bool final) {
  if (locked_) return std::nullopt;
  std::vector<int64_t> bounds;
  std::string first_name;
  std::vector<int64_t> ends = optimizer_ends(events, names, &first_name);
  const StreamIndex streams(events);
  LaunchSequence seq = build_sequence(events, streams, -1);
  by_launch_ = seq.by_launch ? 1 : 0;
  int64_t tail_key = std::numeric_limits<int64_t>::max();  // the last step's GPU work is launched from here
  if (static_cast<int>(ends.size()) >= params_.min_optimizer_ranges) {
    inference_.method = kInferredFromOptimizer;
    inference_.description = "the ends of " + std::to_string(ends.size()) + " optimizer ranges ('" + first_name + "')";
    bounds = align_host_bounds(events, streams, ends, final);
    if (!bounds.empty()) last_host_bound_ = ends[bounds.size() - 1];
    tail_key = last_host_bound_;
  } else {
    const size_t n = std::min(seq.recs.size(), params_.max_records);
    const auto period = find_period(seq, params_);
    if (!period) return std::nullopt;
    const size_t ref = choose_phase(seq, period->first, n);
    phase_name_ = seq.recs[ref].event->name;
    // Without `final`, a forward cut whose neighbourhood is not all in the data yet waits.
    const size_t horizon = final ? SIZE_MAX : seq.recs.size();
    std::vector<size_t> cuts{ref};
    for (size_t c : chain(seq, ref, period->first, phase_name_, +1, horizon)) cuts.push_back(c);
    for (size_t c : chain(seq, ref, period->first, phase_name_, -1, horizon)) cuts.push_back(c);
    bounds = bounds_of(seq, cuts);
    // A loop's step takes as long on the host as on the GPU (the slower side paces the other). A
    // repeating stretch the host issues far faster than the GPU runs it is one burst of queued work
    // — the layers of a single forward pass — not a loop.
    const int64_t host_spacing = median_spacing(host_bounds_of(seq, cuts));
    if (host_spacing > 0 && median_spacing(bounds) > 2 * host_spacing) return std::nullopt;
    inference_.method = kInferredFromKernelPeriod;
    inference_.period_records = static_cast<int>(period->first);
    inference_.match = period->second;
    inference_.description = period_description(seq.by_launch, period->first, period->second);
    tail_key = seq.recs[*std::max_element(cuts.begin(), cuts.end())].key;
  }
  if (bounds.size() < 2) return std::nullopt;
  // The head window (before the first boundary) is judged against the body's median, as the tail is.
  std::vector<int64_t> body_ns;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) body_ns.push_back(bounds[i + 1] - bounds[i]);
  std::vector<StepWindow> windows;
  // The head begins where the GPU began the first work launched in the data (after what was queued
  // before the capture), or at the data's start.
  const int64_t head_start =
      seq.recs.empty() ? extent.start : std::max(extent.start, seq.stream_prev_end.front());
  if (head_start < bounds.front() && looks_like_a_step(bounds.front() - head_start, upper_median(body_ns))) {
    windows.push_back(StepWindow{head_start, bounds.front(), ordinal_++, StepSource::kInferred});
  }
  const int64_t tail_end = std::max(host_end(events, extent), gpu_end_from(seq, tail_key));
  for (StepWindow& w : finish_windows(std::move(bounds), tail_end, final)) windows.push_back(w);
  if (windows.size() < 2 ||
      !covers_the_gpu_work(windows, seq, params_.min_gpu_coverage,
                           final ? std::numeric_limits<int64_t>::max() : tail_key)) {
    *this = StepInferrer(params_);
    return std::nullopt;
  }
  locked_ = true;
  resume_host_ns_ = inference_.method == kInferredFromOptimizer ? last_host_bound_
                                                                 : host_begin_of_bound(seq, phase_name_, last_bound_);
  return windows;
}

std::vector<StepWindow> StepInferrer::take_ready(std::span<const Event> events, const NameTable& names,
                                                 Interval extent, int64_t limit_ns, bool final) {
  if (!locked_) return {};
  std::vector<int64_t> bounds;
  const StreamIndex streams(events);
  const LaunchSequence seq = build_sequence(events, streams, by_launch_);
  int64_t tail_key = last_host_bound_;
  if (inference_.method == kInferredFromOptimizer) {
    std::vector<int64_t> ends;
    for (int64_t end : optimizer_ends(events, names, nullptr)) {
      if (end > last_host_bound_ && end <= limit_ns) ends.push_back(end);
    }
    for (int64_t b : align_host_bounds(events, streams, ends, final)) {
      if (b > limit_ns) break;
      last_host_bound_ = ends[bounds.size()];
      bounds.push_back(b);
    }
    tail_key = last_host_bound_;
  } else {
    const auto period = static_cast<size_t>(inference_.period_records);
    // The anchor: the phase record the last window ended at (the first one after it when that
    // record is no longer in the data).
    size_t anchor = seq.recs.size();
    for (size_t i = 0; i < seq.recs.size(); ++i) {
      if (seq.recs[i].event->name != phase_name_ || !seq.known[i]) continue;
      if (std::max(seq.begin[i], seq.stream_prev_end[i]) < last_bound_) continue;
      anchor = i;
      break;
    }
    if (anchor < seq.recs.size()) {
      const size_t horizon = final ? SIZE_MAX : seq.recs.size();
      const std::vector<size_t> cuts = chain(seq, anchor, period, phase_name_, +1, horizon);
      for (int64_t b : bounds_of(seq, cuts)) {
        if (b > last_bound_ && b <= limit_ns) bounds.push_back(b);
      }
      tail_key = seq.recs[cuts.empty() ? anchor : cuts.back()].key;
    }
  }
  const int64_t tail_end = std::max(host_end(events, extent), final ? gpu_end_from(seq, tail_key) : INT64_MIN);
  std::vector<StepWindow> out = finish_windows(std::move(bounds), tail_end, final);
  resume_host_ns_ = inference_.method == kInferredFromOptimizer ? last_host_bound_
                                                                 : host_begin_of_bound(seq, phase_name_, last_bound_);
  return out;
}

std::optional<StepInference> infer_steps(std::span<const Event> events, const NameTable& names, Interval extent,
                                         const StepInferenceParams& params) {
  StepInferrer inferrer(params);
  auto windows = inferrer.lock(events, names, extent, true);
  if (!windows) return std::nullopt;
  StepInference inf;
  inf.steps = std::move(*windows);
  inf.method = inferrer.method();
  inf.description = inferrer.description();
  inf.period_records = inferrer.period_records();
  return inf;
}

}  // namespace stepwatch
