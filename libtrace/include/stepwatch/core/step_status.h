// How the pipeline treated an analyzed step.
#pragma once

#include <cstdint>
#include <string_view>

namespace stepwatch {

enum class StepStatus : uint8_t {
  kJudged,      // detectors ran on it
  kWarmup,      // one of the first warm-up steps (live: STEPWATCH_WARMUP_STEPS): measured, not judged
  kUntraced,    // no GPU data for it (stood down, or paused): timed only, no breakdown
  kIncomplete,  // some of its GPU records never arrived (EventSink::mark_incomplete): timed and
                // counted, not judged, no breakdown (missing records would read as idle)
};
std::string_view to_string(StepStatus status);
// Whether a step's GPU breakdown is known (written to steps.jsonl, added to the totals).
inline bool has_breakdown(StepStatus s) { return s != StepStatus::kUntraced && s != StepStatus::kIncomplete; }

}  // namespace stepwatch
