#include "analyze_command.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <thread>

#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/detectors/thresholds.h"
#include "stepwatch/import/kineto_importer.h"
#include "stepwatch/import/trace_file.h"
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

// What a directory contributes: traces only. `nsys export` writes X.sqlite next to X.nsys-rep, so
// reports are not picked up from a directory (named directly, they get the "export it" error).
bool is_trace_file(const fs::path& p) {
  return has_suffix(p, ".json") || has_suffix(p, ".json.gz") || has_suffix(p, ".sqlite");
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


ImportLimits import_limits(const AnalyzeOptions& o) {
  ImportLimits limits;
  limits.max_text_bytes = static_cast<uint64_t>(o.max_input_gb * double(uint64_t{1} << 30));
  limits.max_record_bytes = static_cast<size_t>(o.max_event_mb * double(1u << 20));
  return limits;
}

// One input's analysis, or why it failed.
struct RankOutcome {
  std::optional<RankResult> result;
  std::optional<RankCollectives> collectives;  // when ranks are merged
  std::map<std::string, uint64_t, std::less<>> skipped;
  std::string error;
};

RankOutcome analyze_file(const std::string& path, size_t index, const AnalysisConfig& config,
                         const ImportLimits& limits, bool merge, unsigned analysis_threads) {
  RankOutcome out;
  try {
    Trace trace = import_trace_file(path, limits);
    const int rank = trace.rank >= 0 ? trace.rank : static_cast<int>(index);
    auto detectors = make_detectors(config);
    out.result = analyze_rank(trace, rank, config, std::move(detectors), StepDetail::kWithoutGaps, kOfflineBatchEvents,
                              analysis_threads);
    if (merge) out.collectives = collect_collectives(trace, *out.result);
    out.skipped = std::move(trace.skipped);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

// Ranks are imported and analyzed in parallel (each import also reads ahead on a thread of its
// own), by a bounded number of workers; results keep the inputs' order. A file that fails does not
// stop the others: a job's directory with one truncated rank file still gets the other ranks.
std::vector<RankOutcome> analyze_files(const std::vector<std::string>& files, const AnalysisConfig& config,
                                       const ImportLimits& limits, bool merge) {
  constexpr size_t kMaxWorkers = 8;
  constexpr size_t kMaxAnalysisThreads = 4;  // past that, a rank's parts are too small to share
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min({files.size(), kMaxWorkers, cores});
  // The cores the workers leave free go to each rank's analysis (one file: all of them).
  const auto analysis_threads =
      static_cast<unsigned>(std::clamp<size_t>(cores / std::max<size_t>(1, workers), 1, kMaxAnalysisThreads));
  std::vector<RankOutcome> outcomes(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      outcomes[i] = analyze_file(files[i], i, config, limits, merge, analysis_threads);
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return outcomes;
}

// One line when the importer left records out (the analysis reports them as data loss too).
void write_skipped_line(const std::map<std::string, uint64_t, std::less<>>& skipped, std::ostream& out) {
  if (skipped.empty()) return;
  uint64_t total = 0;
  std::string reasons;
  for (const auto& [reason, count] : skipped) {
    total += count;
    reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(count);
  }
  out << "records left out by the importer: " << total << " (" << reasons << ")\n";
}

// The OS's reason an output could not be opened ("No such file or directory").
std::string cannot_write(const std::string& path) {
  const int err = errno;
  return "cannot write " + path + (err != 0 ? std::string(": ") + std::strerror(err) : std::string());
}

// Ranks given twice (the same file twice, or two files of one rank) are not one job's ranks: the
// merge would match a rank's collectives with themselves. Returns the sentence, or "".
std::string duplicate_ranks(const std::vector<const RankResult*>& results, const std::vector<std::string>& sources) {
  std::map<int, size_t> first;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto [it, inserted] = first.emplace(results[i]->rank, i);
    if (!inserted) {
      return "rank " + std::to_string(results[i]->rank) + " appears twice (" + sources[it->second] + " and " +
             sources[i] + "): these are not the ranks of one job, so they are not merged (each is reported alone)";
    }
  }
  return {};
}

// The names are Severity's own (to_string), as findings print them.
std::optional<Severity> severity_named(const std::string& s) {
  for (Severity v : {Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    if (to_string(v) == s) return v;
  }
  return std::nullopt;
}

}  // namespace

void add_analyze_options(CLI::App& cmd, AnalyzeOptions& o) {
  cmd.footer("Exit status: 0 analyzed (findings or not); 2 bad input (unreadable or malformed trace, bad option); "
             "3 no GPU activity (every input read fine but none holds a kernel, copy or memset: a CPU-only "
             "profiler trace).");
  cmd.add_option("inputs", o.inputs, "Trace files (Kineto .json, .json.gz; nsys SQLite exports .sqlite) or directories of "
                 "them (one rank per file); - reads one trace from standard input (FIFOs and /dev/stdin work too)")
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
  cmd.add_option("--fail-on", o.fail_on, "Exit with status 4 when a finding has this severity or a higher one "
                 "(info, warning, critical): a gate for CI jobs")->check(CLI::IsMember({"info", "warning", "critical"}));
  cmd.add_option("--max-rows", o.max_rows, "Rows of the per-step table before it is elided")->default_val(50);
  cmd.add_option("--max-input-gb", o.max_input_gb, "Refuse an input whose (uncompressed) text exceeds this many GiB; "
                 "memory does not grow with it, this bounds time")->default_val(64)->check(CLI::PositiveNumber);
  cmd.add_option("--max-event-mb", o.max_event_mb, "Leave out (and count) any single trace event larger than this many "
                 "MiB of JSON instead of holding it")->default_val(16)->check(CLI::PositiveNumber);
}

namespace {

// The analysis configuration from the options; false (after one error line) on a bad value.
bool read_config(const AnalyzeOptions& o, AnalysisConfig& config) {
  try {
    if (!o.step_pattern.empty()) config.step_pattern = validate_pattern(o.step_pattern, "--step-pattern");
    if (!o.data_pattern.empty()) config.data_pattern = validate_pattern(o.data_pattern, "--data-pattern");
  } catch (const CLI::ValidationError& e) {
    std::cerr << "stepwatch: error: " << e.what() << '\n';
    return false;
  }
  if (o.min_pct >= 0) config.default_thresholds.min_pct = o.min_pct;
  if (o.min_ms >= 0) config.default_thresholds.min_ms = o.min_ms;
  if (o.sync_slack_us >= 0) config.sync_slack_ns = static_cast<int64_t>(o.sync_slack_us * 1000.0);
  for (const std::string& spec : o.thresholds) {
    if (const std::string why = apply_threshold(spec, config); !why.empty()) {
      std::cerr << "stepwatch: error: --threshold " << why << '\n';
      return false;
    }
  }
  for (const std::string& id : o.disable) {
    const auto known = finding_kinds();
    if (std::none_of(known.begin(), known.end(), [&](const DetectorInfo& d) { return d.id == id; })) {
      std::cerr << "stepwatch: error: --disable " << id << ": unknown detector (see `stepwatch detectors`)\n";
      return false;
    }
    config.enabled[id] = false;
  }
  return true;
}

}  // namespace

int run_analyze(const AnalyzeOptions& o) {
  AnalysisConfig config;
  if (!read_config(o, config)) return kExitBadInput;

  std::ofstream json_file;
  std::ostream* json_out = nullptr;
  if (o.json_path == "-") {
    json_out = &std::cout;
  } else if (!o.json_path.empty()) {
    errno = 0;
    json_file.open(o.json_path);
    if (!json_file) {
      std::cerr << "stepwatch: error: " << cannot_write(o.json_path) << '\n';
      return kExitBadInput;
    }
    json_out = &json_file;
  }
  std::ofstream html_file;  // opened before the analysis: an unwritable path fails at once
  if (!o.html_path.empty()) {
    errno = 0;
    html_file.open(o.html_path);
    if (!html_file) {
      std::cerr << "stepwatch: error: " << cannot_write(o.html_path) << '\n';
      return kExitBadInput;
    }
  }
  std::vector<RankResult> html_ranks;
  // With JSONL on stdout the human report would corrupt it: it goes to stderr instead.
  std::ostream& text_out = o.json_path == "-" ? std::cerr : std::cout;
  const bool text = !o.quiet;
  const std::optional<Severity> fail_at = severity_named(o.fail_on);
  bool failing_finding = false;
  auto note_findings = [&](const std::vector<Finding>& findings) {
    for (const Finding& f : findings) failing_finding = failing_finding || (fail_at && f.severity >= *fail_at);
  };
  size_t failed_inputs = 0;
  size_t total_inputs = 0;

  try {
    const std::vector<std::string> files = expand_inputs(o.inputs);
    if (std::count(files.begin(), files.end(), "-") > 1) {
      std::cerr << "stepwatch: error: - (standard input) can be given once\n";
      return kExitBadInput;
    }
    total_inputs = files.size();
    if (json_out) *json_out << jsonl_meta() << '\n';
    // Several ranks: each is analyzed as alone, then together (the straggler verdict needs all).
    const bool merge = files.size() >= 2;
    std::vector<RankOutcome> outcomes = analyze_files(files, config, import_limits(o), merge);
    std::vector<RankResult> merge_results;
    std::vector<RankCollectives> merge_collectives;
    std::optional<MergedAnalysis> merged;  // the HTML page shows the verdict too
    std::vector<std::string> merge_sources;
    size_t without_gpu = 0;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      RankOutcome& outcome = outcomes[i];
      if (!outcome.error.empty()) {
        // Said, counted, and the run goes on with the other inputs.
        std::cerr << "stepwatch: error: " << outcome.error << '\n';
        ++failed_inputs;
        continue;
      }
      const RankResult& result = *outcome.result;
      if (result.gpu_records == 0 && !result.gpu_traced) {
        // A table of zeros would read as an idle GPU: say what the trace lacks, once.
        std::cerr << "stepwatch: " << files[i] << ": no GPU activity (no kernel, copy or memset): nothing to analyze; "
                  << "record the GPU (torch.profiler activities=[ProfilerActivity.CUDA], nsys -t cuda)\n";
        ++without_gpu;
        continue;
      }
      note_findings(result.findings);
      if (json_out) write_jsonl(result, *json_out);
      if (html_file.is_open()) html_ranks.push_back(result);
      if (text) {
        if (i > 0) text_out << '\n';
        write_text_report(result, text_out, TextReportOptions{o.max_rows});
        write_skipped_line(outcome.skipped, text_out);
      }
      if (merge) {
        merge_collectives.push_back(std::move(*outcome.collectives));
        merge_results.push_back(std::move(*outcome.result));
        merge_sources.push_back(files[i]);
      }
    }
    if (without_gpu > 0 && without_gpu == outcomes.size()) return kExitNoGpuActivity;
    std::vector<const RankResult*> results;
    for (const RankResult& r : merge_results) results.push_back(&r);
    const std::string duplicated = duplicate_ranks(results, merge_sources);
    if (!duplicated.empty()) std::cerr << "stepwatch: warning: " << duplicated << '\n';
    if (merge && results.size() >= 2 && duplicated.empty()) {
      merged = merge_ranks(merge_collectives, results, config);
      note_findings(merged->findings);
      if (json_out) write_merged_jsonl(*merged, *json_out);
      if (text) {
        text_out << '\n';
        write_merged_text(*merged, text_out, o.max_rows);
      }
    }
    if (json_out) json_out->flush();
    if (html_file.is_open()) write_html_report(html_ranks, html_file, {}, merged ? &*merged : nullptr);
  } catch (const std::exception& e) {
    std::cerr << "stepwatch: error: " << e.what() << '\n';
    return kExitBadInput;
  }
  if (failed_inputs > 0) {
    if (failed_inputs < total_inputs) {
      std::cerr << "stepwatch: " << failed_inputs << " of " << total_inputs << " inputs could not be analyzed (above); "
                << "the other " << total_inputs - failed_inputs << " were\n";
    }
    return kExitBadInput;
  }
  return failing_finding ? kExitFindings : kExitAnalyzed;
}

}  // namespace stepwatch::cli
