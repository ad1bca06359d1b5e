#include "live/outputs/log_reporter.h"

#include <cstdio>

#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace stepwatch::live {
namespace {

std::string ms1(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  return buf;
}

}  // namespace

std::shared_ptr<spdlog::logger> make_job_logger(const std::string& level, const std::string& test_sink_path) {
  std::shared_ptr<spdlog::sinks::sink> sink;
  if (test_sink_path.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(test_sink_path, /*truncate=*/false);
  }
  auto logger = std::make_shared<spdlog::logger>("stepwatch", std::move(sink));
  logger->set_pattern("%v");  // our lines carry their own [stepwatch][rank R][step N] prefix
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  // Never throw into the host: spdlog's error handler only counts.
  logger->set_error_handler([](const std::string&) {});
  return logger;
}

LogReporter::LogReporter(std::shared_ptr<spdlog::logger> logger, const LiveConfig& config)
    : logger_(std::move(logger)), config_(config) {}

std::string LogReporter::prefix(int64_t step) const {
  return "[stepwatch][rank " + std::to_string(config_.rank) + "][step " + std::to_string(step) + "] ";
}

void LogReporter::info(const std::string& line) {
  logger_->info("[stepwatch][rank {}] {}", config_.rank, line);
}
void LogReporter::warn(const std::string& line) {
  logger_->warn("[stepwatch][rank {}] {}", config_.rank, line);
}
void LogReporter::step_line(int64_t step, bool warning, const std::string& line) {
  logger_->log(warning ? spdlog::level::warn : spdlog::level::info, "{}{}", prefix(step), line);
}
void LogReporter::flush() { logger_->flush(); }

void LogReporter::on_step(const StepView& step, bool judged, std::span<const Finding> findings) {
  if (!judged) return;
  for (auto& [id, quiet] : run_finding_quiet_) quiet = quiet > 0 ? quiet - 1 : 0;
  // Every detector with history or a finding this step advances its window.
  // Established patterns (trends, periodic stalls) are reported at once, rate-limited like
  // whole-run findings; the sustained rule below is for per-step costs.
  for (const Finding& f : findings) {
    if (f.established) on_run_finding(f);
  }
  for (const Finding& f : findings) {
    if (!f.established) patterns_.try_emplace(f.detector);
  }
  for (auto& [id, p] : patterns_) {
    const Finding* f = nullptr;
    for (const Finding& x : findings) {
      if (x.detector == id && !x.established) f = &x;
    }
    p.window.push_back(f ? f->cost_ms : -1.0);
    if (p.window.size() > static_cast<size_t>(config_.sustain_window)) p.window.pop_front();
    int fired = 0;
    double window_cost = 0;
    for (double c : p.window) {
      if (c >= 0) {
        ++fired;
        window_cost += c;
      }
    }
    if (f) p.last_seen_step = step.step;

    if (!p.active) {
      if (fired >= config_.sustain_min && f) {
        p.active = true;
        p.since_step = step.step;
        p.affected = fired;
        p.cost_ms = window_cost;
        p.since_report = 0;
        p.fired_since_report = 0;
        const auto level = f->severity == Severity::kInfo ? spdlog::level::info : spdlog::level::warn;
        logger_->log(level, "{}", format_log_line(*f));
      }
      continue;
    }
    ++p.since_report;
    if (f) {
      ++p.affected;
      ++p.fired_since_report;
      p.cost_ms += f->cost_ms;
    }
    if (fired == 0) {
      logger_->info("{}{} cleared: not seen in the last {} steps (was on {} steps since step {}, total cost {}).",
                    prefix(step.step), id, p.window.size(), p.affected, p.since_step, ms1(p.cost_ms));
      p = Pattern{};
      continue;
    }
    if (p.since_report >= config_.persist_every && p.fired_since_report > 0) {
      logger_->warn("{}{} persists: {} of the last {} steps, total cost {} since step {}.", prefix(step.step), id,
                    p.fired_since_report, p.since_report, ms1(p.cost_ms), p.since_step);
      p.since_report = 0;
      p.fired_since_report = 0;
    }
  }
  std::erase_if(patterns_, [](const auto& kv) {
    const Pattern& p = kv.second;
    return !p.active && std::none_of(p.window.begin(), p.window.end(), [](double c) { return c >= 0; });
  });
}

void LogReporter::on_run_finding(const Finding& f) {
  // Whole-run findings (data_loss, no_step_marks): the first one at once, then at most one line
  // per persist_every judged steps per detector.
  auto [it, inserted] = run_finding_quiet_.try_emplace(f.detector, 0);
  if (!inserted && it->second > 0) return;
  it->second = config_.persist_every;
  const auto level = f.severity == Severity::kInfo ? spdlog::level::info : spdlog::level::warn;
  logger_->log(level, "{}", format_log_line(f));
}

}  // namespace stepwatch::live
