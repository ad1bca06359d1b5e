#include "live/outputs/run_outputs.h"

#include <filesystem>
#include <set>
#include <tuple>

#include "stepwatch/export/kineto_writer.h"
#include "stepwatch/report/jsonl.h"

namespace stepwatch::live {
namespace fs = std::filesystem;

RunOutputs::RunOutputs(const LiveConfig& config, std::string run_dir, LogReporter& log, const NameTable& names)
    : config_(config),
      run_dir_(std::move(run_dir)),
      log_(log),
      names_(names),
      metrics_(config.rank, STEPWATCH_VERSION) {
  summary_.rank = config.rank;
}

RunOutputs::~RunOutputs() {
  if (steps_) std::fclose(steps_);
  if (findings_) std::fclose(findings_);
}

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

void RunOutputs::append(std::FILE*& file, const char* name, const std::string& line) {
  if (!ensure_dir()) return;
  if (!file) {
    const std::string path = run_dir_ + "/" + name;
    file = std::fopen(path.c_str(), "w");
    if (!file) {
      dir_failed_ = true;
      log_.warn("cannot write " + path + ": file outputs off");
      return;
    }
    // Line-buffered with room for any line: each JSONL line leaves in one write() at its newline,
    // so a job killed by SIGTERM (no atexit, no flush) never leaves a torn line behind.
    std::setvbuf(file, nullptr, _IOLBF, 1 << 16);
    const std::string meta = jsonl_meta() + "\n";
    std::fwrite(meta.data(), 1, meta.size(), file);
  }
  std::fwrite(line.data(), 1, line.size(), file);
  std::fputc('\n', file);
}

void RunOutputs::on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) {
  stats_.add_step(step, status);
  // Without GPU data a step's breakdown would read as 100% idle: only traced steps are written.
  if (has_breakdown(status)) append(steps_, "steps.jsonl", jsonl_step(step));
  for (const Finding& f : findings) append(findings_, "findings.jsonl", jsonl_finding(f));
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
  append(findings_, "findings.jsonl", jsonl_finding(finding));
  log_.on_run_finding(finding);
}

void RunOutputs::on_events(std::span<const Event> events) { stats_.add_events(events); }

void RunOutputs::on_first_fire(const Finding& finding, std::span<const StepCapture* const> recent,
                               const NameTable& names) {
  if (dumps_written_ >= config_.max_dumps || dump_bytes_ >= config_.max_dump_bytes || recent.empty()) return;
  if (!ensure_dir()) return;
  // One Trace of the recent steps. An event overlapping two steps is in both captures: once here.
  Trace trace;
  trace.source = "stepwatch flight recorder";
  trace.format = "stepwatch";
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
  const std::string path =
      run_dir_ + "/dumps/" + finding.detector + "-step" + std::to_string(finding.step) + ".json.gz";
  try {
    write_kineto_file(trace, path);
  } catch (const std::exception& e) {
    log_.warn(std::string("flight-recorder dump failed: ") + e.what());
    return;
  }
  ++dumps_written_;
  dump_bytes_ += static_cast<int64_t>(fs::file_size(path, ec));
  log_.info("flight recorder: last " + std::to_string(recent.size()) + " steps written to " + path +
            " (open in ui.perfetto.dev or `stepwatch analyze`)");
}

void RunOutputs::write_exit_summary(const SelfOverhead& overhead) {
  const std::string text = stats_.text(names_, summary_, overhead);
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
  if (std::FILE* f = std::fopen((run_dir_ + "/summary.txt").c_str(), "w")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  const std::string json = stats_.json(names_, summary_, overhead);
  if (std::FILE* f = std::fopen((run_dir_ + "/summary.json").c_str(), "w")) {
    std::fwrite(json.data(), 1, json.size(), f);
    std::fputc('\n', f);
    std::fclose(f);
  }
}

void RunOutputs::flush() {
  if (steps_) std::fflush(steps_);
  if (findings_) std::fflush(findings_);
  log_.flush();
}

}  // namespace stepwatch::live
