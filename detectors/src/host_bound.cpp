// host_bound — the GPU idles while the thread that feeds it is busy with CPU work of its own.
// Reading order §2 step 3: "for each gap: what is running instead? … CPU thread busy →
// launch/host-bound"; catalog: "Launch-bound / host-bound … python thread pegged".
// Cost: the host part (rule 3: no data wait, no blocking call, no launch call covers it) of the
// step's idle gaps longer than StepView::kDispatchGapNs; and of the shorter ones too when they are
// not launch overhead (dispatch_gaps.h: no launch-lag evidence) — then they are not per-op dispatch
// (launch_bound's) but CPU work chopped into pieces between kernels (DDP's unflatten: many small
// CPU ops, each launching a tiny copy). One predicate decides, so the two never count the same idle.
// Threshold: the common rule.
// Evidence: what the host was doing in those gaps — its innermost profiler ranges (cpu ops,
// annotations, NVTX) and CUDA calls by time (StepView::host_activity); time no range covers is
// "no profiler range" (plain Python, or the host waiting on something the trace does not show).
// Refined by gc_pause (the stall is a GC phase) and recompilation (a sawtooth step), whose costs
// lie inside this one.
#include "host_bound.h"

#include <algorithm>

#include "detector_util.h"
#include "dispatch_gaps.h"
#include "fix_text.h"

namespace stepwatch {
namespace {

// The host's activity in the counted gaps, by name, longest first (the long gaps', plus the short
// ones' when they count).
std::vector<HostActivityStat> activity_in(const StepView& step, bool with_short_gaps) {
  std::vector<HostActivityStat> all = step.host_activity;
  if (with_short_gaps) {
    for (const HostActivityStat& a : step.dispatch_activity) {
      auto it = std::find_if(all.begin(), all.end(), [&](const HostActivityStat& b) { return b.name == a.name; });
      if (it == all.end()) {
        all.push_back(a);
      } else {
        it->ns += a.ns;
      }
    }
  }
  std::sort(all.begin(), all.end(), [](const HostActivityStat& a, const HostActivityStat& b) { return a.ns > b.ns; });
  if (all.size() > StepView::kTopHostActivity) all.resize(StepView::kTopHostActivity);
  return all;
}

}  // namespace

HostBoundDetector::HostBoundDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void HostBoundDetector::on_step(const StepView& step, FindingSink& sink) {
  int64_t long_ns = 0;
  int64_t largest_ns = 0;
  int64_t gaps = 0;
  for (const GapRecord& g : step.gaps) {
    if (g.rule != GapRule::kHostActivity || g.end_ns - g.start_ns <= StepView::kDispatchGapNs) continue;
    const int64_t host = g.parts[IdleCause::kHost];
    if (host <= 0) continue;
    long_ns += host;
    largest_ns = std::max(largest_ns, host);
    ++gaps;
  }
  const detail::DispatchGaps dispatch = detail::dispatch_gaps(step);
  const bool short_gaps_count = dispatch.host_ns > 0 && !detail::dispatch_is_launch_overhead(step);
  const int64_t short_ns = short_gaps_count ? dispatch.host_ns : 0;
  const int64_t cost_ns = long_ns + short_ns;
  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  std::string doing;
  std::vector<std::string> names;
  std::vector<int64_t> activity_us;
  for (const HostActivityStat& a : activity_in(step, short_gaps_count)) {
    const std::string name = a.name.empty() ? "no profiler range" : a.name;
    names.push_back(name);
    activity_us.push_back(a.ns / 1000);
    if (doing.size() < 200) doing += (doing.empty() ? "" : ", ") + name + " " + format_ms(a.ns);
  }
  // With Python frames (with_stack=True): the program's own functions the host was in.
  std::vector<std::string> python_names;
  std::vector<int64_t> python_us;
  std::string python_text;
  for (const HostActivityStat& a : step.host_python) {
    python_names.push_back(a.name);
    python_us.push_back(a.ns / 1000);
    if (python_text.empty() && a.ns * 4 >= long_ns) python_text = "; in Python: " + a.name + " " + format_ms(a.ns);
  }
  std::string where;
  if (gaps > 0) {
    where = std::to_string(gaps) + (gaps == 1 ? " gap" : " gaps") + " (largest " + format_ms(largest_ns) + ")";
  }
  if (short_ns > 0) {
    where += (where.empty() ? "" : " and ") + std::to_string(dispatch.gaps) +
             (dispatch.gaps == 1 ? " short gap" : " short gaps") + " between kernels (" + format_ms(short_ns) + ")";
  }
  f.message = "GPU idle " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") in " + where +
              " while the launching thread was busy on the CPU with no data wait, blocking call or launch" +
              (doing.empty() ? std::string() : " — " + doing) + python_text + ": host-bound. Fix: " + fix::host_work(step.stack) +
              ".";
  f.with("host_idle_ms", ms3_of(cost_ns))
      .with("host_gaps", gaps)
      .with("largest_host_gap_ms", ms3_of(largest_ns))
      .with("host_activity", std::move(names))
      .with("host_activity_us", std::move(activity_us))
      .with("gpu_busy_pct", round3(100.0 * step.duty_cycle()))
      .with("short_gap_host_ms", ms3_of(short_ns));
  if (!python_names.empty()) f.with("python_functions", std::move(python_names)).with("python_functions_us", std::move(python_us));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
