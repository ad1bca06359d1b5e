#include "stepwatch/core/timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>

#include "core/call_sites.h"
#include "core/host_activity.h"
#include "core/parallel.h"
#include "stepwatch/core/classify.h"
#include "stepwatch/core/stats.h"

namespace stepwatch {
namespace {

const IntervalSet kEmptySet;

}  // namespace

Timeline::~Timeline() = default;

std::optional<CallSite> Timeline::call_site_of(const Event& call) const {
  return call_sites_->site_of(call, main_launch_thread_, events_, names_);
}

bool Timeline::has_call_sites() const { return !call_sites_->empty(); }

Timeline::Timeline(std::span<const Event> events, const NameTable& names, const AnalysisConfig& config,
                   unsigned threads)
    : events_(events), names_(names), config_(config), host_activity_(std::make_unique<HostActivityIndex>()),
      call_sites_(std::make_unique<CallSiteIndex>()),
      python_activity_(std::make_unique<HostActivityIndex>()) {
  std::vector<Interval> compute, comm, copy, data, gc, module_loading;
  std::unordered_map<uint32_t, std::vector<Interval>> os_waits;
  std::unordered_map<uint32_t, std::vector<Interval>> all_to_all_ranges;
  std::array<std::unordered_map<uint32_t, std::vector<Interval>>, kAllToAllPurposes> purpose_ranges;
  {
    // Exact sizes first: an index grown by doubling holds up to twice its entries, and offline
    // the Timeline is the largest structure after the events themselves.
    size_t n_compute = 0, n_comm = 0, n_copy = 0, n_api = 0, n_alloc = 0, n_range = 0, n_frame = 0;
    for (const Event& e : events) {
      n_compute += e.is_compute_kernel();
      n_comm += e.is_comm_kernel();
      n_copy += e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset;
      n_api += e.kind == EventKind::kApiCall;
      n_alloc += e.kind == EventKind::kAllocation;
      n_range += e.kind == EventKind::kRange;
      n_frame += e.kind == EventKind::kPythonFrame;
    }
    host_activity_->reserve(n_api + n_range);  // an upper bound: some ranges are not activity
    python_activity_->reserve(n_frame);
    compute.reserve(n_compute);
    comm.reserve(n_comm);
    copy.reserve(n_copy);
    gpu_by_start_.reserve(n_compute + n_comm + n_copy);
    api_by_start_.reserve(n_api);
    api_by_correlation_.reserve(n_api);
    alloc_by_start_.reserve(n_alloc);
  }
  const std::regex data_pattern(config.data_pattern, std::regex::ECMAScript | std::regex::optimize);
  const std::regex step_pattern(config.step_pattern, std::regex::ECMAScript | std::regex::optimize);
  // Per name: whether a host range is data-wait evidence, and whether it names host activity (not
  // a step range, whose self time is the unannotated rest of the step).
  struct RangeRole {
    bool data = false;
    bool activity = false;
    AllToAllPurpose purpose = AllToAllPurpose::kUnknown;  // an all-to-all launched inside it carries this
  };
  std::unordered_map<NameId, RangeRole> range_role;
  std::unordered_map<NameId, bool> user_frame;  // per frame name: the program's own code
  std::unordered_map<NameId, bool> overhead_loads;  // per overhead name: lazy module loading

  for (uint32_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    switch (e.kind) {
      case EventKind::kKernel:
        (e.is_comm_kernel() ? comm : compute).push_back({e.start_ns, e.end_ns});
        gpu_by_start_.push_back(i);
        break;
      case EventKind::kMemcpy:
        copy_by_correlation_.add(events, i);
        [[fallthrough]];
      case EventKind::kMemset:
        copy.push_back({e.start_ns, e.end_ns});
        gpu_by_start_.push_back(i);
        break;
      case EventKind::kApiCall:
        api_by_start_.push_back(i);
        api_by_correlation_.add(events, i);
        host_activity_->add(e.thread, e.start_ns, e.end_ns, e.name);
        break;
      case EventKind::kRange: {
        if (e.has_flag(event_flags::kOnDevice)) break;
        if (names.view(e.name).substr(0, kGpuSamplePrefix.size()) == kGpuSamplePrefix) {
          // An NVML sample, not host activity; 0 is "no reading" (gpu_samples.h).
          const auto metric = gpu_metric_of(names.view(e.name));
          if (metric && e.bytes != 0) gpu_samples_.push_back({e.start_ns, e.bytes, e.device, *metric});
          break;
        }
        auto [it, inserted] = range_role.try_emplace(e.name);
        if (inserted) {
          const std::string_view n = names.view(e.name);
          it->second.data = std::regex_search(n.begin(), n.end(), data_pattern);
          it->second.activity = !it->second.data && n.substr(0, 5) != "osrt:" &&
                                !std::regex_search(n.begin(), n.end(), step_pattern);
          it->second.purpose = stepwatch::all_to_all_purpose(n);
        }
        if (it->second.purpose != AllToAllPurpose::kUnknown) {
          purpose_ranges[static_cast<size_t>(it->second.purpose)][e.thread].push_back({e.start_ns, e.end_ns});
        }
        if (it->second.data) data.push_back({e.start_ns, e.end_ns});
        if (it->second.activity) host_activity_->add(e.thread, e.start_ns, e.end_ns, e.name);
        if (names.view(e.name) == "gc") gc.push_back({e.start_ns, e.end_ns});
        if (names.view(e.name).substr(0, 5) == "osrt:") os_waits[e.thread].push_back({e.start_ns, e.end_ns});
        if (e.collective == CollectiveType::kAllToAll ||
            (e.collective == CollectiveType::kNone && names.view(e.name).substr(0, 4) == "nccl" &&
             classify_collective(names.view(e.name)) == CollectiveType::kAllToAll)) {
          all_to_all_ranges[e.thread].push_back({e.start_ns, e.end_ns});
        }
        break;
      }
      case EventKind::kAllocation:
        alloc_by_start_.push_back(i);
        break;
      case EventKind::kOverhead: {
        auto [it, inserted] = overhead_loads.try_emplace(e.name, false);
        if (inserted) it->second = is_module_loading_overhead(names.view(e.name));
        if (it->second) module_loading.push_back({e.start_ns, e.end_ns});
        break;
      }
      case EventKind::kPythonFrame: {
        call_sites_->add(i);
        // The program's own functions, for what the host was doing in host-bound gaps (a live
        // frame spans only its blocking call: it says nothing about the gaps).
        if (e.correlation != 0 || e.has_flag(event_flags::kNativeSite)) break;
        auto [it, inserted] = user_frame.try_emplace(e.name, false);
        if (inserted) it->second = frame_role(names.view(e.name)) == FrameRole::kUser;
        if (it->second) python_activity_->add(e.thread, e.start_ns, e.end_ns, e.name);
        break;
      }
      default:
        break;
    }
  }
  // What follows reads none of the host-activity indexes: with a second thread, those (a sort of
  // every call and range) are built meanwhile.
  auto build_rest = [&] {
    api_by_correlation_.build(events);
    copy_by_correlation_.build(events);
    compute_ = IntervalSet::from_unsorted(std::move(compute));
    comm_ = IntervalSet::from_unsorted(std::move(comm));
    copy_ = IntervalSet::from_unsorted(std::move(copy));
    busy_is_compute_ = comm_.empty() && copy_.empty();
    if (!busy_is_compute_) busy_ = compute_.unite(comm_).unite(copy_);
    data_wait_ = IntervalSet::from_unsorted(std::move(data));
    gc_ = IntervalSet::from_unsorted(std::move(gc));
    module_loading_ = IntervalSet::from_unsorted(std::move(module_loading));
    for (auto& [thread, list] : os_waits) {
      os_waits_by_thread_.emplace(thread, IntervalSet::from_unsorted(std::move(list)));
    }
    for (auto& [thread, list] : all_to_all_ranges) {
      all_to_all_ranges_.emplace(thread, IntervalSet::from_unsorted(std::move(list)));
    }
    for (size_t p = 0; p < purpose_ranges.size(); ++p) {
      for (auto& [thread, list] : purpose_ranges[p]) {
        purpose_ranges_[p].emplace(thread, IntervalSet::from_unsorted(std::move(list)));
      }
    }

    // Index lists built in event order are already sorted when the events are (the usual case).
    auto by_start = [&](uint32_t a, uint32_t b) { return events[a].start_ns < events[b].start_ns; };
    auto sort_index = [&](std::vector<uint32_t>& v) {
      if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
    };
    sort_index(gpu_by_start_);
    sort_index(api_by_start_);
    sort_index(alloc_by_start_);
    std::stable_sort(gpu_samples_.begin(), gpu_samples_.end(),
                     [](const GpuSample& x, const GpuSample& y) { return x.t_ns < y.t_ns; });

    // Blocking calls (rule 2 and B) and enqueue calls (rule 3's launch evidence).
    api_blocks_.assign(events.size(), 0);
    std::vector<Interval> blocking;
    std::vector<Interval> launch_all;
    std::unordered_map<uint32_t, std::vector<Interval>> launch_by_thread;
    bool several_launchers = false;
    {
      // Exact sizes first (one launch per kernel: these are as large as the kernel sets).
      std::unordered_map<uint32_t, size_t> per_thread;
      size_t n_launch = 0;
      for (uint32_t i : api_by_start_) {
        if (is_enqueue(events[i].api_class())) {
          ++n_launch;
          ++per_thread[events[i].thread];
        }
      }
      several_launchers = per_thread.size() > 1;
      if (several_launchers) launch_all.reserve(n_launch);
      for (const auto& [thread, n] : per_thread) launch_by_thread[thread].reserve(n);
    }
    for (uint32_t i : api_by_start_) {
      const Event& e = events[i];
      if (is_blocking_call(e)) {
        api_blocks_[i] = 1;
        blocking_by_start_.push_back(i);
        blocking.push_back({e.start_ns, e.end_ns});
      } else if (is_enqueue(e.api_class())) {
        if (several_launchers) launch_all.push_back({e.start_ns, e.end_ns});
        launch_by_thread[e.thread].push_back({e.start_ns, e.end_ns});
      }
    }
    // CUPTI synchronization records are host-side waits too; a call recorded both ways only
    // adds the same interval twice to a union.
    for (uint32_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      if (e.kind == EventKind::kSync && e.sync_kind() != SyncKind::kStreamWaitEvent) {
        api_blocks_[i] = 1;
        blocking_by_start_.push_back(i);
        blocking.push_back({e.start_ns, e.end_ns});
      }
    }
    sort_index(blocking_by_start_);
    blocking_end_prefix_max_.resize(blocking_by_start_.size());
    blocking_argmax_.resize(blocking_by_start_.size());
    for (size_t k = 0; k < blocking_by_start_.size(); ++k) {
      const Event& e = events[blocking_by_start_[k]];
      if (k == 0 || e.end_ns > blocking_end_prefix_max_[k - 1]) {
        blocking_end_prefix_max_[k] = e.end_ns;
        blocking_argmax_[k] = blocking_by_start_[k];
      } else {
        blocking_end_prefix_max_[k] = blocking_end_prefix_max_[k - 1];
        blocking_argmax_[k] = blocking_argmax_[k - 1];
      }
    }
    blocking_ = IntervalSet::from_unsorted(std::move(blocking));
    if (several_launchers) launch_all_ = IntervalSet::from_unsorted(std::move(launch_all));  // sorted already
    size_t most_launches = 0;
    for (auto& [thread, list] : launch_by_thread) {
      if (list.size() > most_launches || (list.size() == most_launches && thread < main_launch_thread_)) {
        most_launches = list.size();
        main_launch_thread_ = thread;
      }
      launch_by_thread_.emplace(thread, IntervalSet::from_unsorted(std::move(list)));
    }
  };
  auto build_host_indexes = [&] {
    host_activity_->build();
    call_sites_->build(events, names);
    python_activity_->build();
  };
  parallel::both(threads, build_rest, build_host_indexes);

  for (uint32_t i : gpu_by_start_) max_gpu_duration_ns_ = std::max(max_gpu_duration_ns_, events[i].duration_ns());
}

bool Timeline::is_blocking_call(const Event& api) const {
  if (api.kind != EventKind::kApiCall) return false;
  const ApiClass cls = api.api_class();
  if (cls != ApiClass::kMemcpyAsync) return is_blocking(cls);
  const Event* copy = copy_by_correlation_.find(events_, api.correlation);
  return copy != nullptr && is_blocking(cls, host_side_memory(*copy));
}

const IntervalSet& Timeline::os_waits_of(uint32_t thread) const {
  auto it = os_waits_by_thread_.find(thread);
  return it == os_waits_by_thread_.end() ? kEmptySet : it->second;
}

bool Timeline::is_all_to_all(const Event& kernel) const {
  if (kernel.collective == CollectiveType::kAllToAll) return true;
  if (kernel.collective != CollectiveType::kSendRecv || all_to_all_ranges_.empty()) return false;
  const Event* launcher = launcher_of(kernel);
  if (launcher == nullptr) return false;
  auto it = all_to_all_ranges_.find(launcher->thread);
  return it != all_to_all_ranges_.end() && it->second.measure_within(launcher->start_ns, launcher->start_ns + 1) > 0;
}

AllToAllPurpose Timeline::all_to_all_purpose(const Event& kernel) const {
  const Event* launcher = nullptr;
  // The output distribution's ranges first: a more specific name than a pipeline range around it;
  // then the pipeline's range ahead of the input distribution's own.
  for (AllToAllPurpose p : {AllToAllPurpose::kEmbeddingsBackward, AllToAllPurpose::kEmbeddingsForward,
                            AllToAllPurpose::kSparseFeaturesAhead, AllToAllPurpose::kSparseFeatures}) {
    const auto& by_thread = purpose_ranges_[static_cast<size_t>(p)];
    if (by_thread.empty()) continue;
    if (launcher == nullptr && (launcher = launcher_of(kernel)) == nullptr) return AllToAllPurpose::kUnknown;
    auto it = by_thread.find(launcher->thread);
    if (it != by_thread.end() && it->second.measure_within(launcher->start_ns, launcher->start_ns + 1) > 0) return p;
  }
  return AllToAllPurpose::kUnknown;
}

const IntervalSet& Timeline::launches_of(uint32_t thread) const {
  auto it = launch_by_thread_.find(thread);
  return it == launch_by_thread_.end() ? kEmptySet : it->second;
}

const Event* Timeline::next_gpu_record(int64_t t) const {
  auto it = std::lower_bound(gpu_by_start_.begin(), gpu_by_start_.end(), t,
                             [&](uint32_t i, int64_t v) { return events_[i].start_ns < v; });
  return it == gpu_by_start_.end() ? nullptr : &events_[*it];
}

const Event* Timeline::launcher_of(const Event& gpu_record) const {
  // CUPTI ids differ per runtime/driver call: a memset carries only its driver call's (an API event too).
  return api_by_correlation_.find(events_, gpu_record.correlation);
}

const Event* Timeline::blocking_call_spanning(int64_t a, int64_t slack_ns) const {
  auto it = std::lower_bound(blocking_by_start_.begin(), blocking_by_start_.end(), a,
                             [&](uint32_t i, int64_t v) { return events_[i].start_ns < v; });
  const size_t started_before = static_cast<size_t>(it - blocking_by_start_.begin());
  if (started_before == 0) return nullptr;
  if (blocking_end_prefix_max_[started_before - 1] < a - slack_ns) return nullptr;
  return &events_[blocking_argmax_[started_before - 1]];
}

bool Timeline::counts_as_sync(uint32_t index) const {
  if (!api_blocks_[index]) return false;
  const Event& e = events_[index];
  // A CUPTI sync record whose API call is also in the data is the same wait: count it once.
  if (e.kind == EventKind::kSync && api_by_correlation_.find(events_, e.correlation) != nullptr) {
    return false;
  }
  return true;
}

const Event* Timeline::copy_of(const Event& api) const {
  return copy_by_correlation_.find(events_, api.correlation);
}

std::vector<uint32_t> Timeline::blocking_overlapping(int64_t s, int64_t e) const {
  std::vector<uint32_t> out;
  auto it = std::lower_bound(blocking_by_start_.begin(), blocking_by_start_.end(), e,
                             [&](uint32_t i, int64_t v) { return events_[i].start_ns < v; });
  // Walk back from the last call starting before e while some earlier call may still reach s.
  for (size_t k = static_cast<size_t>(it - blocking_by_start_.begin()); k-- > 0;) {
    if (blocking_end_prefix_max_[k] <= s) break;
    if (events_[blocking_by_start_[k]].end_ns > s) out.push_back(blocking_by_start_[k]);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace stepwatch
