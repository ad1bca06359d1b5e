#include "live/live_pipeline.h"

#include <algorithm>
#include <limits>

#include "core/nccl_join.h"
#include "stepwatch/core/timeline.h"
#include "stepwatch/detectors/registry.h"

namespace stepwatch::live {
namespace {

class CollectSink : public FindingSink {
 public:
  void emit(Finding f) override { findings.push_back(std::move(f)); }
  std::vector<Finding> findings;
};

bool by_start(const Event& a, const Event& b) { return a.start_ns < b.start_ns; }

}  // namespace

std::array<uint64_t, static_cast<size_t>(LossKind::kCount_)> LossCounters::snapshot() const noexcept {
  std::array<uint64_t, static_cast<size_t>(LossKind::kCount_)> out{};
  for (size_t k = 0; k < counts.size(); ++k) out[k] = counts[k].load(std::memory_order_relaxed);
  return out;
}

uint64_t LossCounters::total() const noexcept {
  uint64_t t = 0;
  for (const uint64_t n : snapshot()) t += n;
  return t;
}

LivePipeline::LivePipeline(const LiveConfig& config, const NameTable& names, LossCounters& losses,
                           LiveReporter& reporter)
    : config_(config),
      names_(names),
      losses_(losses),
      reporter_(reporter),
      detectors_(make_detectors(config.analysis)),
      assembler_(config.analysis),
      margin_ns_(config.flush_period_ms * 1'000'000),
      max_retained_(static_cast<size_t>(std::max<int64_t>(config.memory_cap_bytes / 2, 1 << 20)) / sizeof(Event)),
      ring_(static_cast<size_t>(std::max(config.ring_steps, 1))) {}

LivePipeline::~LivePipeline() = default;

void LivePipeline::ingest(std::vector<Event>& batch) {
  if (batch.empty()) return;
  reporter_.on_events(batch);
  for (const Event& e : batch) {
    last_data_ns_ = std::max(last_data_ns_, e.end_ns);
    note_step_source(e);
  }
  retained_.insert(retained_.end(), batch.begin(), batch.end());
  batch.clear();
  enforce_retention_cap();
}

void LivePipeline::note_step_source(const Event& e) {
  if (e.kind == EventKind::kStepMark) {
    if (e.start_ns >= analyzed_until_ns_) marks_.push_back(e);
    return;
  }
  if (e.kind != EventKind::kRange || e.has_flag(event_flags::kOnDevice) || e.end_ns <= e.start_ns) return;
  if (e.end_ns <= analyzed_until_ns_) return;  // nested in (or before) a step already judged
  if (e.has_flag(event_flags::kExplicitStep)) {
    explicit_ranges_.push_back(StepWindow{e.start_ns, e.end_ns, e.step, StepSource::kExplicit});
    return;
  }
  auto [it, inserted] = step_name_cache_.try_emplace(e.name, false);
  if (inserted) it->second = assembler_.matches_step_pattern(names_.view(e.name));
  if (it->second) {
    range_windows_.push_back(
        StepWindow{e.start_ns, e.end_ns, step_number_from_name(names_.view(e.name)), StepSource::kRange});
  }
}

void LivePipeline::advance(int64_t watermark_ns) {
  // No watermark yet (INT64_MIN until the first flush): nothing can be complete. Saturate rather
  // than overflow.
  if (watermark_ns < std::numeric_limits<int64_t>::min() + margin_ns_) return;
  judge_complete(watermark_ns - margin_ns_, false);
}

void LivePipeline::finish() {
  judge_complete(std::numeric_limits<int64_t>::max(), true);
  CollectSink sink;
  for (auto& d : detectors_) d->on_finish(sink);
  for (const Finding& f : sink.findings) reporter_.on_run_finding(f);
  report_losses(last_step_ ? last_step_->step : 0);
}

void LivePipeline::judge_complete(int64_t limit_ns, bool final_pass) {
  // The windows of the highest-priority source seen so far: C API ranges, then C API marks,
  // then NVTX/profiler ranges matching the step pattern.
  std::vector<StepWindow> windows;
  if (!explicit_ranges_.empty()) {
    windows = explicit_ranges_;
    marks_.clear();
    range_windows_.clear();
  } else if (!marks_.empty()) {
    std::sort(marks_.begin(), marks_.end(), by_start);
    for (size_t i = 0; i < marks_.size(); ++i) {
      const bool last = i + 1 == marks_.size();
      if (last && !final_pass) break;  // the open step ends at the next mark
      const int64_t end = last ? std::max(last_data_ns_, marks_[i].start_ns) : marks_[i + 1].start_ns;
      if (end > marks_[i].start_ns) windows.push_back(StepWindow{marks_[i].start_ns, end, marks_[i].step, StepSource::kExplicit});
    }
    range_windows_.clear();
  } else {
    windows = range_windows_;
  }
  std::sort(windows.begin(), windows.end(), [](const StepWindow& a, const StepWindow& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });

  std::vector<StepWindow> ready;
  int64_t outer_end = analyzed_until_ns_;
  for (const StepWindow& w : windows) {
    if (w.end_ns > limit_ns) break;  // records may still be missing: wait for the watermark
    if (w.end_ns <= outer_end) continue;  // nested in an outer step, or judged already
    outer_end = w.end_ns;
    ready.push_back(w);
  }
  if (ready.empty()) return;

  // The timeline needs everything up to the first GPU record after the last ready window (it
  // ends that window's last gap); later events only cost time. The retained events are not
  // kept sorted (the Timeline indexes them itself): a partition puts the slice first.
  const int64_t last_end = ready.back().end_ns;
  int64_t slice_end_ns = INT64_MAX;
  for (const Event& e : retained_) {
    if (e.is_gpu_record() && e.start_ns >= last_end) slice_end_ns = std::min(slice_end_ns, e.start_ns);
  }
  auto slice_end = std::partition(retained_.begin(), retained_.end(),
                                  [&](const Event& e) { return e.start_ns <= slice_end_ns; });
  // NCCL kernels learn their operation's size from NCCL's NVTX ranges before the analysis.
  attach_nccl_ranges(std::span<Event>(retained_.data(), static_cast<size_t>(slice_end - retained_.begin())));
  const std::span<const Event> slice(retained_.data(), static_cast<size_t>(slice_end - retained_.begin()));
  const Timeline timeline(slice, names_, config_.analysis);

  for (StepWindow w : ready) {
    if (w.number < 0) w.number = ordinal_;
    ++ordinal_;
    StepView view = analyze_step(w, timeline, config_.rank);
    auto overlaps = [&](const std::vector<std::pair<int64_t, int64_t>>& intervals) {
      return std::any_of(intervals.begin(), intervals.end(),
                         [&](const auto& iv) { return iv.first < w.end_ns && iv.second > w.start_ns; });
    };
    const StepStatus status = !gpu_traced_ || overlaps(untraced_) ? StepStatus::kUntraced
                              : overlaps(incomplete_)              ? StepStatus::kIncomplete
                              : steps_analyzed_ < static_cast<uint64_t>(config_.warmup_steps) ? StepStatus::kWarmup
                                                                                               : StepStatus::kJudged;
    const bool judged = status == StepStatus::kJudged;
    ++steps_analyzed_;

    CollectSink sink;
    if (judged) {
      for (auto& d : detectors_) d->on_step(view, sink);
    }

    // Flight recorder: the step's events (those overlapping its window).
    StepCapture capture;
    capture.window = w;
    for (const Event& e : slice) {
      if (e.start_ns < w.end_ns && e.end_ns >= w.start_ns) capture.events.push_back(e);
    }
    ring_.push(std::move(capture));

    for (const Finding& f : sink.findings) {
      bool& fired = fired_[f.detector];
      if (!fired) {
        fired = true;
        std::vector<const StepCapture*> recent;
        ring_.for_each([&](const StepCapture& c) { recent.push_back(&c); });
        reporter_.on_first_fire(f, recent, names_);
      }
    }
    reporter_.on_step(view, status, sink.findings);
    last_step_findings_ = static_cast<int>(sink.findings.size());
    last_step_ = std::move(view);
    analyzed_until_ns_ = w.end_ns;
  }

  // Forget judged windows and the events no later step can need: keep everything that ends
  // after the last judged step began (gap attribution reaches back to where the GPU went idle).
  const int64_t keep_from = ready.back().start_ns;
  std::erase_if(explicit_ranges_, [&](const StepWindow& w) { return w.end_ns <= analyzed_until_ns_; });
  std::erase_if(range_windows_, [&](const StepWindow& w) { return w.end_ns <= analyzed_until_ns_; });
  std::erase_if(marks_, [&](const Event& m) { return m.start_ns < analyzed_until_ns_; });
  std::erase_if(retained_, [&](const Event& e) { return e.end_ns < keep_from; });
  report_losses(last_step_->step);
}

void LivePipeline::enforce_retention_cap() {
  if (retained_.size() <= max_retained_) return;
  std::sort(retained_.begin(), retained_.end(), by_start);
  const size_t drop = retained_.size() - max_retained_ / 2;
  const bool any_steps = !explicit_ranges_.empty() || !marks_.empty() || !range_windows_.empty() || steps_analyzed_ > 0;
  if (!any_steps) {
    // No step marks at all: nothing could be judged. Say so once (not a loss of data we could
    // have used), and keep only the recent half.
    if (!no_marks_reported_) {
      no_marks_reported_ = true;
      Finding f;
      f.detector = "no_step_marks";
      f.rank = config_.rank;
      f.severity = Severity::kInfo;
      f.message = "no step marks after " + std::to_string(retained_.size()) +
                  " events (no stepwatch_step_begin, no NVTX range matching the step pattern): nothing can be "
                  "judged per step. Fix: mark steps — an NVTX range named 'step', stepwatch.step(), or "
                  "torch.profiler's ProfilerStep ranges; or set STEPWATCH_STEP_PATTERN.";
      f.with("events", static_cast<int64_t>(retained_.size())).with("step_pattern", config_.analysis.step_pattern);
      reporter_.on_run_finding(f);
    }
  } else {
    losses_.add(LossKind::kRetentionCap, drop);
  }
  retained_.erase(retained_.begin(), retained_.begin() + static_cast<std::ptrdiff_t>(drop));
}

void LivePipeline::report_losses(int64_t step) {
  const auto counts = losses_.snapshot();
  const LossSummary lost = summarize_losses(counts);
  if (lost.records == records_reported_ && lost.buffers == buffers_reported_) return;
  Finding f;
  f.detector = "data_loss";
  f.rank = config_.rank;
  f.step = step;
  f.severity = Severity::kWarning;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] != 0) f.with(std::string(to_string(static_cast<LossKind>(k))), static_cast<int64_t>(counts[k]));
  }
  const uint64_t unpaired = counts[static_cast<size_t>(LossKind::kUnpairedRange)];
  const bool only_unpaired = unpaired == lost.records && lost.buffers == 0;
  f.message = std::to_string(lost.records - records_reported_) + " trace records lost since the last report (" +
              std::to_string(lost.records) + " in all" + (lost.record_kinds.empty() ? "" : ": " + lost.record_kinds) +
              ")" + (lost.buffers == 0 ? "" : "; activity buffers: " + lost.buffer_kinds) +
              ": findings on recent steps may miss activity. " +
              (only_unpaired ? "Fix: pair every NVTX push/start and stepwatch_phase_push with its pop/end."
                             : "Fix: raise STEPWATCH_CUPTI_BUFFER_KB / STEPWATCH_CUPTI_MAX_BUFFERS / "
                               "STEPWATCH_MEMORY_MB, or flush more often (STEPWATCH_FLUSH_MS).");
  f.with("lost", static_cast<int64_t>(lost.records - records_reported_))
      .with("lost_total", static_cast<int64_t>(lost.records))
      .with("buffers_total", static_cast<int64_t>(lost.buffers));
  records_reported_ = lost.records;
  buffers_reported_ = lost.buffers;
  reporter_.on_run_finding(f);
}

}  // namespace stepwatch::live
