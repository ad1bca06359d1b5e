// The job-log reporter: one spdlog logger of our own (never the global default logger — the
// host program may use spdlog too), writing to stderr.
//
// The log is quieter than the JSONL: a pattern is reported once it is sustained (fired on
// >= sustain_min of the last sustain_window judged steps), then "persists" every persist_every
// judged steps while it lasts, then "cleared" when it has not fired for a whole window.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "live/live_config.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/step_view.h"

namespace spdlog {
class logger;
}

namespace stepwatch::live {

// A logger named "stepwatch" to stderr (or to `test_sink_path`'s file when not empty), not
// registered in spdlog's registry.
std::shared_ptr<spdlog::logger> make_job_logger(const std::string& level, const std::string& test_sink_path = "");

class LogReporter {
 public:
  LogReporter(std::shared_ptr<spdlog::logger> logger, const LiveConfig& config);

  void on_step(const StepView& step, bool judged, std::span<const Finding> findings);
  void on_run_finding(const Finding& finding);
  void info(const std::string& line);   // "[stepwatch][rank R] " + line
  void warn(const std::string& line);
  // "[stepwatch][rank R][step N] " + line, at warn or info level (lines about one step that are
  // not detector findings: the individual score).
  void step_line(int64_t step, bool warning, const std::string& line);
  void flush();

 private:
  struct Pattern {
    std::deque<double> window;  // cost of each of the last judged steps (< 0: did not fire)
    bool active = false;
    int64_t since_step = 0;     // first step of the sustained stretch
    int affected = 0;           // steps fired since activation (incl. the window that activated it)
    double cost_ms = 0;
    int since_report = 0;       // judged steps since the last line
    int fired_since_report = 0;
    int64_t last_seen_step = 0;
  };
  std::string prefix(int64_t step) const;

  std::shared_ptr<spdlog::logger> logger_;
  LiveConfig config_;
  std::map<std::string, Pattern> patterns_;
  std::map<std::string, int> run_finding_quiet_;  // detector -> judged steps until the next line
};

}  // namespace stepwatch::live
