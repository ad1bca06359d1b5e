#include "stepwatch/core/analysis.h"

#include <algorithm>
#include <cmath>

#include "stepwatch/core/timeline.h"

namespace stepwatch {
namespace {

class CollectingSink : public FindingSink {
 public:
  explicit CollectingSink(std::vector<Finding>& out) : out_(out) {}
  void emit(Finding f) override { out_.push_back(std::move(f)); }

 private:
  std::vector<Finding>& out_;
};

double percentile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0;
  // Linear interpolation between closest ranks (numpy's default).
  const double pos = q * double(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

}  // namespace

StepTimeStats step_time_stats(const std::vector<StepView>& steps) {
  StepTimeStats st;
  if (steps.empty()) return st;
  std::vector<double> ms;
  ms.reserve(steps.size());
  for (const StepView& v : steps) ms.push_back(double(v.duration_ns()) / 1e6);
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double x : ms) sum += x;
  st.mean_ms = sum / double(ms.size());
  double var = 0;
  for (double x : ms) var += (x - st.mean_ms) * (x - st.mean_ms);
  var /= double(ms.size());
  st.cv = st.mean_ms > 0 ? std::sqrt(var) / st.mean_ms : 0;
  st.median_ms = percentile(ms, 0.5);
  st.p90_ms = percentile(ms, 0.9);
  return st;
}

RankResult analyze_rank(Trace& trace, int rank, const AnalysisConfig& config,
                        std::vector<std::unique_ptr<Detector>>& detectors) {
  RankResult result;
  result.rank = rank;
  result.source = trace.source;
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });

  const StepAssembler assembler(config);
  result.segmentation = assembler.segment(trace.events, trace.names);
  const Timeline timeline(trace.events, trace.names, config);

  CollectingSink sink(result.findings);
  int64_t busy_ns = 0, wall_ns = 0;
  for (const StepWindow& w : result.segmentation.steps) {
    StepView view = analyze_step(w, timeline, rank);
    view.inferred_from = result.segmentation.inferred_from;
    view.inferred_period = result.segmentation.inferred_period;
    busy_ns += view.busy_ns;
    wall_ns += view.duration_ns();
    for (auto& d : detectors) d->on_step(view, sink);
    result.steps.push_back(std::move(view));
  }
  for (auto& d : detectors) d->on_finish(sink);

  RunSummary& sum = result.summary;
  sum.rank = rank;
  sum.steps = static_cast<int>(result.steps.size());
  sum.step_ms = step_time_stats(result.steps);
  sum.gpu_busy_pct = wall_ns > 0 ? 100.0 * double(busy_ns) / double(wall_ns) : 0;
  sum.comm_comp_overlap_pct = hta_comm_comp_overlap_pct(timeline, result.segmentation);
  for (const Finding& f : result.findings) {
    DetectorTotal& t = sum.findings[f.detector];
    ++t.steps;
    t.cost_ms += f.cost_ms;
  }
  return result;
}

}  // namespace stepwatch
