// The live-only tables of the exit summary: the nsys-style kern_sum, api_sum, mem_time_sum and
// blocking calls, and stepwatch's own overhead. The step-time table, the breakdown, the findings'
// goodput tax and the data loss come from the run summary (stepwatch/core/run_summary.h), the one
// schema `stepwatch analyze --json` writes too. Bounded: one entry per distinct name.
#pragma once

#include <cstdint>
#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepwatch/core/event.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/name_table.h"
#include "stepwatch/core/run_summary.h"
#include "stepwatch/core/step_status.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch::live {

struct SelfOverhead {
  int64_t analysis_cpu_ns = 0;    // CPU time of our analysis thread
  int64_t callback_ns = 0;        // time inside our CUPTI callbacks
  int64_t cupti_overhead_ns = 0;  // CUPTI's own overhead records
  int64_t wall_ns = 0;            // since start-up
  uint64_t call_sites_read = 0;   // blocking calls whose site was read (Python frame or native caller)
  int64_t call_site_read_ns = 0;  // time spent reading them
};

class RunStats {
 public:
  void add_events(std::span<const Event> events);
  void add_step(const StepView& step, StepStatus status);

  // Text (the log and summary.txt) and JSON (summary.json: the run summary's schema plus these
  // tables) forms.
  std::string text(const NameTable& names, const RunSummary& summary, const SelfOverhead& overhead) const;
  nlohmann::ordered_json json(const NameTable& names, const RunSummary& summary, const SelfOverhead& overhead) const;

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
  // Where the blocking calls were made, by (site, call): the run's top sites in the exit summary.
  std::map<std::pair<std::string, std::string>, Blocking> sites_;
};

}  // namespace stepwatch::live
