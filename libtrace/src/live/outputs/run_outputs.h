// Everything the live pipeline writes: the job log (LogReporter), steps.jsonl and
// findings.jsonl (the analyze schema), flight-recorder dumps (Kineto JSON, capped in count and
// bytes), and the exit summary (log + summary.txt + summary.json). Runs on the analysis thread.
//
// Every file goes through live/outputs/output_file.h: the JSONL files hold whole lines only, the
// summaries are replaced atomically. A file that cannot be written gets one log line, stops being
// written, and is listed with the lines it lost in the exit summary (write_failures()).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "live/live_config.h"
#include "live/outputs/log_reporter.h"
#include "live/outputs/output_file.h"
#include "live/outputs/run_metrics.h"
#include "live/outputs/run_stats.h"
#include "stepwatch/core/reporter.h"
#include "stepwatch/detectors/individual_score.h"

namespace stepwatch::live {

// An output that could not be written (said once in the log when it happened).
struct OutputWriteFailure {
  std::string file;             // relative to the run folder: "steps.jsonl", "summary.json", "dumps"
  std::string error;            // "write failed after 12 lines: No space left on device"
  uint64_t lines_written = 0;   // JSONL files: whole lines on disk (the meta line included)
  uint64_t lines_lost = 0;      // JSONL files: lines not written since
};

class RunOutputs final : public Reporter {
 public:
  // `run_dir` is <output_dir>/rank<R>-pid<P>; created on first use. File problems give one log
  // line per file and turn that file off, never an error for the host. `io`: tests fail writes.
  RunOutputs(const LiveConfig& config, std::string run_dir, LogReporter& log, const NameTable& names,
             const FileIo& io = posix_file_io());
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
  // Outputs that failed so far: the JSONL files in the order they failed, then summaries and dumps
  // (analysis thread, like every call here).
  std::vector<OutputWriteFailure> write_failures() const;
  // The fleet metrics (live/metrics_exporter.h publishes them), including the individual score.
  RunMetrics& metrics() { return metrics_; }

 private:
  bool ensure_dir();
  void append(OutputFile& file, const std::string& line);
  void write_summary_file(const char* name, const std::string& text);
  std::string failures_text() const;
  void add_failures(nlohmann::ordered_json& summary) const;

  LiveConfig config_;
  std::string run_dir_;
  LogReporter& log_;
  const NameTable& names_;
  RunStats stats_;
  RunMetrics metrics_;
  IndividualScoreTracker individual_;  // the metrics' gauge (the detector reports degradations)
  RunSummary summary_;
  const FileIo& io_;
  OutputFile steps_;
  OutputFile findings_;
  std::vector<OutputWriteFailure> whole_file_failures_;  // summaries and dumps (not JSONL files)
  std::vector<const OutputFile*> failed_files_;          // JSONL files, in the order they failed
  bool dir_ok_ = false, dir_failed_ = false;
  bool dumps_failed_ = false;
  int dumps_written_ = 0;
  int64_t dump_bytes_ = 0;
};

}  // namespace stepwatch::live
