// The offline analysis of one rank: the step pipeline (step_pipeline.h) given the whole trace at
// once, its output collected for the text, JSONL and HTML reports and the rank merge.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/detector.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/run_summary.h"
#include "stepwatch/core/step_view.h"
#include "stepwatch/core/step_window.h"
#include "stepwatch/core/trace.h"

namespace stepwatch {

struct RankResult {
  int rank = 0;
  std::string source;
  Segmentation segmentation;
  std::vector<StepView> steps;
  std::vector<Finding> findings;
  RunSummary summary;
  int64_t gpu_records = 0;  // kernels, copies and memsets in the trace (0: no GPU activity at all)
};

// Runs `detectors` over the trace. `trace.events` is sorted in place by start time; NCCL kernels
// gain the sizes their NCCL ranges carry (nccl_join.h). Records the importer left out
// (`trace.skipped`) are reported as data loss.
RankResult analyze_rank(Trace& trace, int rank, const AnalysisConfig& config,
                        std::vector<std::unique_ptr<Detector>> detectors);

}  // namespace stepwatch
