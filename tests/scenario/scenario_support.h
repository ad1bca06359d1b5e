// Shared helpers of the scenario tests: run a synthetic scenario through the real offline
// pipeline (segmentation, timeline analysis, every registered detector) and index the result.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stepwatch/core/analysis.h"
#include "stepwatch/core/config.h"
#include "stepwatch/detectors/registry.h"
#include "synthetic/workload.h"

namespace stepwatch::scenario {

struct AnalyzedRun {
  synthetic::SyntheticRun run;
  RankResult result;

  // Steps on which `detector` fired.
  std::set<int64_t> steps_flagged_by(const std::string& detector) const {
    std::set<int64_t> steps;
    for (const Finding& f : result.findings) {
      if (f.detector == detector) steps.insert(f.step);
    }
    return steps;
  }
  // The findings of `detector`, in order.
  std::vector<Finding> findings(const std::string& detector) const {
    std::vector<Finding> out;
    for (const Finding& f : result.findings) {
      if (f.detector == detector) out.push_back(f);
    }
    return out;
  }
  size_t findings_of(const std::string& detector) const {
    return static_cast<size_t>(std::count_if(result.findings.begin(), result.findings.end(),
                                             [&](const Finding& f) { return f.detector == detector; }));
  }
};

// analyze_rank sorts the trace in place: analyze a copy, keep the generated trace as it was.
inline RankResult analyze(const Trace& trace, const AnalysisConfig& config = {}) {
  Trace copy = trace;
  auto detectors = make_detectors(config);
  return analyze_rank(copy, 0, config, std::move(detectors));
}

inline AnalyzedRun analyze_scenario(const std::string& name, const synthetic::ScenarioOptions& options = {}) {
  AnalyzedRun a{synthetic::make_scenario(name, options), {}};
  a.result = analyze(a.run.trace);
  return a;
}

// The model's step windows as the GPU ran them: step k from where the GPU finished the work
// queued before step k's first record (on that record's stream) — or the host's step start, if
// later — to the next one's; the last to the end of the GPU work it launched. When the GPU runs
// behind the host, inferred steps hold the GPU work their host window launched (step_inference.h).
inline std::vector<std::pair<int64_t, int64_t>> gpu_aligned_truth(const synthetic::SyntheticRun& run) {
  std::map<uint64_t, int64_t> launched_at;
  for (const Event& e : run.trace.events) {
    if (e.kind == EventKind::kApiCall && e.correlation != 0) launched_at.emplace(e.correlation, e.start_ns);
  }
  std::vector<int64_t> starts;
  int64_t last_end = 0;
  for (const synthetic::StepTruth& t : run.truth) {
    const Event* first = nullptr;
    int64_t first_launch = 0;
    for (const Event& e : run.trace.events) {
      if (!e.is_gpu_record()) continue;
      auto it = launched_at.find(e.correlation);
      if (it == launched_at.end() || it->second < t.start_ns || it->second >= t.end_ns) continue;
      if (first == nullptr || it->second < first_launch) {
        first = &e;
        first_launch = it->second;
      }
      if (&t == &run.truth.back()) last_end = std::max(last_end, e.end_ns);
    }
    int64_t start = t.start_ns;
    if (first != nullptr) {
      for (const Event& e : run.trace.events) {
        if (e.is_gpu_record() && e.stream == first->stream && e.start_ns < first->start_ns) start = std::max(start, e.end_ns);
      }
    }
    starts.push_back(start);
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t k = 0; k < starts.size(); ++k) {
    out.emplace_back(starts[k], k + 1 < starts.size() ? starts[k + 1] : std::max(last_end, run.truth.back().end_ns));
  }
  return out;
}

inline std::string describe_findings(const RankResult& r) {
  std::string s;
  for (const Finding& f : r.findings) {
    s += "  [step " + std::to_string(f.step) + "] " + f.detector + " cost " + std::to_string(f.cost_ms) + " ms (" +
         std::to_string(f.cost_pct) + "%): " + f.message + "\n";
  }
  return s.empty() ? "  (none)\n" : s;
}

inline std::string describe_step(const StepView& v) {
  auto ms = [](int64_t ns) { return std::to_string(double(ns) / 1e6); };
  return "step " + std::to_string(v.step) + " dur " + ms(v.duration_ns()) + " compute " + ms(v.compute_ns) +
         " comm " + ms(v.comm_ns) + " exposed " + ms(v.exposed_comm_ns) + " copy_only " + ms(v.copy_only_ns) +
         " idle{input " + ms(v.idle[IdleCause::kInput]) + " sync " + ms(v.idle[IdleCause::kSync]) + " launch " +
         ms(v.idle[IdleCause::kLaunch]) + " host " + ms(v.idle[IdleCause::kHost]) + " other " +
         ms(v.idle[IdleCause::kOther]) + "} blocked_idle " + ms(v.blocked_idle_ns);
}

// |actual - expected| <= 5% of expected (the attribution tolerance the tests allow), plus 1 µs
// so that a zero truth does not demand an exact zero from a rounding path.
inline ::testing::AssertionResult within_5_percent(int64_t actual, int64_t expected) {
  const double tolerance = 0.05 * double(std::max<int64_t>(expected, 0)) + 1'000.0;
  if (std::abs(double(actual - expected)) <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << double(actual) / 1e6 << " ms, truth " << double(expected) / 1e6
                                       << " ms (tolerance " << tolerance / 1e6 << " ms)";
}

}  // namespace stepwatch::scenario
