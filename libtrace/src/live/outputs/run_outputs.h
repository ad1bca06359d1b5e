// Everything the live pipeline writes: the job log (LogReporter), steps.jsonl and
// findings.jsonl (the analyze schema), flight-recorder dumps (Kineto JSON, capped in count and
// bytes), and the exit summary (log + summary.txt + summary.json). Runs on the analysis thread.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "live/live_config.h"
#include "live/outputs/log_reporter.h"
#include "live/outputs/run_metrics.h"
#include "live/outputs/run_stats.h"
#include "stepwatch/core/reporter.h"
#include "stepwatch/detectors/individual_score.h"

namespace stepwatch::live {

class RunOutputs final : public Reporter {
 public:
  // `run_dir` is <output_dir>/rank<R>-pid<P>; created on first use. File problems give one log
  // line and turn file outputs off, never an error for the host.
  RunOutputs(const LiveConfig& config, std::string run_dir, LogReporter& log, const NameTable& names);
  ~RunOutputs() override;

  void on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) override;
  void on_run_finding(const Finding& finding) override;
  void on_first_fire(const Finding& finding, std::span<const StepCapture* const> recent,
                     const NameTable& names) override;
  void on_events(std::span<const Event> events) override;
  void on_summary(const RunSummary& summary) override { summary_ = summary; }

  // After the pipeline's finish (which hands over the run summary).
  void write_exit_summary(const SelfOverhead& overhead);
  void flush();
  const std::string& run_dir() const { return run_dir_; }
  int dumps_written() const { return dumps_written_; }
  // The fleet metrics (live/metrics_exporter.h publishes them), including the individual score.
  RunMetrics& metrics() { return metrics_; }

 private:
  bool ensure_dir();
  void append(std::FILE*& file, const char* name, const std::string& line);

  LiveConfig config_;
  std::string run_dir_;
  LogReporter& log_;
  const NameTable& names_;
  RunStats stats_;
  RunMetrics metrics_;
  IndividualScoreTracker individual_;  // the metrics' gauge (the detector reports degradations)
  RunSummary summary_;
  std::FILE* steps_ = nullptr;
  std::FILE* findings_ = nullptr;
  bool dir_ok_ = false, dir_failed_ = false;
  int dumps_written_ = 0;
  int64_t dump_bytes_ = 0;
};

}  // namespace stepwatch::live
