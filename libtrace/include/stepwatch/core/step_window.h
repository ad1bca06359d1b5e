// Step segmentation: where each training step starts and ends.
//
// Sources in priority order (ARCHITECTURE.md "Step segmentation"): explicit C API steps,
// host ranges whose name matches the step pattern, and — when neither exists — one
// whole-trace pseudo-step (the `no_step_marks` finding says so).
#pragma once

#include <cstdint>
#include <regex>
#include <span>
#include <string>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/name_table.h"

namespace stepwatch {

enum class StepSource : uint8_t {
  kExplicit,    // C API step_begin/step_end or step marks
  kRange,       // NVTX / profiler ranges matching the step pattern
  kWholeTrace,  // no marks: one pseudo-step covering the data
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
  std::string matched_name;  // e.g. "ProfilerStep#N" pattern example, for messages
};

// Parses the trailing number of a step name ("ProfilerStep#12" -> 12, "step_7" -> 7); -1 if none.
int64_t step_number_from_name(std::string_view name);

class StepAssembler {
 public:
  explicit StepAssembler(const AnalysisConfig& config);
  // Offline segmentation of a complete, time-sorted event sequence.
  Segmentation segment(std::span<const Event> events, const NameTable& names) const;
  bool matches_step_pattern(std::string_view name) const;

 private:
  std::regex step_regex_;
};

}  // namespace stepwatch
