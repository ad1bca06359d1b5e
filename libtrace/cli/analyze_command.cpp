#include "analyze_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>

#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/detectors/thresholds.h"
#include "stepwatch/import/kineto_importer.h"
#include "stepwatch/import/nsys_importer.h"
#include "stepwatch/report/html.h"
#include "stepwatch/ranks/rank_merge.h"
#include "stepwatch/report/jsonl.h"
#include "stepwatch/report/rank_merge_report.h"
#include "stepwatch/report/text.h"

namespace stepwatch::cli {
namespace fs = std::filesystem;

namespace {

bool has_suffix(const fs::path& p, std::string_view suffix) {
  const std::string name = p.filename().string();
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_nsys_report(const fs::path& p) { return has_suffix(p, ".nsys-rep") || has_suffix(p, ".qdrep"); }

// What a directory contributes: traces only. `nsys export` writes X.sqlite next to X.nsys-rep, so
// reports are not picked up from a directory (named directly, they get the "export it" error).
bool is_trace_file(const fs::path& p) {
  return has_suffix(p, ".json") || has_suffix(p, ".json.gz") || has_suffix(p, ".sqlite");
}

// By content, not by name: an SQLite file is an nsys export, anything else Kineto JSON (gzipped
// or not). An nsys report (.nsys-rep / .qdrep) is a binary format of its own.
Trace import_trace_file(const std::string& path) {
  std::string head(16, '\0');
  {
    std::ifstream in(path, std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  }
  if (has_sqlite_magic(head)) return import_nsys_sqlite(path);
  if (is_nsys_report(path)) {
    throw ImportError(path, "an Nsight Systems report, not an SQLite export: export it with "
                            "nsys export --type sqlite " + path);
  }
  return import_kineto_file(path);
}

// A directory stands for its trace files (one rank each), in name order.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      // A live run folder (rank<R>-pid<P>/) holds its traces in dumps/; its summary.json is not one.
      const fs::path dir = fs::is_directory(fs::path(in) / "dumps", ec) ? fs::path(in) / "dumps" : fs::path(in);
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.is_regular_file(ec) && is_trace_file(entry.path()) && entry.path().filename() != "summary.json") {
          found.push_back(entry.path().string());
        }
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) throw ImportError(in, "directory contains no trace files (*.json, *.json.gz, *.sqlite)");
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

std::string validate_pattern(const std::string& pattern, const char* what) {
  const std::string why = check_pattern(pattern);
  if (!why.empty()) throw CLI::ValidationError(std::string(what), pattern + ": " + why);
  return pattern;
}

}  // namespace

void add_analyze_options(CLI::App& cmd, AnalyzeOptions& o) {
  cmd.add_option("inputs", o.inputs, "Trace files (Kineto .json, .json.gz; nsys SQLite exports .sqlite) or directories of them (one rank per file)")
      ->required();
  cmd.add_option("--json", o.json_path, "Write JSONL records (meta, step, finding, summary) to PATH, or - for stdout");
  cmd.add_option("--html", o.html_path, "Write a self-contained HTML report (all ranks, one file) to PATH");
  cmd.add_option("--step-pattern", o.step_pattern, "Regex for step range names")->default_str(kDefaultStepPattern);
  cmd.add_option("--data-pattern", o.data_pattern, "Regex for data-loading range names")
      ->default_str(kDefaultDataPattern);
  cmd.add_option("--min-pct", o.min_pct, "A step is faulty when a cost is at least this % of it")
      ->default_str("5")->check(CLI::Range(0.0, 100.0));
  cmd.add_option("--min-ms", o.min_ms, "... and at least this many ms")->default_str("1")->check(CLI::NonNegativeNumber);
  cmd.add_option("--sync-slack-us", o.sync_slack_us, "Rule-2 slack: a blocking call returning this close to the gap "
                 "start still caused it")->default_str("50")->check(CLI::NonNegativeNumber);
  cmd.add_option("--disable", o.disable, "Detector ids to turn off (see `stepwatch detectors`)");
  cmd.add_option("--threshold", o.thresholds,
                 "ID:PCT:MS[:CRITICAL_PCT] — one detector's own rule: faulty at >= PCT % of the step and >= MS ms, "
                 "critical from CRITICAL_PCT % (repeatable; docs/detectors.md)");
  cmd.add_flag("-q,--quiet", o.quiet, "No human-readable report");
  cmd.add_option("--max-rows", o.max_rows, "Rows of the per-step table before it is elided")->default_val(50);
}

int run_analyze(const AnalyzeOptions& o) {
  AnalysisConfig config;
  try {
    if (!o.step_pattern.empty()) config.step_pattern = validate_pattern(o.step_pattern, "--step-pattern");
    if (!o.data_pattern.empty()) config.data_pattern = validate_pattern(o.data_pattern, "--data-pattern");
  } catch (const CLI::ValidationError& e) {
    std::cerr << "stepwatch: error: " << e.what() << '\n';
    return 2;
  }
  if (o.min_pct >= 0) config.default_thresholds.min_pct = o.min_pct;
  if (o.min_ms >= 0) config.default_thresholds.min_ms = o.min_ms;
  if (o.sync_slack_us >= 0) config.sync_slack_ns = static_cast<int64_t>(o.sync_slack_us * 1000.0);
  for (const std::string& spec : o.thresholds) {
    if (const std::string why = apply_threshold(spec, config); !why.empty()) {
      std::cerr << "stepwatch: error: --threshold " << why << '\n';
      return 2;
    }
  }
  for (const std::string& id : o.disable) {
    const auto known = finding_kinds();
    if (std::none_of(known.begin(), known.end(), [&](const DetectorInfo& d) { return d.id == id; })) {
      std::cerr << "stepwatch: error: --disable " << id << ": unknown detector (see `stepwatch detectors`)\n";
      return 2;
    }
    config.enabled[id] = false;
  }

  std::ofstream json_file;
  std::ostream* json_out = nullptr;
  if (o.json_path == "-") {
    json_out = &std::cout;
  } else if (!o.json_path.empty()) {
    json_file.open(o.json_path);
    if (!json_file) {
      std::cerr << "stepwatch: error: cannot write " << o.json_path << '\n';
      return 2;
    }
    json_out = &json_file;
  }
  std::ofstream html_file;  // opened before the analysis: an unwritable path fails at once
  if (!o.html_path.empty()) {
    html_file.open(o.html_path);
    if (!html_file) {
      std::cerr << "stepwatch: error: cannot write " << o.html_path << '\n';
      return 2;
    }
  }
  std::vector<RankResult> html_ranks;
  // With JSONL on stdout the human report would corrupt it: it goes to stderr instead.
  std::ostream& text_out = o.json_path == "-" ? std::cerr : std::cout;
  const bool text = !o.quiet && o.json_path != "-";

  try {
    const std::vector<std::string> files = expand_inputs(o.inputs);
    if (json_out) *json_out << jsonl_meta() << '\n';
    // Several ranks: each is analyzed as alone, then together (the straggler verdict needs all).
    const bool merge = files.size() >= 2;
    std::vector<RankResult> merge_results;
    std::vector<RankCollectives> merge_collectives;
    std::optional<MergedAnalysis> merged;  // the HTML page shows the verdict too
    for (size_t i = 0; i < files.size(); ++i) {
      Trace trace = import_trace_file(files[i]);
      const int rank = trace.rank >= 0 ? trace.rank : static_cast<int>(i);
      auto detectors = make_detectors(config);
      RankResult result = analyze_rank(trace, rank, config, std::move(detectors));
      if (json_out) write_jsonl(result, *json_out);
      if (html_file.is_open()) html_ranks.push_back(result);
      if (text) {
        if (i > 0) text_out << '\n';
        write_text_report(result, text_out, TextReportOptions{o.max_rows});
      }
      if (merge) {
        merge_collectives.push_back(collect_collectives(trace, result));
        merge_results.push_back(std::move(result));
      }
    }
    if (merge) {
      std::vector<const RankResult*> results;
      for (const RankResult& r : merge_results) results.push_back(&r);
      merged = merge_ranks(merge_collectives, results, config);
      if (json_out) write_merged_jsonl(*merged, *json_out);
      if (text) {
        text_out << '\n';
        write_merged_text(*merged, text_out, o.max_rows);
      }
    }
    if (json_out) json_out->flush();
    if (html_file.is_open()) write_html_report(html_ranks, html_file, {}, merged ? &*merged : nullptr);
  } catch (const ImportError& e) {
    std::cerr << "stepwatch: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "stepwatch: error: " << e.what() << '\n';
    return 2;
  }
  return 0;
}

}  // namespace stepwatch::cli
