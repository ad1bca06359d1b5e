// What the live pipeline tells its outputs (log, JSONL files, flight recorder, exit summary).
#pragma once

#include <span>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/name_table.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch::live {

// How an analyzed step was treated.
enum class StepStatus : uint8_t {
  kJudged,    // detectors ran on it
  kWarmup,    // one of the first STEPWATCH_WARMUP_STEPS: measured, not judged
  kUntraced,  // no GPU data for it (stood down, or paused): timed only, no breakdown written
  kIncomplete,  // some of its GPU records never arrived (EventSink::mark_incomplete): timed and
                // counted, not judged, no breakdown written (missing records would read as idle)
};
// Whether a step's GPU breakdown is known (written to steps.jsonl, added to the totals).
inline bool has_breakdown(StepStatus s) { return s != StepStatus::kUntraced && s != StepStatus::kIncomplete; }

// The events of one analyzed step, kept by the flight recorder.
struct StepCapture {
  StepWindow window;
  std::vector<Event> events;
};

class LiveReporter {
 public:
  virtual ~LiveReporter() = default;
  // Every analyzed step, judged or not (warm-up), with the findings it produced.
  virtual void on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) = 0;
  // Findings not tied to a judged step's detectors (data_loss, no_step_marks live).
  virtual void on_run_finding(const Finding& finding) = 0;
  // A detector fired for the first time in this run: the recent steps, oldest first, for a dump.
  virtual void on_first_fire(const Finding& finding, std::span<const StepCapture* const> recent,
                             const NameTable& names) = 0;
  // Every event ingested, once (exit-summary statistics).
  virtual void on_events(std::span<const Event> events) = 0;
};

}  // namespace stepwatch::live
