// Whole-run statistics for the exit summary: the nsys-style tables (kern_sum, api_sum,
// mem_time_sum, blocking calls), the step-time table and the goodput tax per detector.
// Bounded: one entry per distinct name, step durations kept up to a cap (then every other one).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/event_sink.h"
#include "live/outputs/live_reporter.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/name_table.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch::live {

struct SelfOverhead {
  int64_t analysis_cpu_ns = 0;    // CPU time of our analysis thread
  int64_t callback_ns = 0;        // time inside our CUPTI callbacks
  int64_t cupti_overhead_ns = 0;  // CUPTI's own overhead records
  int64_t wall_ns = 0;            // since start-up
};

class RunStats {
 public:
  void add_events(std::span<const Event> events);
  void add_step(const StepView& step, StepStatus status, std::span<const Finding> findings);
  void add_run_finding(const Finding& finding);

  // Text (the log and summary.txt) and JSON (summary.json) forms.
  std::string text(const NameTable& names, int rank, std::span<const uint64_t> losses,
                   const SelfOverhead& overhead) const;
  std::string json(const NameTable& names, int rank, std::span<const uint64_t> losses,
                   const SelfOverhead& overhead) const;

 private:
  struct Timing {
    uint64_t count = 0;
    int64_t total_ns = 0;
    int64_t min_ns = INT64_MAX;
    int64_t max_ns = 0;
    uint64_t bytes = 0;
    void add(int64_t ns, uint64_t b = 0) {
      ++count;
      total_ns += ns;
      min_ns = std::min(min_ns, ns);
      max_ns = std::max(max_ns, ns);
      bytes += b;
    }
  };
  struct Blocking {
    uint64_t count = 0;
    int64_t host_ns = 0;
    int64_t gpu_idle_ns = 0;
  };
  std::unordered_map<NameId, Timing> kernels_;
  std::unordered_map<NameId, Timing> api_;
  std::map<std::string, Timing> copies_;  // "HtoD", "DtoH", "DtoD", "memset", ...
  std::map<std::string, Blocking> blocking_;
  std::vector<double> step_ms_;
  size_t step_stride_ = 1, step_seen_ = 0;
  uint64_t steps_ = 0, judged_ = 0, untraced_ = 0, incomplete_ = 0;
  int64_t wall_ns_ = 0, busy_ns_ = 0, compute_ns_ = 0, exposed_ns_ = 0, copy_only_ns_ = 0;
  IdleBreakdown idle_;
  std::map<std::string, std::pair<uint64_t, double>> findings_;  // detector -> (steps, cost ms)
};

}  // namespace stepwatch::live
