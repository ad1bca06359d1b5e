// What the step pipeline tells its outputs — one interface for both front ends. Offline, a
// CollectingReporter keeps everything for the text, JSONL and HTML reports; live, the run outputs
// (job log, steps.jsonl / findings.jsonl, flight-recorder dumps, exit summary, metrics) implement it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/name_table.h"
#include "stepwatch/core/run_summary.h"
#include "stepwatch/core/step_status.h"
#include "stepwatch/core/step_view.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

// The events of one analyzed step, kept by the flight recorder.
struct StepCapture {
  StepWindow window;
  std::vector<Event> events;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // Every event ingested, once, in arrival order (exit-summary statistics).
  virtual void on_events(std::span<const Event> /*events*/) {}
  // Every analyzed step, judged or not, in step order, with the findings it produced.
  virtual void on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) = 0;
  // Findings about the run rather than one step (trend detectors at the end, data loss, ...).
  virtual void on_run_finding(const Finding& finding) = 0;
  // A detector fired for the first time in this run: the recent steps, oldest first, for a dump.
  virtual void on_first_fire(const Finding& /*finding*/, std::span<const StepCapture* const> /*recent*/,
                             const NameTable& /*names*/) {}
  // End of data: the run summary, after the last step and run finding.
  virtual void on_summary(const RunSummary& /*summary*/) {}
};

// Keeps everything (offline analysis, tests).
class CollectingReporter final : public Reporter {
 public:
  struct Step {
    StepView view;
    StepStatus status = StepStatus::kJudged;
  };
  void on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) override {
    steps.push_back({step, status});
    if (!keep_gaps) {
      steps.back().view.gaps.clear();
      steps.back().view.gaps.shrink_to_fit();
    }
    findings_.insert(findings_.end(), findings.begin(), findings.end());
  }
  void on_run_finding(const Finding& finding) override { findings_.push_back(finding); }
  void on_summary(const RunSummary& s) override { summary = s; }

  std::vector<Step> steps;
  RunSummary summary;
  bool keep_gaps = true;  // the detectors have read them; reports do not need them
  // Every finding, in the order it came (a step's findings with its step).
  const std::vector<Finding>& findings() const { return findings_; }
  std::vector<Finding> take_findings() { return std::move(findings_); }

 private:
  std::vector<Finding> findings_;
};

}  // namespace stepwatch
