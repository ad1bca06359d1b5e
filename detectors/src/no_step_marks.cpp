#include "no_step_marks.h"

#include "detector_util.h"

namespace stepwatch {

NoStepMarksDetector::NoStepMarksDetector(const AnalysisConfig& config) : step_pattern_(config.step_pattern) {}

void NoStepMarksDetector::on_step(const StepView& step, FindingSink& sink) {
  if (reported_ || step.source != StepSource::kWholeTrace) return;
  reported_ = true;
  Finding f;
  f.detector = std::string(kId);
  f.rank = step.rank;
  f.step = step.step;
  f.severity = Severity::kInfo;
  f.message = "no step marks (no stepwatch_step_begin, no range matching the step pattern); the " +
              format_ms(step.duration_ns()) +
              " of data were analyzed as one pseudo-step, so per-step costs are diluted. Fix: mark steps — "
              "torch.profiler with a schedule (ProfilerStep#N), an NVTX range named 'step', or stepwatch.step().";
  f.with("analyzed_ms", detail::ms3_ns(step.duration_ns()))
      .with("step_pattern", step_pattern_)
      .with("gpu_busy_pct", detail::ms3(100.0 * step.duty_cycle()));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
