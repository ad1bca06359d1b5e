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

void add_analyze_options(CLI::App& cmd, AnalyzeOptions& opts);
// Exit codes: 0 analyzed, 2 bad input (unreadable/malformed trace, bad option value).
int run_analyze(const AnalyzeOptions& opts);

}  // namespace stepwatch::cli
