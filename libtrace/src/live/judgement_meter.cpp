#include "live/judgement_meter.h"

#include <algorithm>
#include <cstdio>

namespace stepwatch::live {
namespace {
constexpr size_t kMaxLags = 1u << 16;
}

std::string live_no_step_marks_advice() {
  return "Fix: mark steps with what reaches the live library — stepwatch.step() (or "
         "stepwatch.torch.watch(optimizer), which also turns torch.profiler's profile.step() into step marks), "
         "the C API stepwatch_step_begin/end, or an NVTX range named 'step' (torch.cuda.nvtx.range_push(\"step\")); "
         "or set STEPWATCH_STEP_PATTERN to the name of your NVTX step range. torch.profiler's ProfilerStep ranges "
         "name steps only in its own traces (stepwatch analyze), never live.";
}

JudgementMeter::JudgementMeter(Reporter& next, int64_t (*now_ns)() noexcept) : next_(next), now_ns_(now_ns) {}

void JudgementMeter::on_step(const StepView& step, StepStatus status, std::span<const Finding> findings) {
  switch (status) {
    case StepStatus::kJudged: ++counts_.judged; break;
    case StepStatus::kWarmup: ++counts_.warmup; break;
    case StepStatus::kUntraced: ++counts_.untraced; break;
    case StepStatus::kIncomplete: ++counts_.incomplete; break;
  }
  if (lags_ns_.size() >= kMaxLags) lags_ns_.erase(lags_ns_.begin(), lags_ns_.begin() + kMaxLags / 2);
  lags_ns_.push_back(std::max<int64_t>(now_ns_() - step.end_ns, 0));
  next_.on_step(step, status, findings);
}

void JudgementMeter::on_run_finding(const Finding& finding) {
  if (finding.detector != "no_step_marks") {
    next_.on_run_finding(finding);
    return;
  }
  Finding live = finding;
  const size_t fix = live.message.find("Fix:");
  live.message = (fix == std::string::npos ? live.message + " " : live.message.substr(0, fix)) + live_no_step_marks_advice();
  next_.on_run_finding(live);
}

void JudgementMeter::on_first_fire(const Finding& finding, std::span<const StepCapture* const> recent,
                                   const NameTable& names) {
  next_.on_first_fire(finding, recent, names);
}

void JudgementMeter::on_events(std::span<const Event> events) { next_.on_events(events); }

void JudgementMeter::on_summary(const RunSummary& summary) { next_.on_summary(summary); }

double JudgementMeter::lag_ms(double q) const {
  if (lags_ns_.empty()) return -1;
  std::vector<int64_t> v = lags_ns_;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * double(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return double(v[k]) / 1e6;
}

std::string JudgementMeter::summary_line() const {
  if (counts_.total() == 0) return {};
  const uint64_t traced = counts_.judged + counts_.incomplete;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "judgement: %llu of %llu traced steps judged complete (%.1f%%), %llu incomplete (GPU records missing), "
                "%llu warm-up, %llu untraced; lag from step end to judged: median %.0f ms, p90 %.0f ms, max %.0f ms",
                static_cast<unsigned long long>(counts_.judged), static_cast<unsigned long long>(traced),
                traced > 0 ? 100.0 * double(counts_.judged) / double(traced) : 0.0,
                static_cast<unsigned long long>(counts_.incomplete), static_cast<unsigned long long>(counts_.warmup),
                static_cast<unsigned long long>(counts_.untraced), lag_ms(0.5), lag_ms(0.9), lag_ms(1.0));
  return buf;
}

JudgementMeter::Counts JudgementMeter::take_delta() {
  Counts d;
  d.judged = counts_.judged - reported_.judged;
  d.warmup = counts_.warmup - reported_.warmup;
  d.untraced = counts_.untraced - reported_.untraced;
  d.incomplete = counts_.incomplete - reported_.incomplete;
  reported_ = counts_;
  return d;
}

}  // namespace stepwatch::live
