// The offline pipeline for one rank: segment, build every StepView, run the detectors,
// summarize. The live library drives the same pieces (StepAssembler, analyze_step,
// Detector::on_step) step by step from its analysis thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/detector.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/step_view.h"
#include "stepwatch/core/step_window.h"
#include "stepwatch/core/trace.h"

namespace stepwatch {

struct StepTimeStats {
  double mean_ms = 0, median_ms = 0, p90_ms = 0, cv = 0;
};

struct DetectorTotal {
  int steps = 0;
  double cost_ms = 0;
};

struct RunSummary {
  int rank = 0;
  int steps = 0;
  StepTimeStats step_ms;
  double gpu_busy_pct = 0;
  double comm_comp_overlap_pct = 0;  // HTA definition; NaN when the trace has no comm
  std::map<std::string, DetectorTotal> findings;  // detector id -> totals
};

struct RankResult {
  int rank = 0;
  std::string source;
  Segmentation segmentation;
  std::vector<StepView> steps;
  std::vector<Finding> findings;
  RunSummary summary;
};

// Runs `detectors` over the trace. `trace.events` is sorted in place by start time.
RankResult analyze_rank(Trace& trace, int rank, const AnalysisConfig& config,
                        std::vector<std::unique_ptr<Detector>>& detectors);

StepTimeStats step_time_stats(const std::vector<StepView>& steps);

}  // namespace stepwatch
