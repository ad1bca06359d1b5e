#include "stepwatch/core/step_pipeline.h"
#include "stepwatch/core/step_sources.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

std::string_view to_string(StepSource s) {
  switch (s) {
    case StepSource::kExplicit: return "explicit";
    case StepSource::kRange: return "range";
    case StepSource::kInferred: return "inferred";
    default: return "whole_trace";
  }
}

int64_t step_number_from_name(std::string_view name) {
  // vLLM's iteration annotations (config.h) end in request and token counts, not a step number.
  if (name.starts_with("execute_")) return -1;
  size_t end = name.size();
  size_t begin = end;
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 18) return -1;
  int64_t n = 0;
  for (size_t i = begin; i < end; ++i) n = n * 10 + (name[i] - '0');
  return n;
}

bool StepAssembler::matches_step_pattern(std::string_view name) const {
  return StepSources(config_).matches_step_pattern(name);
}

namespace {

class NullReporter final : public Reporter {
 public:
  void on_step(const StepView&, StepStatus, std::span<const Finding>) override {}
  void on_run_finding(const Finding&) override {}
};

}  // namespace

Segmentation StepAssembler::segment(std::span<const Event> events, const NameTable& names) const {
  PipelineOptions options;
  options.analysis = config_;
  options.keep_windows = true;
  options.retain_all = true;
  NullReporter reporter;
  StepPipeline pipeline(options, names, reporter, {});
  pipeline.ingest(events);
  pipeline.finish();
  return pipeline.segmentation();
}

}  // namespace stepwatch
