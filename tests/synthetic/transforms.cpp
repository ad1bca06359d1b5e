#include "synthetic/transforms.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "stepwatch/core/classify.h"

namespace stepwatch::synthetic {
namespace {

// The model's loop-head and optimizer ranges (workload.cpp names them the same way).
constexpr std::string_view kDataLoaderRange = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
constexpr std::string_view kOptimizerRange = "Optimizer.step#AdamW.step";

bool is_step_range(const Event& e) { return e.kind == EventKind::kRange && e.step >= 0; }

// How a delay at `t` of `d` moves things. Step windows (and step ranges) stretch when they hold
// t (start <= t < end); any other span moves when it starts at or after t, stretches when it
// spans t.
struct Shift {
  int64_t t = 0;
  int64_t d = 0;

  int64_t point(int64_t x) const { return x >= t ? x + d : x; }
  std::pair<int64_t, int64_t> span(int64_t s, int64_t e) const {
    if (s >= t) return {s + d, e + d};
    if (e > t) return {s, e + d};
    return {s, e};
  }
  std::pair<int64_t, int64_t> window(int64_t s, int64_t e) const {
    if (s <= t && t < e) return {s, e + d};
    if (s > t) return {s + d, e + d};
    return {s, e};
  }
  void apply_host(Event& e) const {
    std::tie(e.start_ns, e.end_ns) = is_step_range(e) ? window(e.start_ns, e.end_ns) : span(e.start_ns, e.end_ns);
  }
};

StepTruth& truth_of(SyntheticRun& run, int64_t step) {
  for (StepTruth& t : run.truth) {
    if (t.step == step) return t;
  }
  throw std::invalid_argument("no captured step " + std::to_string(step));
}

int64_t step_holding(const SyntheticRun& run, int64_t t) {
  for (const StepTruth& s : run.truth) {
    if (s.start_ns <= t && t < s.end_ns) return s.step;
  }
  return -1;
}

// GPU spans and kernel starts, from the records themselves (the model tags kernels the same way:
// a collective kernel is comm, any other kernel compute; copies and memsets are copy).
void rebuild_gpu_truth(SyntheticRun& run) {
  GroundTruthTimeline& t = run.timeline;
  Spans compute, comm, copy;
  t.compute_kernel_starts.clear();
  t.comm_kernel_starts.clear();
  for (const Event& e : run.trace.events) {
    if (e.kind == EventKind::kKernel) {
      if (e.collective != CollectiveType::kNone) {
        comm.emplace_back(e.start_ns, e.end_ns);
        t.comm_kernel_starts.push_back(e.start_ns);
      } else {
        compute.emplace_back(e.start_ns, e.end_ns);
        t.compute_kernel_starts.push_back(e.start_ns);
      }
    } else if (e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset) {
      copy.emplace_back(e.start_ns, e.end_ns);
    }
  }
  t.compute = merge_spans(std::move(compute));
  t.comm = merge_spans(std::move(comm));
  t.copy = merge_spans(std::move(copy));
  t.busy = unite_spans(unite_spans(t.compute, t.comm), t.copy);
  std::sort(t.compute_kernel_starts.begin(), t.compute_kernel_starts.end());
  std::sort(t.comm_kernel_starts.begin(), t.comm_kernel_starts.end());
}

void move_host_truth(SyntheticRun& run, const Shift& shift) {
  GroundTruthTimeline& t = run.timeline;
  auto move = [&](Spans spans) {
    for (auto& s : spans) s = shift.span(s.first, s.second);
    return merge_spans(std::move(spans));
  };
  t.data_wait = move(std::move(t.data_wait));
  t.blocking = move(std::move(t.blocking));
  t.fault_idle = move(std::move(t.fault_idle));
  t.dispatch = move(std::move(t.dispatch));
  t.host_work = move(std::move(t.host_work));
  t.sync_copy_transfer = move(std::move(t.sync_copy_transfer));
  t.pageable_copy_transfer = move(std::move(t.pageable_copy_transfer));
  for (auto& call : t.allocator_calls) call = shift.span(call.first, call.second);
  for (int64_t& x : t.blocking_call_starts) x = shift.point(x);
}

// The slowed H2D copies of the truth are GPU records: they move as their record did.
void move_slow_copies(SyntheticRun& run, const std::unordered_map<int64_t, int64_t>& shift_by_start) {
  for (GroundTruthTimeline::SlowCopy& c : run.timeline.slow_h2d) {
    auto it = shift_by_start.find(c.start_ns);
    if (it != shift_by_start.end()) c.start_ns += it->second;
  }
}

void recompute_truth(SyntheticRun& run) {
  for (StepTruth& s : run.truth) s = run.truth_for_window(s.start_ns, s.end_ns, s.step);
}

// Moves `t` out of any API call of the launching thread: the stall starts between two calls.
int64_t between_calls(const SyntheticRun& run, int64_t t) {
  for (bool moved = true; moved;) {
    moved = false;
    for (const Event& e : run.trace.events) {
      if (e.kind == EventKind::kApiCall && e.thread == run.config.host_thread && e.start_ns < t && t < e.end_ns) {
        t = e.end_ns;
        moved = true;
      }
    }
  }
  return t;
}

uint64_t next_correlation(const SyntheticRun& run) {
  uint64_t c = 0;
  for (const Event& e : run.trace.events) c = std::max(c, e.correlation);
  return c + 1;
}

Event& add_host_range(SyntheticRun& run, std::string_view name, int64_t start, int64_t end) {
  Event& e = run.trace.add(EventKind::kRange, name, start, end);
  e.thread = run.config.host_thread;
  return e;
}

}  // namespace

std::vector<int64_t> every_nth_step(const SyntheticRun& run, int n) {
  std::vector<int64_t> steps;
  if (n <= 0) return steps;
  for (size_t k = 0; k < run.truth.size(); ++k) {
    if ((k + 1) % static_cast<size_t>(n) == 0) steps.push_back(run.truth[k].step);
  }
  return steps;
}

int64_t median_step_ns(const SyntheticRun& run) {
  std::vector<int64_t> d;
  for (const StepTruth& s : run.truth) d.push_back(s.duration_ns());
  if (d.empty()) return 0;
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  return n % 2 == 1 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
}

InjectedStall insert_host_stall(SyntheticRun& run, int64_t t, int64_t d) {
  t = between_calls(run, t);
  std::vector<Event>& events = run.trace.events;
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> calls;  // correlation -> launch call [start, end)
  for (const Event& e : events) {
    if (e.kind == EventKind::kApiCall && e.correlation != 0) calls.emplace(e.correlation, std::pair{e.start_ns, e.end_ns});
  }
  // Records launched at or after t move, in start order, by a non-decreasing amount: at least
  // d − slack (never before their launch call ends), and at least what the record before them
  // moved (stream order and cross-stream dependencies hold). The work queued before t hides the
  // first d − slack of the stall; where the GPU catches up with the host later, it waits.
  std::vector<size_t> moved;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!e.is_gpu_record() || e.correlation == 0) continue;
    auto it = calls.find(e.correlation);
    if (it != calls.end() && it->second.first >= t) moved.push_back(i);
  }
  std::sort(moved.begin(), moved.end(), [&](size_t a, size_t b) { return events[a].start_ns < events[b].start_ns; });
  std::vector<int64_t> gpu_shift(events.size(), 0);
  int64_t s = 0;
  int64_t first_shift = -1;
  for (size_t i : moved) {
    const int64_t slack = events[i].start_ns - calls.at(events[i].correlation).second;
    s = std::max(s, d - slack);
    if (first_shift < 0) first_shift = s;
    gpu_shift[i] = s;
  }

  const Shift host{t, d};
  std::unordered_map<int64_t, int64_t> copy_shift;  // original start of a moved copy -> its shift
  for (size_t i = 0; i < events.size(); ++i) {
    Event& e = events[i];
    if (e.is_gpu_record()) {
      if (e.kind == EventKind::kMemcpy && gpu_shift[i] != 0) copy_shift.emplace(e.start_ns, gpu_shift[i]);
      e.start_ns += gpu_shift[i];
      e.end_ns += gpu_shift[i];
    } else {
      host.apply_host(e);
    }
  }
  for (StepTruth& w : run.truth) std::tie(w.start_ns, w.end_ns) = host.window(w.start_ns, w.end_ns);
  rebuild_gpu_truth(run);
  move_host_truth(run, host);
  move_slow_copies(run, copy_shift);
  recompute_truth(run);
  return InjectedStall{step_holding(run, t), t, d, std::max<int64_t>(first_shift, 0)};
}

InjectedStall insert_gpu_delay(SyntheticRun& run, int64_t t, int64_t d) {
  const Shift all{t, d};
  std::unordered_map<int64_t, int64_t> copy_shift;
  for (Event& e : run.trace.events) {
    if (e.is_gpu_record()) {
      if (e.kind == EventKind::kMemcpy && e.start_ns >= t) copy_shift.emplace(e.start_ns, d);
      std::tie(e.start_ns, e.end_ns) = all.span(e.start_ns, e.end_ns);
    } else {
      all.apply_host(e);
    }
  }
  for (StepTruth& w : run.truth) std::tie(w.start_ns, w.end_ns) = all.window(w.start_ns, w.end_ns);
  rebuild_gpu_truth(run);
  move_host_truth(run, all);
  move_slow_copies(run, copy_shift);
  recompute_truth(run);
  return InjectedStall{step_holding(run, t), t, d, d};
}

std::vector<InjectedStall> inject_recompilation(SyntheticRun& run, const std::vector<int64_t>& steps, double factor) {
  const auto d = static_cast<int64_t>(std::llround(factor * double(median_step_ns(run))));
  std::vector<InjectedStall> out;
  for (int64_t step : steps) {
    const StepTruth w = truth_of(run, step);
    int64_t t = std::numeric_limits<int64_t>::max();
    int64_t first_start = std::numeric_limits<int64_t>::max();
    for (const Event& e : run.trace.events) {
      if (e.kind == EventKind::kApiCall && e.start_ns >= w.start_ns && e.start_ns < w.end_ns &&
          e.start_ns < first_start) {
        first_start = e.start_ns;
        t = e.end_ns;
      }
    }
    if (t == std::numeric_limits<int64_t>::max()) throw std::invalid_argument("step without CUDA calls");
    out.push_back(insert_host_stall(run, t, d));
  }
  return out;
}

std::vector<InjectedStall> inject_gc_pauses(SyntheticRun& run, const std::vector<int64_t>& steps, int64_t pause_ns,
                                            bool gc_ranges) {
  std::vector<InjectedStall> out;
  for (int64_t step : steps) {
    const StepTruth w = truth_of(run, step);
    const int64_t at = w.start_ns + w.duration_ns() * 4 / 10;
    int64_t t = std::numeric_limits<int64_t>::max();
    for (const Event& e : run.trace.events) {
      if (e.kind == EventKind::kApiCall && e.thread == run.config.host_thread && e.end_ns >= at && e.end_ns < t) {
        t = e.end_ns;
      }
    }
    const InjectedStall stall = insert_host_stall(run, t, pause_ns);
    if (gc_ranges) add_host_range(run, "gc", stall.host_start_ns, stall.host_start_ns + pause_ns);
    out.push_back(stall);
  }
  return out;
}

std::vector<InjectedStall> inject_checkpoints(SyntheticRun& run, const std::vector<int64_t>& steps,
                                              const CheckpointSpec& spec) {
  const WorkloadConfig& cfg = run.config;
  std::vector<InjectedStall> out;
  for (int64_t step : steps) {
    const StepTruth w = truth_of(run, step);
    int64_t t = -1;
    for (const Event& e : run.trace.events) {
      if (e.kind == EventKind::kRange && e.start_ns >= w.start_ns && e.start_ns < w.end_ns &&
          run.trace.names.view(e.name) == kOptimizerRange) {
        t = e.end_ns;
      }
    }
    if (t < 0) throw std::invalid_argument("step without an optimizer range");
    t = between_calls(run, t);

    // The first copy waits for the compute stream to drain the work queued before t.
    std::unordered_map<uint64_t, int64_t> call_start;
    for (const Event& e : run.trace.events) {
      if (e.kind == EventKind::kApiCall && e.correlation != 0) call_start.emplace(e.correlation, e.start_ns);
    }
    int64_t tail = 0;
    for (const Event& e : run.trace.events) {
      if (!e.is_gpu_record() || e.stream != cfg.compute_stream) continue;
      auto it = call_start.find(e.correlation);
      if (e.correlation == 0 || it == call_start.end() || it->second < t) tail = std::max(tail, e.end_ns);
    }
    struct Copy {
      int64_t call_start, call_end, copy_start, copy_end;
    };
    std::vector<Copy> copies;
    const auto copy_ns = std::max<int64_t>(1'000, std::llround(double(spec.bytes_per_copy) / spec.gb_per_s));
    int64_t now = t;
    for (int i = 0; i < spec.copies; ++i) {
      now += cfg.host_gap_ns;
      const int64_t issue = now + cfg.launch_call_ns;
      const int64_t start = std::max(issue, tail);
      const int64_t end = start + copy_ns;
      copies.push_back({now, end + cfg.return_latency_ns, start, end});
      tail = end;
      now = end + cfg.return_latency_ns;
    }
    const int64_t d = now + spec.write_ns - t;
    const InjectedStall stall = insert_host_stall(run, t, d);

    uint64_t correlation = next_correlation(run);
    const auto api_class = static_cast<uint8_t>(classify_api("cudaMemcpyAsync"));
    for (const Copy& c : copies) {
      Event& call = run.trace.add(EventKind::kApiCall, "cudaMemcpyAsync", c.call_start, c.call_end);
      call.thread = cfg.host_thread;
      call.detail = api_class;
      call.correlation = correlation;
      Event& r = run.trace.add(EventKind::kMemcpy, "Memcpy DtoH (Device -> Pageable)", c.copy_start, c.copy_end);
      r.device = cfg.device;
      r.stream = cfg.compute_stream;
      r.correlation = correlation++;
      r.bytes = spec.bytes_per_copy;
      r.detail = static_cast<uint8_t>(CopyKind::kDtoH);
      r.src_memory = MemoryKind::kDevice;
      r.dst_memory = MemoryKind::kPageable;
    }
    rebuild_gpu_truth(run);
    GroundTruthTimeline& tl = run.timeline;
    Spans blocking = tl.blocking;
    Spans transfer = tl.pageable_copy_transfer;
    for (const Copy& c : copies) {
      blocking.emplace_back(c.call_start, c.call_end);
      transfer.emplace_back(c.copy_start, c.call_end);
      tl.blocking_call_starts.push_back(c.call_start);
      // Each call returns only once its own copy (the last queued work) ran: the GPU queue is
      // empty, and the idle gap in progress when it returns is the call's fault (rule 2).
      auto it = std::upper_bound(tl.busy.begin(), tl.busy.end(), c.call_end,
                                 [](int64_t v, const auto& span) { return v < span.first; });
      if (it == tl.busy.begin() || it == tl.busy.end()) continue;
      const int64_t gap_start = std::prev(it)->second;
      if (gap_start <= c.call_end && gap_start >= c.call_start) tl.fault_idle.emplace_back(gap_start, it->first);
    }
    tl.blocking = merge_spans(std::move(blocking));
    tl.pageable_copy_transfer = merge_spans(std::move(transfer));
    tl.fault_idle = merge_spans(std::move(tl.fault_idle));
    std::sort(tl.blocking_call_starts.begin(), tl.blocking_call_starts.end());
    recompute_truth(run);
    out.push_back(stall);
  }
  return out;
}

std::vector<InjectedStall> inject_epoch_boundaries(SyntheticRun& run, const std::vector<int64_t>& steps,
                                                   int64_t respawn_ns) {
  std::vector<InjectedStall> out;
  for (int64_t step : steps) {
    const StepTruth w = truth_of(run, step);
    const InjectedStall stall = insert_host_stall(run, w.start_ns, respawn_ns);
    add_host_range(run, kDataLoaderRange, stall.host_start_ns, stall.host_start_ns + respawn_ns);
    Spans wait = run.timeline.data_wait;
    wait.emplace_back(stall.host_start_ns, stall.host_start_ns + respawn_ns);
    run.timeline.data_wait = merge_spans(std::move(wait));
    recompute_truth(run);
    out.push_back(stall);
  }
  return out;
}

std::vector<InjectedStall> inject_gpu_jitter(SyntheticRun& run, const std::vector<std::pair<int64_t, int64_t>>& delays) {
  std::vector<InjectedStall> out;
  for (const auto& [step, d] : delays) {
    if (d <= 0) continue;
    const StepTruth w = truth_of(run, step);
    const int64_t mid = w.start_ns + w.duration_ns() / 2;
    int64_t t = std::numeric_limits<int64_t>::max();
    for (const Event& e : run.trace.events) {
      if (e.is_gpu_record() && e.end_ns >= mid && e.end_ns < t) t = e.end_ns;
    }
    if (t >= w.end_ns) throw std::invalid_argument("no GPU record boundary in the second half of the step");
    out.push_back(insert_gpu_delay(run, t, d));
  }
  return out;
}

}  // namespace stepwatch::synthetic
