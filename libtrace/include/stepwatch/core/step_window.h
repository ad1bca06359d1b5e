// Step segmentation: where each training step starts and ends.
//
// Sources in priority order (ARCHITECTURE.md "Step segmentation"): explicit C API steps,
// host ranges whose name matches the step pattern, and — when neither exists — steps inferred
// from the loop itself (step_inference.h: optimizer ranges, else the period of the GPU record
// sequence), or, when no period is found, one whole-trace pseudo-step (the `no_step_marks`
// finding says which).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/name_table.h"

namespace stepwatch {

enum class StepSource : uint8_t {
  kExplicit,    // C API step_begin/step_end or step marks
  kRange,       // NVTX / profiler ranges matching the step pattern
  kWholeTrace,  // no marks: one pseudo-step covering the data
  kInferred,    // no marks: steps inferred from optimizer ranges or the kernel sequence's period
};
std::string_view to_string(StepSource);

struct StepWindow {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t number = 0;  // from the mark or range name (ProfilerStep#12 -> 12), else an ordinal
  StepSource source = StepSource::kWholeTrace;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct Segmentation {
  std::vector<StepWindow> steps;
  StepSource source = StepSource::kWholeTrace;
  std::string matched_name;  // e.g. "ProfilerStep#N" pattern example, for messages; kInferred: how
  // kInferred: how ("optimizer_ranges" or "kernel_period", static text) and, for the kernel
  // period, the GPU records per step. analyze_rank copies both into each StepView.
  std::string_view inferred_from;
  int32_t inferred_period = 0;
  // Offline: the Timelines the final pass built, one per batch of steps (step_batches.h); 1 when
  // the trace was judged at once.
  int timelines = 0;
};

// Parses the trailing number of a step name ("ProfilerStep#12" -> 12, "step_7" -> 7); -1 if none.
int64_t step_number_from_name(std::string_view name);

// The batch segmentation of a complete trace: what the step pipeline finds when it is given all
// the data at once (it runs the pipeline's own step sources and inference: one implementation).
class StepAssembler {
 public:
  explicit StepAssembler(const AnalysisConfig& config) : config_(config) {}
  Segmentation segment(std::span<const Event> events, const NameTable& names) const;
  bool matches_step_pattern(std::string_view name) const;

 private:
  AnalysisConfig config_;
};

}  // namespace stepwatch
