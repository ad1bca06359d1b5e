// no_step_marks — the data has no step marks and no step ranges.
// Steps are then inferred (core/step_inference.h): from the ends of PyTorch's optimizer ranges
// (`Optimizer.step#<Class>.step`), else from the period of the GPU launch sequence. The finding
// (info) says how, with the number of inferred steps and their median time, once, when the data
// ends. When no period is found the data is one whole-trace pseudo-step; the finding says so at
// that step. Either way the fix is to mark steps, the program's way (PyTorch's, or NVTX / the C API).
#include "no_step_marks.h"

#include <algorithm>
#include <cmath>

#include "detector_util.h"
#include "fix_text.h"

namespace stepwatch {
namespace {

// The fix fits the program: PyTorch's ways to mark steps, or the runtime's.
std::string fix_text(const ProgramStack& stack) { return "Fix: mark steps — " + fix::mark_steps(stack) + "."; }

}  // namespace

NoStepMarksDetector::NoStepMarksDetector(const AnalysisConfig& config) : step_pattern_(config.step_pattern) {}

namespace {

Finding pseudo_step_finding(int rank, int64_t step, int64_t duration_ns, double busy_pct, const std::string& pattern,
                            const ProgramStack& stack) {
  Finding f;
  f.detector = std::string(NoStepMarksDetector::kId);
  f.rank = rank;
  f.step = step;
  f.severity = Severity::kInfo;
  f.message = "no step marks (no stepwatch_step_begin, no range matching the step pattern) and no repeating kernel "
              "sequence to infer steps from; the " +
              format_ms(duration_ns) +
              " of data were analyzed as one pseudo-step, so per-step costs are diluted. " + fix_text(stack);
  f.with("analyzed_ms", ms3_of(duration_ns)).with("step_pattern", pattern).with("gpu_busy_pct", round3(busy_pct));
  f.tax_share = TaxShare::kOverlapping;
  return f;
}

}  // namespace

void NoStepMarksDetector::on_step(const StepView& step, FindingSink& sink) {
  if (step.source == StepSource::kInferred) {
    if (!inferred_) {
      inferred_ = true;
      rank_ = step.rank;
      first_inferred_step_ = step.step;
      inferred_from_ = step.inferred_from;
      inferred_period_ = step.inferred_period;
    }
    ++inferred_steps_;
    inferred_ns_.add(double(step.duration_ns()));  // exact below 2^53 ns
    return;
  }
  if (reported_ || step.source != StepSource::kWholeTrace) return;
  reported_ = true;
  sink.emit(pseudo_step_finding(step.rank, step.step, step.duration_ns(), 100.0 * step.duty_cycle(), step_pattern_,
                                step.stack));
}

void NoStepMarksDetector::on_finish(const RunView& run, FindingSink& sink) {
  if (!reported_ && !inferred_ && run.source == StepSource::kWholeTrace && run.steps > 0) {
    // The pseudo-step was not judged (mostly initialization: measured as warm-up); say it anyway.
    reported_ = true;
    sink.emit(pseudo_step_finding(run.rank, run.first_step, run.in_steps_ns, std::nan(""), step_pattern_, run.stack));
    return;
  }
  if (!inferred_ || reported_) return;
  reported_ = true;
  std::vector<double> sorted = inferred_ns_.values();
  std::sort(sorted.begin(), sorted.end());
  const auto median_ns = static_cast<int64_t>(sorted[sorted.size() / 2]);
  const bool from_optimizer = inferred_from_ == "optimizer_ranges";
  const std::string how =
      from_optimizer ? "from the ends of the optimizer's ranges (Optimizer.step#...: one per training step)"
                     : "from the period of the GPU kernel sequence (the same " + std::to_string(inferred_period_) +
                           " GPU records repeat each step; cut at the step's input copy or the host's longest "
                           "pause)";
  Finding f;
  f.detector = std::string(kId);
  f.rank = rank_;
  f.step = first_inferred_step_;
  f.severity = Severity::kInfo;
  f.established = true;
  f.message = "no step marks (no stepwatch_step_begin, no range matching the step pattern): " +
              std::to_string(inferred_steps_) + " steps (median " + format_ms(median_ns) + ") were inferred " + how +
              "; step numbers are ordinals and the windows are approximate. " + fix_text(run.stack);
  f.with("inferred_from", std::string(inferred_from_))
      .with("inferred_steps", static_cast<int64_t>(inferred_steps_))
      .with("median_step_ms", ms3_of(median_ns))
      .with("step_pattern", step_pattern_);
  if (!from_optimizer) f.with("period_records", static_cast<int64_t>(inferred_period_));
  f.tax_share = TaxShare::kOverlapping;
  sink.emit(std::move(f));
}

}  // namespace stepwatch
