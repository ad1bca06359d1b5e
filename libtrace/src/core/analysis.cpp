#include "stepwatch/core/analysis.h"

#include <algorithm>

#include "stepwatch/core/reporter.h"
#include "stepwatch/core/step_pipeline.h"

namespace stepwatch {

RankResult analyze_rank(Trace& trace, int rank, const AnalysisConfig& config,
                        std::vector<std::unique_ptr<Detector>> detectors) {
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  PipelineOptions options;
  options.analysis = config;
  options.rank = rank;
  options.hta_overlap = true;
  options.keep_windows = true;
  options.retain_all = true;
  CollectingReporter reporter;
  StepPipeline pipeline(options, trace.names, reporter, std::move(detectors));
  LossSnapshot skipped;
  for (const auto& [reason, n] : trace.skipped) skipped.add_records(reason, n);
  pipeline.set_losses(skipped);
  const auto gpu_records = static_cast<int64_t>(
      std::count_if(trace.events.begin(), trace.events.end(), [](const Event& e) { return e.is_gpu_record(); }));
  pipeline.ingest(std::move(trace.events));
  pipeline.finish();
  trace.events = pipeline.release_events();

  RankResult result;
  result.rank = rank;
  result.source = trace.source;
  result.segmentation = pipeline.segmentation();
  result.steps.reserve(reporter.steps.size());
  for (CollectingReporter::Step& s : reporter.steps) result.steps.push_back(std::move(s.view));
  result.findings = reporter.take_findings();
  result.summary = std::move(reporter.summary);
  result.gpu_records = gpu_records;
  return result;
}

}  // namespace stepwatch
