#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace stepwatch::cli {

struct AnalyzeOptions {
  std::vector<std::string> inputs;
  std::string json_path;  // "" = none, "-" = stdout
  std::string html_path;  // "" = none
  std::string step_pattern;
  std::string data_pattern;
  double min_pct = -1;
  double min_ms = -1;
  double sync_slack_us = -1;
  std::vector<std::string> disable;
  std::vector<std::string> thresholds;  // ID:PCT:MS[:CRITICAL_PCT]
  bool quiet = false;
  size_t max_rows = 50;
  double max_input_gb = 64;   // ImportLimits::max_text_bytes
  double max_event_mb = 16;   // ImportLimits::max_record_bytes
};

// Exit statuses of `stepwatch analyze` (README "Offline analysis", the exit-status table).
inline constexpr int kExitAnalyzed = 0;
inline constexpr int kExitBadInput = 2;       // unreadable/malformed trace, bad option value, usage
inline constexpr int kExitNoGpuActivity = 3;  // every input read fine but holds no GPU record at all

void add_analyze_options(CLI::App& cmd, AnalyzeOptions& opts);
int run_analyze(const AnalyzeOptions& opts);

}  // namespace stepwatch::cli
