// analyze_step: the per-step timeline analysis over a Timeline (ARCHITECTURE.md "Timeline analysis
// of one step"): the unions clipped to the window, every idle gap attributed, the GPU records,
// API calls and blocking calls the detectors read.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/call_sites.h"
#include "core/host_activity.h"
#include "core/parallel.h"
#include "stepwatch/core/classify.h"
#include "stepwatch/core/stats.h"
#include "stepwatch/core/timeline.h"

namespace stepwatch {

namespace {

struct GapContext {
  const Timeline& tl;
  int64_t slack_ns;
};

constexpr uint32_t kNoThread = UINT32_MAX;

// Data-wait evidence inside [lo, hi): data ranges/phases on any thread, and `thread` (the one
// launching the work that ends the gap) blocked in an OS wait (Nsight's OSRT trace, the live
// host sampler: the main thread waiting on the DataLoader's queue).
IntervalSet data_evidence(const Timeline& tl, uint32_t thread, int64_t lo, int64_t hi) {
  IntervalSet data = tl.data_wait().clip(lo, hi);
  if (thread != kNoThread) data = data.unite(tl.os_waits_of(thread).clip(lo, hi));
  return data;
}

// Rule 3's host part of a gap: the moments of the window no data wait or launch call covers, on the
// thread that launched the work ending the gap (where "what ran instead" is looked up).
struct HostPart {
  IntervalSet set;
  uint32_t thread = 0;
};

// Attributes one idle gap. [a, b) is the real gap (may extend past the window);
// [lo, hi) is its part inside the window, the only part that is counted.
GapRecord attribute_gap(const GapContext& ctx, int64_t a, int64_t b, bool resumed, int64_t lo, int64_t hi,
                        HostPart& host) {
  const Timeline& tl = ctx.tl;
  GapRecord gap;
  gap.start_ns = a;
  gap.end_ns = b;
  gap.counted_ns = hi - lo;

  const Event* next = resumed ? tl.next_gpu_record(b) : nullptr;
  const Event* launcher = next ? tl.launcher_of(*next) : nullptr;

  // Rule 1: the work that ended the gap was queued before the GPU went idle: the GPU waited
  // on something else (a dependency, another stream, throttling) — not on the host. "Queued"
  // means its launch call had returned: a launch still in flight when the GPU drained is the
  // host's launch cost (rule 3), the signature of launch-bound loops.
  if (next && next->correlation != 0 && (launcher == nullptr || launcher->end_ns <= a)) {
    gap.rule = GapRule::kQueuedEarlier;
    gap.parts[IdleCause::kOther] = gap.counted_ns;
    return gap;
  }
  // Rule 2: the host sat in a blocking call while the GPU drained; the queue was empty when
  // the call returned. A blocking call that starts after the GPU is idle did not cause the gap.
  // Amended: the drained queue exposes whatever the host does next, so the part of the gap
  // covered by data-wait evidence is input (a tiny DtoH copy, then 140 ms of DataLoader, is
  // input starvation) — outside the blocking calls themselves, where the host was waiting on the
  // GPU whatever else its OS-wait trace shows (a blocking sync polls or sleeps in the driver).
  if (const Event* blocker = tl.blocking_call_spanning(a, ctx.slack_ns)) {
    gap.rule = GapRule::kHostBlocked;
    const uint32_t thread = launcher ? launcher->thread : blocker->thread;
    const IntervalSet data = data_evidence(tl, thread, lo, hi).subtract(tl.blocking().clip(lo, hi));
    gap.parts[IdleCause::kInput] = data.total_length();
    gap.parts[IdleCause::kSync] = gap.counted_ns - gap.parts[IdleCause::kInput];
    gap.blocking_call = std::string(display_name(tl.names().view(blocker->name)));
    return gap;
  }
  // Rule 3: split by what the host was doing: data wait, then launching, the rest is host time.
  gap.rule = GapRule::kHostActivity;
  const IntervalSet data = data_evidence(tl, launcher ? launcher->thread : kNoThread, lo, hi);
  const IntervalSet launches = (launcher ? tl.launches_of(launcher->thread) : tl.launches_all()).clip(lo, hi);
  const int64_t input_ns = data.total_length();
  const int64_t launch_ns = launches.total_length() - launches.intersect(data).total_length();
  gap.parts[IdleCause::kInput] = input_ns;
  gap.parts[IdleCause::kLaunch] = launch_ns;
  gap.parts[IdleCause::kHost] = gap.counted_ns - input_ns - launch_ns;
  if (gap.parts[IdleCause::kHost] > 0) {
    host.set = data.unite(launches).complement_within(lo, hi);
    host.thread = launcher ? launcher->thread : tl.main_launch_thread();
  }
  return gap;
}

// The heaviest activities of a name -> time tally, most first ("" for time no range covers).
std::vector<HostActivityStat> top_activities(const std::unordered_map<NameId, int64_t>& tally, const NameTable& names) {
  std::vector<std::pair<NameId, int64_t>> sorted(tally.begin(), tally.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  });
  if (sorted.size() > StepView::kTopHostActivity) sorted.resize(StepView::kTopHostActivity);
  std::vector<HostActivityStat> out;
  for (const auto& [name, ns] : sorted) {
    out.push_back({name == kNoName ? std::string() : std::string(display_name(names.view(name))), ns});
  }
  return out;
}

// An all-to-all kernel starting in the window (clipped to its end) and what it carries.
struct AllToAllKernel {
  Interval span;
  AllToAllPurpose purpose = AllToAllPurpose::kUnknown;
};

// The all-to-all layers of a window (StepView::all_to_all). `kernels`: the all-to-all kernels starting in it;
// `compute`: C clipped to it. Times are summed per kernel (the per-layer view), so concurrent
// all-to-alls count each; CollectiveStat keeps the union. Only the kernels of no named purpose are
// paired into dispatch/combine layers.
AllToAllStat all_to_all_layers(std::vector<AllToAllKernel> kernels, const IntervalSet& compute) {
  AllToAllStat a;
  std::sort(kernels.begin(), kernels.end(),
            [](const AllToAllKernel& x, const AllToAllKernel& y) { return x.span.start < y.span.start; });
  auto part_of = [&a](AllToAllPurpose p) -> AllToAllPart& {
    switch (p) {
      case AllToAllPurpose::kSparseFeatures:
      case AllToAllPurpose::kSparseFeaturesAhead: return a.sparse_features;
      case AllToAllPurpose::kEmbeddingsForward: return a.embeddings_forward;
      case AllToAllPurpose::kEmbeddingsBackward: return a.embeddings_backward;
      case AllToAllPurpose::kUnknown: break;
    }
    return a.layered;
  };
  const Interval* dispatch = nullptr;  // a layered kernel waiting for its combine
  for (const AllToAllKernel& kernel : kernels) {
    const Interval& k = kernel.span;
    const int64_t length = k.end - k.start;
    const int64_t exposed = length - compute.measure_within(k.start, k.end);
    ++a.kernels;
    a.a2a_ns += length;
    a.exposed_ns += exposed;
    AllToAllPart& part = part_of(kernel.purpose);
    ++part.kernels;
    part.ns += length;
    part.exposed_ns += exposed;
    a.sparse_features_ahead |= kernel.purpose == AllToAllPurpose::kSparseFeaturesAhead;
    if (kernel.purpose != AllToAllPurpose::kUnknown) continue;
    if (2 * exposed > length) ++a.exposed_kernels;
    a.max_exposed_ns = std::max(a.max_exposed_ns, exposed);
    // Dispatch, then combine: the experts ran in between.
    if (dispatch == nullptr) {
      dispatch = &k;
    } else {
      if (k.start > dispatch->end) a.expert_compute_ns += compute.measure_within(dispatch->end, k.start);
      dispatch = nullptr;
    }
  }
  a.layers = (a.layered.kernels + 1) / 2;
  return a;
}

// Samples come at <= 10 Hz: a step shorter than the period may hold none. Clocks, temperature and
// power move over hundreds of ms, so such a step takes the samples within one period around it.
constexpr int64_t kGpuSampleReachNs = 100'000'000;

// The NVML samples inside [s, e) (or within kGpuSampleReachNs of it when none lies inside) of the
// devices that ran GPU work there; all of them when no sample's device matches (a device unknown
// on either side).
GpuClockStat gpu_clocks_in(const Timeline& tl, int64_t s, int64_t e, const std::vector<int16_t>& devices) {
  GpuClockStat g;
  const auto samples = tl.gpu_samples();
  auto has_clock = [](const Timeline::GpuSample& x) { return x.metric == GpuMetric::kSmClockMhz; };
  {
    auto lo = std::lower_bound(samples.begin(), samples.end(), s,
                               [](const Timeline::GpuSample& x, int64_t t) { return x.t_ns < t; });
    auto hi = std::lower_bound(lo, samples.end(), e,
                               [](const Timeline::GpuSample& x, int64_t t) { return x.t_ns < t; });
    if (std::none_of(lo, hi, has_clock)) {
      s = s > INT64_MIN + kGpuSampleReachNs ? s - kGpuSampleReachNs : INT64_MIN;
      e = e < INT64_MAX - kGpuSampleReachNs ? e + kGpuSampleReachNs : INT64_MAX;
    }
  }
  auto first = std::lower_bound(samples.begin(), samples.end(), s,
                                [](const Timeline::GpuSample& x, int64_t t) { return x.t_ns < t; });
  auto last = std::lower_bound(first, samples.end(), e,
                               [](const Timeline::GpuSample& x, int64_t t) { return x.t_ns < t; });
  auto ran_work = [&](int16_t d) { return std::find(devices.begin(), devices.end(), d) != devices.end(); };
  const bool any_match = std::any_of(first, last, [&](const Timeline::GpuSample& x) { return ran_work(x.device); });
  std::vector<int64_t> clocks, power;
  for (auto it = first; it != last; ++it) {
    if (any_match && !ran_work(it->device)) continue;
    const auto value = static_cast<int64_t>(std::min<uint64_t>(it->value, INT64_MAX));
    switch (it->metric) {
      case GpuMetric::kSmClockMhz: clocks.push_back(value); break;
      case GpuMetric::kMaxSmClockMhz: g.max_sm_clock_mhz = std::max(g.max_sm_clock_mhz, value); break;
      case GpuMetric::kTemperatureC: g.temperature_max_c = std::max(g.temperature_max_c, value); break;
      case GpuMetric::kPowerMw: power.push_back(value); break;
      case GpuMetric::kClockEventReasons: g.clock_event_reasons |= it->value; break;
    }
  }
  g.samples = static_cast<int>(clocks.size());
  if (!clocks.empty()) g.sm_clock_min_mhz = *std::min_element(clocks.begin(), clocks.end());
  g.sm_clock_median_mhz = median_of(clocks);
  g.power_median_mw = median_of(power);
  return g;
}

}  // namespace

namespace {

// The unions clipped to the window: the breakdown's |C|, |N|, |N \ C|, |M|, |M \ (C ∪ N)|, the
// duty cycle, blocked idle and the host-side evidence measured in the window.
struct WindowSets {
  IntervalSet compute, busy;
};
WindowSets measure_unions(StepView& v, const Timeline& tl, int64_t s, int64_t e) {
  const IntervalSet c = tl.compute().clip(s, e);
  const IntervalSet n = tl.comm().clip(s, e);
  const IntervalSet m = tl.copy().clip(s, e);
  const IntervalSet busy = tl.busy().clip(s, e);
  const IntervalSet cn = c.unite(n);
  v.compute_ns = c.total_length();
  v.comm_ns = n.total_length();
  v.exposed_comm_ns = v.comm_ns - n.intersect(c).total_length();
  v.copy_ns = m.total_length();
  v.copy_only_ns = v.copy_ns - m.intersect(cn).total_length();
  v.busy_ns = busy.total_length();
  const IntervalSet blocked = tl.blocking().clip(s, e);
  v.blocked_idle_ns = blocked.total_length() - blocked.intersect(busy).total_length();
  v.data_wait_ns = tl.data_wait().measure_within(s, e);
  v.gc_ns = tl.gc().measure_within(s, e);
  return {c, busy};
}

// Every idle gap of the whole timeline that overlaps the window, attributed as a whole, its part
// inside the window counted.
void attribute_gaps(StepView& v, const Timeline& tl, int64_t s, int64_t e) {
  const GapContext ctx{tl, tl.config().sync_slack_ns};
  const auto parts = tl.busy().intervals();
  std::unordered_map<NameId, int64_t> long_gaps, dispatch_gaps;  // host part by innermost activity
  std::unordered_map<NameId, int64_t> long_gaps_python;           // ... by innermost user Python frame
  size_t i = tl.busy().first_ending_after(s);
  for (;;) {
    const bool has_prev = i > 0;
    const bool resumed = i < parts.size();
    const int64_t a = has_prev ? parts[i - 1].end : s;
    const int64_t b = resumed ? parts[i].start : e;
    const int64_t lo = std::max(a, s);
    const int64_t hi = std::min(b, e);
    if (hi > lo) {
      HostPart host;
      GapRecord gap =
          attribute_gap(ctx, has_prev ? a : std::min(a, s), resumed ? b : std::max(b, e), resumed, lo, hi, host);
      for (IdleCause cause : kIdleCauses) v.idle[cause] += gap.parts[cause];
      if (!host.set.empty()) {
        const bool dispatch = gap.end_ns - gap.start_ns <= StepView::kDispatchGapNs;
        tl.host_activity().measure(host.thread, host.set, dispatch ? dispatch_gaps : long_gaps);
        if (!dispatch && tl.has_call_sites()) tl.python_activity().measure(host.thread, host.set, long_gaps_python);
      }
      v.gaps.push_back(std::move(gap));
    }
    if (!resumed || parts[i].start >= e) break;
    ++i;
  }
  v.host_activity = top_activities(long_gaps, tl.names());
  v.dispatch_activity = top_activities(dispatch_gaps, tl.names());
  long_gaps_python.erase(kNoName);  // time in no user frame says nothing here
  for (HostActivityStat& a : top_activities(long_gaps_python, tl.names())) {
    a.name = site_text(a.name, false);
    v.host_python.push_back(std::move(a));
  }
}

// What the GPU records overlapping the window collect, before they are summarized.
struct GpuScan {
  std::map<CollectiveType, std::vector<Interval>> by_type;
  std::map<CollectiveType, uint64_t> bytes_by_type;
  std::vector<int64_t> kernel_ns;
  std::unordered_map<NameId, KernelStat> by_kernel;
  std::vector<AllToAllKernel> all_to_all;  // all-to-all kernels starting in the window
  std::vector<int16_t> devices;      // devices with GPU records in the window
};

// Kernels and copies overlapping the window. GPU records are bounded in length, so the scan
// starts at most one maximal record length before the window.
GpuScan scan_gpu_records(StepView& v, const Timeline& tl, int64_t s, int64_t e) {
  GpuScan g;
  const auto gpu = tl.gpu_by_start();
  const auto events = tl.events();
  auto first = std::lower_bound(gpu.begin(), gpu.end(), s - tl.max_gpu_duration_ns(),
                                [&](uint32_t idx, int64_t t) { return events[idx].start_ns < t; });
  for (auto it = first; it != gpu.end() && events[*it].start_ns < e; ++it) {
    const Event& r = events[*it];
    if (r.end_ns <= s) continue;
    if (std::find(g.devices.begin(), g.devices.end(), r.device) == g.devices.end()) g.devices.push_back(r.device);
    if (r.kind == EventKind::kMemcpy && r.start_ns >= s) {
      v.copies.push_back(CopyRecord{r.copy_kind(), r.src_memory, r.dst_memory, r.bytes, r.start_ns, r.duration_ns(),
                                    r.has_flag(event_flags::kAsync)});
    }
    if (r.kind != EventKind::kKernel) continue;
    if (r.is_comm_kernel()) g.by_type[r.collective].push_back({std::max(r.start_ns, s), std::min(r.end_ns, e)});
    if (r.is_comm_kernel() && r.start_ns >= s) g.bytes_by_type[r.collective] += r.bytes;
    if (r.start_ns < s) continue;
    if (r.is_comm_kernel() && tl.is_all_to_all(r)) {
      g.all_to_all.push_back({{r.start_ns, std::min(r.end_ns, e)}, tl.all_to_all_purpose(r)});
    }
    ++v.kernels;
    if (const Event* launch = tl.launcher_of(r)) {
      ++v.launched_kernels;
      v.prompt_kernels += r.start_ns - launch->end_ns <= StepView::kPromptStartNs ? 1 : 0;
    }
    g.kernel_ns.push_back(r.duration_ns());
    KernelStat& k = g.by_kernel[r.name];
    ++k.count;
    k.total_ns = sat_add(k.total_ns, r.duration_ns());
    if (r.is_compute_kernel() && tl.comm().measure_within(r.start_ns, r.end_ns) > 0) {
      ++k.overlapped_count;
      k.overlapped_total_ns = sat_add(k.overlapped_total_ns, r.duration_ns());
    }
  }
  return g;
}

// The scan's kernels (median, heaviest names), copies (largest, exposed part), collectives (by
// type, most exposed first), all-to-all layers and the GPU clock samples of the window.
void summarize_gpu_records(StepView& v, GpuScan& g, const Timeline& tl, const IntervalSet& c, int64_t s, int64_t e) {
  if (!g.kernel_ns.empty()) {
    auto mid = g.kernel_ns.begin() + static_cast<std::ptrdiff_t>(g.kernel_ns.size() / 2);
    std::nth_element(g.kernel_ns.begin(), mid, g.kernel_ns.end());
    v.median_kernel_ns = *mid;
  }
  for (auto& [name, k] : g.by_kernel) {
    k.name = std::string(tl.names().view(name));
    v.top_kernels.push_back(std::move(k));
  }
  std::sort(v.top_kernels.begin(), v.top_kernels.end(),
            [](const KernelStat& x, const KernelStat& y) { return x.total_ns > y.total_ns; });
  if (v.top_kernels.size() > StepView::kTopKernels) v.top_kernels.resize(StepView::kTopKernels);
  std::sort(v.copies.begin(), v.copies.end(), [](const CopyRecord& x, const CopyRecord& y) { return x.bytes > y.bytes; });
  if (v.copies.size() > StepView::kMaxCopies) v.copies.resize(StepView::kMaxCopies);
  for (CopyRecord& cp : v.copies) {
    const int64_t end = cp.start_ns + cp.duration_ns;
    const IntervalSet kernels = tl.compute().clip(cp.start_ns, end).unite(tl.comm().clip(cp.start_ns, end));
    cp.exposed_ns = cp.duration_ns - kernels.total_length();
  }
  for (auto& [type, list] : g.by_type) {
    const IntervalSet set = IntervalSet::from_unsorted(std::move(list));
    CollectiveStat stat;
    stat.type = type;
    stat.kernels = static_cast<int>(set.size());
    stat.busy_ns = set.total_length();
    stat.exposed_ns = stat.busy_ns - set.intersect(c).total_length();
    stat.bytes = g.bytes_by_type[type];
    v.collectives.push_back(stat);
  }
  std::sort(v.collectives.begin(), v.collectives.end(),
            [](const CollectiveStat& x, const CollectiveStat& y) { return x.exposed_ns > y.exposed_ns; });
  v.all_to_all = all_to_all_layers(std::move(g.all_to_all), c);
  if (!tl.gpu_samples().empty()) v.gpu_clocks = gpu_clocks_in(tl, s, e, g.devices);
}

// Launch calls and allocation calls starting in the window, and the tracer's allocation records.
void scan_api_calls(StepView& v, const Timeline& tl, int64_t s, int64_t e) {
  const auto events = tl.events();
  const auto api = tl.api_by_start();
  auto api_first = std::lower_bound(api.begin(), api.end(), s,
                                    [&](uint32_t idx, int64_t t) { return events[idx].start_ns < t; });
  for (auto it = api_first; it != api.end() && events[*it].start_ns < e; ++it) {
    const Event& call = events[*it];
    if (call.api_class() == ApiClass::kLaunch) {
      ++v.launches;
      v.launch_api_ns += std::min(call.end_ns, e) - call.start_ns;
    } else if (call.api_class() == ApiClass::kMalloc || call.api_class() == ApiClass::kFree) {
      AllocationStat& a = v.allocations;
      ++a.calls;
      a.host_ns += call.duration_ns();
      a.gpu_idle_ns += call.duration_ns() - tl.busy().measure_within(call.start_ns, call.end_ns);
      if (call.duration_ns() > a.max_call_ns) {
        a.max_call_ns = call.duration_ns();
        a.slowest_call = std::string(display_name(tl.names().view(call.name)));
      }
    }
  }
  const auto allocs = tl.allocations_by_start();
  auto alloc_first = std::lower_bound(allocs.begin(), allocs.end(), s,
                                      [&](uint32_t idx, int64_t t) { return events[idx].start_ns < t; });
  for (auto it = alloc_first; it != allocs.end() && events[*it].start_ns < e; ++it) {
    ++v.allocations.driver_events;
    if (events[*it].detail == 1) v.allocations.bytes += events[*it].bytes;
  }
}

// Blocking calls overlapping the window, grouped by name, most GPU idle first.
void group_blocking_calls(StepView& v, const Timeline& tl, const WindowSets& w, int64_t s, int64_t e) {
  const auto events = tl.events();
  std::map<std::string, BlockingCallStat> by_name;
  // Per (site, call): the stat and, per blocking call name, its GPU idle (the row names the worst).
  struct SiteAcc {
    CallSiteStat stat;
    std::map<std::string, int64_t> idle_by_call;
  };
  std::map<std::pair<std::string, std::string>, SiteAcc> by_site;
  const bool sites = tl.has_call_sites();
  std::map<uint32_t, int64_t> outer_end_by_thread;
  for (uint32_t idx : tl.blocking_overlapping(s, e)) {
    const Event& call = events[idx];
    if (!tl.counts_as_sync(idx)) continue;
    if (call.start_ns >= s) ++v.syncs;
    const int64_t lo = std::max(call.start_ns, s);
    const int64_t hi = std::min(call.end_ns, e);
    // One row per call as a user knows it: cudaMemcpy_v3020 (older nsys exports) is cudaMemcpy.
    const std::string name(display_name(tl.names().view(call.name)));
    BlockingCallStat& stat = by_name[name];
    stat.name = name;
    stat.api_class = call.kind == EventKind::kApiCall ? call.api_class() : ApiClass::kStreamSync;
    ++stat.count;
    stat.host_ns += std::max<int64_t>(0, hi - lo);
    const int64_t idle_ns = std::max<int64_t>(0, hi - lo) - w.busy.measure_within(lo, hi);
    stat.gpu_idle_ns += idle_ns;
    // A driver call inside the runtime call that made it is the same host wait: sited once.
    bool nested = false;
    if (sites) {
      int64_t& outer_end = outer_end_by_thread[call.thread];
      nested = call.thread != 0 && call.end_ns <= outer_end;
      if (!nested) outer_end = std::max(outer_end, call.end_ns);
    }
    if (sites && !nested) {
      if (std::optional<CallSite> site = tl.call_site_of(call)) {
        SiteAcc& acc = by_site[{std::move(site->where), std::move(site->call)}];
        ++acc.stat.calls;
        acc.stat.host_ns += std::max<int64_t>(0, hi - lo);
        acc.stat.gpu_idle_ns += idle_ns;
        acc.idle_by_call[name] += idle_ns + 1;  // +1: a call of no idle still names the row
      }
    }
    stat.no_compute_ns += std::max<int64_t>(0, hi - lo) - w.compute.measure_within(lo, hi);
    const Event* cp = tl.copy_of(call);
    const int64_t transfer_from = cp ? std::max(lo, cp->start_ns) : lo;
    if (hi > transfer_from) {
      stat.transfer_no_compute_ns += (hi - transfer_from) - w.compute.measure_within(transfer_from, hi);
    }
    if (cp) {
      stat.bytes += cp->bytes;
      stat.copy_gpu_ns += cp->duration_ns();
      stat.copy_kind = cp->copy_kind();
      stat.host_memory = host_side_memory(*cp);
    }
  }
  for (auto& [name, stat] : by_name) v.blocking.push_back(std::move(stat));
  std::sort(v.blocking.begin(), v.blocking.end(),
            [](const BlockingCallStat& x, const BlockingCallStat& y) { return x.gpu_idle_ns > y.gpu_idle_ns; });
  if (sites) {
    // Rule 2's drain gaps: the GPU idle after a blocking call returned, until the host queued work
    // again, is that call's cost too (hidden_sync counts it) — the site that made it carries it.
    for (const GapRecord& g : v.gaps) {
      if (g.rule != GapRule::kHostBlocked || g.parts[IdleCause::kSync] <= 0) continue;
      const Event* blocker = tl.blocking_call_spanning(g.start_ns, tl.config().sync_slack_ns);
      if (blocker == nullptr) continue;
      std::optional<CallSite> site = tl.call_site_of(*blocker);
      if (!site) continue;
      const int64_t from = std::max({blocker->end_ns, g.start_ns, s});
      const int64_t after = std::min(std::max<int64_t>(0, std::min(g.end_ns, e) - from), g.parts[IdleCause::kSync]);
      SiteAcc& acc = by_site[{std::move(site->where), std::move(site->call)}];
      acc.stat.calls = std::max(acc.stat.calls, 1);  // made before the window: still the call behind it
      acc.stat.gpu_idle_ns += after;
      acc.idle_by_call[std::string(display_name(tl.names().view(blocker->name)))] += after;
    }
  }
  for (auto& [key, acc] : by_site) {
    acc.stat.where = key.first;
    acc.stat.call = key.second;
    acc.stat.blocking_call = std::max_element(acc.idle_by_call.begin(), acc.idle_by_call.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; })->first;
    v.blocking_sites.push_back(std::move(acc.stat));
  }
  std::sort(v.blocking_sites.begin(), v.blocking_sites.end(), [](const CallSiteStat& x, const CallSiteStat& y) {
    return x.gpu_idle_ns != y.gpu_idle_ns ? x.gpu_idle_ns > y.gpu_idle_ns : x.host_ns > y.host_ns;
  });
  if (v.blocking_sites.size() > StepView::kTopSites) v.blocking_sites.resize(StepView::kTopSites);
}

}  // namespace

StepView analyze_step(const StepWindow& window, const Timeline& tl, int rank) {
  StepView v;
  v.rank = rank;
  v.step = window.number;
  v.start_ns = window.start_ns;
  v.end_ns = window.end_ns;
  v.source = window.source;
  const int64_t s = window.start_ns;
  const int64_t e = window.end_ns;
  if (e <= s) return v;
  const WindowSets sets = measure_unions(v, tl, s, e);
  attribute_gaps(v, tl, s, e);
  GpuScan gpu = scan_gpu_records(v, tl, s, e);
  summarize_gpu_records(v, gpu, tl, sets.compute, s, e);
  scan_api_calls(v, tl, s, e);
  group_blocking_calls(v, tl, sets, s, e);
  return v;
}

std::vector<StepView> analyze_steps(std::span<const StepWindow> windows, const Timeline& tl, int rank,
                                    unsigned threads) {
  std::vector<StepView> views(windows.size());
  parallel::for_each_index(windows.size(), threads, [&](size_t i) { views[i] = analyze_step(windows[i], tl, rank); });
  return views;
}

namespace {

// HTA drops the last step: only kernels launched before the last ProfilerStep begins count.
// `launcher` finds a kernel's launching call (nullptr when the data has none).
template <typename Launcher>
double comm_comp_overlap_pct(std::span<const Event> events, Launcher launcher, const Segmentation& seg) {
  int64_t cutoff = std::numeric_limits<int64_t>::max();
  // Inferred steps are ours, not HTA's: HTA sees no steps there and keeps the whole trace.
  if (seg.source != StepSource::kWholeTrace && seg.source != StepSource::kInferred && !seg.steps.empty()) cutoff = seg.steps.back().start_ns;
  auto counted = [&](const Event& k) {
    const Event* l = launcher(k);
    return l != nullptr && l->start_ns < cutoff;
  };
  // Comm first: without it there is no overlap to measure, and no compute set to build.
  std::vector<Interval> comm;
  for (const Event& k : events) {
    if (k.kind == EventKind::kKernel && k.is_comm_kernel() && counted(k)) comm.push_back({k.start_ns, k.end_ns});
  }
  const IntervalSet n = IntervalSet::from_unsorted(std::move(comm));
  if (n.total_length() == 0) return std::nan("");
  std::vector<Interval> compute;
  for (const Event& k : events) {
    if (k.kind == EventKind::kKernel && !k.is_comm_kernel() && counted(k)) compute.push_back({k.start_ns, k.end_ns});
  }
  const IntervalSet c = IntervalSet::from_unsorted(std::move(compute));
  return 100.0 * double(n.intersect(c).total_length()) / double(n.total_length());
}

}  // namespace

double hta_comm_comp_overlap_pct(const Timeline& tl, const Segmentation& seg) {
  return comm_comp_overlap_pct(tl.events(), [&](const Event& k) { return tl.launcher_of(k); }, seg);
}

double hta_comm_comp_overlap_pct(std::span<const Event> events, const CorrelationIndex& calls, const Segmentation& seg) {
  return comm_comp_overlap_pct(events, [&](const Event& k) { return calls.find(events, k.correlation); }, seg);
}

}  // namespace stepwatch
