#include "synthetic/transforms_c.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdint>
#include <stdexcept>
#include <tuple>

namespace stepwatch::synthetic {
namespace {

// A start at x moves by Σ extra over anchors <= x, an end at x by Σ extra over anchors < x:
// what starts at an anchor moves, what ends there stays, what spans it stretches.
struct Warp {
  std::vector<int64_t> anchors;  // sorted
  std::vector<int64_t> prefix;   // prefix[k] = Σ extra of the first k anchors

  int64_t start(int64_t x) const {
    return x + prefix[static_cast<size_t>(std::upper_bound(anchors.begin(), anchors.end(), x) - anchors.begin())];
  }
  int64_t end(int64_t x) const {
    return x + prefix[static_cast<size_t>(std::lower_bound(anchors.begin(), anchors.end(), x) - anchors.begin())];
  }
  std::pair<int64_t, int64_t> span(int64_t a, int64_t b) const {
    const int64_t s = start(a);
    return {s, std::max(s, end(b))};
  }
  void spans(Spans& v) const {
    for (auto& [a, b] : v) std::tie(a, b) = span(a, b);
  }
  void points(std::vector<int64_t>& v) const {
    for (int64_t& x : v) x = start(x);
  }
};

int64_t step_of_gpu_start(const SyntheticRun& run, int64_t t) {
  for (const StepTruth& s : run.truth) {
    if (s.start_ns <= t && t < s.end_ns) return s.step;
  }
  return -1;
}

int64_t stretched(int64_t ns, double factor) { return static_cast<int64_t>(std::llround(double(ns) * (factor - 1.0))); }

}  // namespace

namespace {

// Applies the stretches of records `which` (parallel to `st`) and reports each by the step its
// record starts in after the transform.
std::vector<InjectedSlowdown> finish(SyntheticRun& run, std::vector<Stretch> st, const std::vector<size_t>& which) {
  std::vector<int64_t> extra;
  for (const Stretch& x : st) extra.push_back(x.extra_ns);
  apply_stretches(run, std::move(st));
  std::vector<InjectedSlowdown> out;
  for (size_t k = 0; k < which.size(); ++k) {
    const Event& e = run.trace.events[which[k]];
    out.push_back({step_of_gpu_start(run, e.start_ns), std::string(run.trace.names.view(e.name)), extra[k],
                   e.is_comm_kernel()});
  }
  return out;
}

}  // namespace

void apply_stretches(SyntheticRun& run, std::vector<Stretch> stretches) {
  std::sort(stretches.begin(), stretches.end(), [](const Stretch& a, const Stretch& b) { return a.anchor_ns < b.anchor_ns; });
  Warp w;
  w.prefix.push_back(0);
  for (const Stretch& s : stretches) {
    w.anchors.push_back(s.anchor_ns);
    w.prefix.push_back(w.prefix.back() + s.extra_ns);
  }
  for (Event& e : run.trace.events) std::tie(e.start_ns, e.end_ns) = w.span(e.start_ns, e.end_ns);
  for (StepTruth& t : run.truth) std::tie(t.start_ns, t.end_ns) = w.span(t.start_ns, t.end_ns);
  GroundTruthTimeline& g = run.timeline;
  // Host spans warp; GPU spans are rebuilt from the records (a merged span hides the record
  // boundaries an anchor may sit on).
  for (Spans* s : {&g.data_wait, &g.blocking, &g.fault_idle, &g.dispatch, &g.host_work, &g.sync_copy_transfer,
                   &g.pageable_copy_transfer, &g.allocator_calls}) {
    w.spans(*s);
  }
  w.points(g.blocking_call_starts);
  Spans compute, comm, copy;
  g.compute_kernel_starts.clear();
  g.comm_kernel_starts.clear();
  for (const Event& e : run.trace.events) {
    if (e.kind == EventKind::kKernel) {
      (e.is_comm_kernel() ? comm : compute).emplace_back(e.start_ns, e.end_ns);
      (e.is_comm_kernel() ? g.comm_kernel_starts : g.compute_kernel_starts).push_back(e.start_ns);
    } else if (e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset) {
      copy.emplace_back(e.start_ns, e.end_ns);
    }
  }
  g.compute = merge_spans(std::move(compute));
  g.comm = merge_spans(std::move(comm));
  g.copy = merge_spans(std::move(copy));
  g.busy = unite_spans(unite_spans(g.compute, g.comm), g.copy);
  std::sort(g.compute_kernel_starts.begin(), g.compute_kernel_starts.end());
  std::sort(g.comm_kernel_starts.begin(), g.comm_kernel_starts.end());
  for (GroundTruthTimeline::SlowCopy& c : g.slow_h2d) {
    const auto [s, e] = w.span(c.start_ns, c.start_ns + c.duration_ns);
    c.start_ns = s;
    c.duration_ns = e - s;
  }
  for (StepTruth& t : run.truth) t = run.truth_for_window(t.start_ns, t.end_ns, t.step);
}

std::vector<InjectedSlowdown> inject_throttle(SyntheticRun& run, int64_t from_step, double factor) {
  std::vector<Stretch> st;
  std::vector<size_t> which;
  for (size_t i = 0; i < run.trace.events.size(); ++i) {
    const Event& e = run.trace.events[i];
    if (!e.is_compute_kernel() || step_of_gpu_start(run, e.start_ns) < from_step) continue;
    st.push_back({e.start_ns + 1, stretched(e.duration_ns(), factor)});
    which.push_back(i);
  }
  return finish(run, std::move(st), which);
}

std::vector<InjectedSlowdown> inject_overlap_slowdown(SyntheticRun& run, double factor) {
  Spans comm;
  for (const Event& e : run.trace.events) {
    if (e.is_comm_kernel()) comm.emplace_back(e.start_ns, e.end_ns);
  }
  comm = merge_spans(std::move(comm));
  std::vector<Stretch> st;
  std::vector<size_t> which;
  for (size_t i = 0; i < run.trace.events.size(); ++i) {
    const Event& e = run.trace.events[i];
    if (!e.is_compute_kernel() || total_length(clip_spans(comm, e.start_ns, e.end_ns)) == 0) continue;
    st.push_back({e.start_ns + 1, stretched(e.duration_ns(), factor)});
    which.push_back(i);
  }
  return finish(run, std::move(st), which);
}

std::vector<InjectedSlowdown> inject_straggler(SyntheticRun& run, const std::vector<int64_t>& steps, double factor) {
  std::vector<std::pair<int64_t, int64_t>> compute;  // compute kernel [start, end), sorted
  for (const Event& e : run.trace.events) {
    if (e.is_compute_kernel()) compute.emplace_back(e.start_ns, e.end_ns);
  }
  std::sort(compute.begin(), compute.end());
  std::vector<Stretch> st;
  std::vector<size_t> which;
  for (size_t i = 0; i < run.trace.events.size(); ++i) {
    const Event& e = run.trace.events[i];
    if (!e.is_comm_kernel()) continue;
    const int64_t step = step_of_gpu_start(run, e.start_ns);
    if (std::find(steps.begin(), steps.end(), step) == steps.end()) continue;
    // The anchor: the end of the compute kernel running at the collective's start (or its start).
    int64_t anchor = e.start_ns + 1;
    auto it = std::upper_bound(compute.begin(), compute.end(), std::pair{e.start_ns, INT64_MAX});
    if (it != compute.begin() && std::prev(it)->second > e.start_ns) anchor = std::prev(it)->second;
    if (anchor >= e.end_ns) anchor = e.start_ns + 1;
    st.push_back({anchor, stretched(e.duration_ns(), factor)});
    which.push_back(i);
  }
  if (which.empty()) throw std::invalid_argument("no NCCL kernel starts in the listed steps");
  return finish(run, std::move(st), which);
}

void remove_ranges(SyntheticRun& run, std::string_view name) {
  std::erase_if(run.trace.events,
                [&](const Event& e) { return e.kind == EventKind::kRange && run.trace.names.view(e.name) == name; });
}

}  // namespace stepwatch::synthetic
