#include "live/outputs/run_outputs.h"

#include <filesystem>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "stepwatch/export/kineto_writer.h"
#include "stepwatch/report/jsonl.h"

namespace stepwatch::live {
namespace fs = std::filesystem;

RunOutputs::RunOutputs(const LiveConfig& config, std::string run_dir, LogReporter& log, const NameTable& names,
                       const FileIo& io)
    : config_(config),
      run_dir_(std::move(run_dir)),
      log_(log),
      names_(names),
      metrics_(config.rank, STEPWATCH_VERSION),
      io_(io),
      steps_(run_dir_ + "/steps.jsonl", io),
      findings_(run_dir_ + "/findings.jsonl", io) {
  summary_.rank = config.rank;
}

RunOutputs::~RunOutputs() = default;

bool RunOutputs::ensure_dir() {
  if (dir_ok_) return true;
  if (dir_failed_) return false;
  std::error_code ec;
  fs::create_directories(run_dir_, ec);
  if (ec) {
    dir_failed_ = true;
    log_.warn("cannot create " + run_dir_ + " (" + ec.message() +
              "): no steps.jsonl/findings.jsonl/dumps; log lines continue. Set STEPWATCH_OUTPUT_DIR.");
    return false;
  }
  dir_ok_ = true;
  return true;
}

void RunOutputs::append(OutputFile& file, const std::string& line) {
  if (!ensure_dir()) return;
  const bool was_failed = file.failed();
  if (file.lines_written() == 0 && !was_failed) file.append_line(jsonl_meta());
  file.append_line(line);
  if (was_failed || !file.failed()) return;
  // The one line for this file; what it lost from here on is in the exit summary.
  failed_files_.push_back(&file);
  log_.warn("cannot write " + file.path() + ": " + file.error() +
            "; stopped writing it (it keeps only whole lines; the lines not written are counted in the exit "
            "summary). Fix: free space under STEPWATCH_OUTPUT_DIR, or point it elsewhere.");
}

std::vector<OutputWriteFailure> RunOutputs::write_failures() const {
  std::vector<OutputWriteFailure> out;
  for (const OutputFile* f : failed_files_) {
    out.push_back({fs::path(f->path()).filename().string(), f->error(), f->lines_written(), f->lines_lost()});
  }
  out.insert(out.end(), whole_file_failures_.begin(), whole_file_failures_.end());
  return out;
}

void RunOutputs::on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) {
  stats_.add_step(step, status);
  // Without GPU data a step's breakdown would read as 100% idle: only traced steps are written.
  if (has_breakdown(status)) append(steps_, jsonl_step(step));
  for (const Finding& f : findings) append(findings_, jsonl_finding(f));
  log_.on_step(step, status == StepStatus::kJudged, findings);
  metrics_.add_step(step, status, findings);
  if (status != StepStatus::kWarmup) {
    individual_.observe(step, has_breakdown(status));
    auto score = [](const std::optional<IndividualScoreTracker::Score>& s) {
      return s ? std::optional<double>(s->score) : std::nullopt;
    };
    metrics_.set_individual_scores(score(individual_.step_time()), score(individual_.collective_wait()));
  }
}

void RunOutputs::on_run_finding(const Finding& finding) {
  metrics_.add_run_finding(finding);
  append(findings_, jsonl_finding(finding));
  log_.on_run_finding(finding);
}

void RunOutputs::on_events(std::span<const Event> events) { stats_.add_events(events); }

void RunOutputs::on_first_fire(const Finding& finding, std::span<const StepCapture* const> recent,
                               const NameTable& names) {
  if (dumps_failed_ || dumps_written_ >= config_.max_dumps || dump_bytes_ >= config_.max_dump_bytes ||
      recent.empty()) {
    return;
  }
  if (!ensure_dir()) return;
  // One Trace of the recent steps. An event overlapping two steps is in both captures: once here.
  Trace trace;
  trace.source = "stepwatch flight recorder";
  trace.format = "stepwatch";
  trace.gpu_traced = true;  // a dump follows a judged step: CUPTI was delivering
  trace.rank = config_.rank;
  std::set<std::tuple<int64_t, int64_t, uint8_t, uint64_t, NameId, uint32_t, uint32_t>> seen;
  for (const StepCapture* c : recent) {
    for (const Event& e : c->events) {
      if (!seen.emplace(e.start_ns, e.end_ns, static_cast<uint8_t>(e.kind), e.correlation, e.name, e.thread, e.stream)
               .second) {
        continue;
      }
      Event copy = e;
      copy.name = trace.names.intern(names.view(e.name));
      trace.events.push_back(copy);
    }
  }
  std::error_code ec;
  fs::create_directories(run_dir_ + "/dumps", ec);
  const std::string name = finding.detector + "-step" + std::to_string(finding.step) + ".json.gz";
  const std::string path = run_dir_ + "/dumps/" + name;
  // Written under a hidden name, then renamed: a reader (or a job killed mid-dump) never sees part
  // of a dump under its real name.
  const std::string partial = run_dir_ + "/dumps/.partial-" + name;
  try {
    write_kineto_file(trace, partial);
    fs::rename(partial, path);
  } catch (const std::exception& e) {
    // The disk that refused this dump would refuse the next ones too, so dumps stop here (one
    // line, listed in the exit summary).
    fs::remove(partial, ec);
    dumps_failed_ = true;
    whole_file_failures_.push_back({"dumps", std::string(e.what()) + "; no more dumps this run", 0, 0});
    log_.warn(std::string("flight-recorder dump failed: ") + e.what() +
              " (the partial file is removed); no more dumps this run. Fix: free space under STEPWATCH_OUTPUT_DIR.");
    return;
  }
  ++dumps_written_;
  const auto size = fs::file_size(path, ec);
  if (!ec) dump_bytes_ += static_cast<int64_t>(size);
  log_.info("flight recorder: last " + std::to_string(recent.size()) + " steps written to " + path +
            " (open in ui.perfetto.dev or `stepwatch analyze`)");
}

// "  output write failures: steps.jsonl (write failed after 12 lines: ...; 40 lines not written)"
std::string RunOutputs::failures_text() const {
  const std::vector<OutputWriteFailure> failures = write_failures();
  if (failures.empty()) return "";
  std::string out = "[stepwatch][rank " + std::to_string(config_.rank) + "]   output write failures:";
  for (size_t i = 0; i < failures.size(); ++i) {
    const OutputWriteFailure& f = failures[i];
    out += (i == 0 ? " " : ", ") + f.file + " (" + f.error;
    if (f.file.ends_with(".jsonl")) out += "; " + std::to_string(f.lines_lost) + " lines not written";
    out += ")";
  }
  return out + "\n";
}

// summary.json's list of the outputs that could not be written (only when there are any).
void RunOutputs::add_failures(nlohmann::ordered_json& summary) const {
  const std::vector<OutputWriteFailure> failures = write_failures();
  if (failures.empty()) return;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const OutputWriteFailure& f : failures) {
    list.push_back({{"file", f.file}, {"error", f.error}, {"lines_written", f.lines_written}, {"lines_lost", f.lines_lost}});
  }
  summary["output_write_failures"] = std::move(list);
}

void RunOutputs::write_summary_file(const char* name, const std::string& text) {
  std::string error;
  if (write_file_atomically(run_dir_ + "/" + name, text, error, io_)) return;
  whole_file_failures_.push_back({name, error, 0, 0});
  log_.warn("cannot write " + error + "; the exit summary is in the job log above. Fix: free space under "
            "STEPWATCH_OUTPUT_DIR, or point it elsewhere.");
}

void RunOutputs::write_exit_summary(const SelfOverhead& overhead) {
  // The failures known now (the JSONL files, dumps) are part of the summary; the summary files'
  // own failures can only be told in the log, after them.
  const std::string text = stats_.text(names_, summary_, overhead) + failures_text();
  nlohmann::ordered_json summary = stats_.json(names_, summary_, overhead);
  add_failures(summary);
  const std::string json = summary.dump(2) + "\n";
  // The log gets the summary line by line (one logger call each, so prefixes stay intact).
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    const std::string prefix = "[stepwatch][rank " + std::to_string(config_.rank) + "] ";
    log_.info(line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line);
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  if (!ensure_dir()) return;
  write_summary_file("summary.txt", text);
  write_summary_file("summary.json", json);
}

// The JSONL files hold nothing back (each line left in its own write): only the log is buffered.
void RunOutputs::flush() { log_.flush(); }

}  // namespace stepwatch::live
