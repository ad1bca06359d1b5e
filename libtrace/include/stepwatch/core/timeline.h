// Timeline: an index over one rank's events that answers the questions of gap attribution
// in O(log n): the busy unions C (compute), N (comm), M (copy), the host's blocking and
// launch intervals, data-wait evidence, and the launching call of each GPU record.
//
// Offline it indexes a whole trace once; live it indexes the retained slice around the step
// being judged. `analyze_step` is the one function both paths use to build a StepView.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "stepwatch/core/classify.h"
#include "stepwatch/core/config.h"
#include "stepwatch/core/correlation_index.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/gpu_samples.h"
#include "stepwatch/core/interval.h"
#include "stepwatch/core/name_table.h"
#include "stepwatch/core/step_view.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

class HostActivityIndex;
class CallSiteIndex;
struct CallSite;

class Timeline {
 public:
  // `events` must outlive the Timeline; they need not be sorted.
  // `threads` > 1: the host-activity indexes are built on a thread of their own (offline).
  Timeline(std::span<const Event> events, const NameTable& names, const AnalysisConfig& config, unsigned threads = 1);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  const IntervalSet& compute() const { return compute_; }
  const IntervalSet& comm() const { return comm_; }
  const IntervalSet& copy() const { return copy_; }
  // C ∪ N ∪ M (the compute set itself when there is no comm and no copy: not held twice).
  const IntervalSet& busy() const { return busy_is_compute_ ? compute_ : busy_; }
  const IntervalSet& blocking() const { return blocking_; }  // B
  const IntervalSet& data_wait() const { return data_wait_; }
  const IntervalSet& gc() const { return gc_; }  // host ranges named "gc" (GC pauses)
  // The tracer's lazy-module-loading records (classify.h is_module_loading_overhead): a launch
  // during them was loading its kernel's module (initialization, outside_steps.h).
  const IntervalSet& module_loading() const { return module_loading_; }
  // OS-runtime waits (read/poll/select/futex…, "osrt:<call>" ranges from Nsight's OSRT trace) of
  // one host thread: input-wait evidence when that thread launches the work ending a gap.
  const IntervalSet& os_waits_of(uint32_t thread) const;
  const IntervalSet& launches_of(uint32_t thread) const;     // enqueue calls of one host thread
  // Every thread's enqueue calls (the one thread's set when only one launches: not held twice).
  const IntervalSet& launches_all() const {
    return launch_by_thread_.size() == 1 ? launch_by_thread_.begin()->second : launch_all_;
  }
  // The host thread that issued the most launch calls (0 when none): the launching thread of a
  // gap whose resuming record has no launch call in the data.
  uint32_t main_launch_thread() const { return main_launch_thread_; }
  // What each host thread was doing (innermost host range or CUDA call), for the host part of
  // idle gaps (host_activity.h). Step ranges, data ranges, OS waits and NVML samples excluded.
  const HostActivityIndex& host_activity() const { return *host_activity_; }
  // The same over the program's own Python frames (Kineto's python_function, call_sites.h): the
  // innermost user function at each moment.
  const HostActivityIndex& python_activity() const { return *python_activity_; }
  // Where in the program a blocking call was made (call_sites.h): its innermost user Python frame,
  // or its native caller live; nullopt when the data has no frames around it.
  std::optional<CallSite> call_site_of(const Event& call) const;
  bool has_call_sites() const;
  // Whether an NCCL kernel belongs to an all-to-all: its own type, or a SendRecv kernel (NCCL runs
  // all-to-all as grouped send/recv) launched inside an all-to-all host range of its launching
  // thread (Kineto's "nccl:all_to_all", NVTX's ncclAlltoAll).
  bool is_all_to_all(const Event& kernel) const;
  // What an all-to-all kernel carries (classify.h): the purpose named by a host range of its
  // launching thread around its launch call; kUnknown without one, or without its launch call.
  AllToAllPurpose all_to_all_purpose(const Event& kernel) const;
  // NVML samples ("nvml:<metric>" events, gpu_samples.h), in time order.
  struct GpuSample {
    int64_t t_ns = 0;
    uint64_t value = 0;
    int16_t device = -1;
    GpuMetric metric = GpuMetric::kSmClockMhz;
  };
  std::span<const GpuSample> gpu_samples() const { return gpu_samples_; }

  // First GPU record starting at or after t (nullptr if none).
  const Event* next_gpu_record(int64_t t) const;
  // The API call that launched a GPU record (same correlation), or nullptr.
  const Event* launcher_of(const Event& gpu_record) const;
  // A blocking call that started before `a` and returned at or after `a - slack_ns` (rule 2).
  const Event* blocking_call_spanning(int64_t a, int64_t slack_ns) const;
  // Whether an API call blocks the host (uses the copy it launched for async memcpys).
  bool is_blocking_call(const Event& api) const;
  // Whether events()[index] is a blocking call to count once (a CUPTI sync record duplicating
  // an API call in the data is not).
  bool counts_as_sync(uint32_t index) const;
  // Indices of blocking calls / sync records overlapping [s, e), in start order.
  std::vector<uint32_t> blocking_overlapping(int64_t s, int64_t e) const;
  // The copy an API call launched (same correlation), or nullptr.
  const Event* copy_of(const Event& api) const;
  int64_t max_gpu_duration_ns() const { return max_gpu_duration_ns_; }

  std::span<const Event> events() const { return events_; }
  const NameTable& names() const { return names_; }
  const AnalysisConfig& config() const { return config_; }

  // Indices (into events()) of records sorted by start, for per-window scans.
  std::span<const uint32_t> gpu_by_start() const { return gpu_by_start_; }
  std::span<const uint32_t> api_by_start() const { return api_by_start_; }
  std::span<const uint32_t> allocations_by_start() const { return alloc_by_start_; }

 private:
  std::span<const Event> events_;
  const NameTable& names_;
  const AnalysisConfig& config_;
  IntervalSet compute_, comm_, copy_, busy_, blocking_, data_wait_, gc_, launch_all_, module_loading_;
  bool busy_is_compute_ = false;
  std::unordered_map<uint32_t, IntervalSet> launch_by_thread_;
  std::unordered_map<uint32_t, IntervalSet> os_waits_by_thread_;
  std::unordered_map<uint32_t, IntervalSet> all_to_all_ranges_;  // by host thread
  // Ranges naming what an all-to-all launched inside carries, per AllToAllPurpose, by host thread.
  std::array<std::unordered_map<uint32_t, IntervalSet>, kAllToAllPurposes> purpose_ranges_;
  CorrelationIndex api_by_correlation_;   // API calls; a correlation's first entry is its outer call
  CorrelationIndex copy_by_correlation_;  // memcpy records
  std::vector<uint32_t> gpu_by_start_;
  std::vector<uint32_t> api_by_start_;
  std::vector<uint32_t> alloc_by_start_;
  std::vector<GpuSample> gpu_samples_;
  std::vector<uint32_t> blocking_by_start_;
  std::vector<int64_t> blocking_end_prefix_max_;  // running max of end over blocking_by_start_
  std::vector<uint32_t> blocking_argmax_;         // the call reaching that max
  int64_t max_gpu_duration_ns_ = 0;
  uint32_t main_launch_thread_ = 0;
  std::unique_ptr<HostActivityIndex> host_activity_;
  std::unique_ptr<CallSiteIndex> call_sites_;
  std::unique_ptr<HostActivityIndex> python_activity_;  // the program's own Python frames
  std::vector<uint8_t> api_blocks_;               // per event index: 1 if a blocking API call / sync record
};

// Builds the StepView of one window: the unions clipped to it, every idle gap attributed.
StepView analyze_step(const StepWindow& window, const Timeline& timeline, int rank);
// analyze_step of each window, on up to `threads` threads (the Timeline is only read).
std::vector<StepView> analyze_steps(std::span<const StepWindow> windows, const Timeline& timeline, int rank,
                                    unsigned threads);

// Holistic Trace Analysis's comm/comp overlap over the whole trace (corpus README definition):
// kernels launched before the last step begins; |C ∩ N| / |N| in percent. NaN when no comm.
double hta_comm_comp_overlap_pct(const Timeline& timeline, const Segmentation& segmentation);
// The same over events not indexed by a Timeline (offline, judged in batches): `calls` indexes
// their API calls.
double hta_comm_comp_overlap_pct(std::span<const Event> events, const CorrelationIndex& calls,
                                 const Segmentation& segmentation);

}  // namespace stepwatch
