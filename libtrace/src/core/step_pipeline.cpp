#include "stepwatch/core/step_pipeline.h"

#include <algorithm>

#include "core/nccl_join.h"
#include "core/step_inference.h"
#include "stepwatch/core/timeline.h"

namespace stepwatch {
namespace {

bool overlaps(const std::vector<std::pair<int64_t, int64_t>>& intervals, const StepWindow& w) {
  return std::any_of(intervals.begin(), intervals.end(),
                     [&](const auto& iv) { return iv.first < w.end_ns && iv.second > w.start_ns; });
}

Interval extent_of(std::span<const Event> events) {
  DataExtent ext;
  for (const Event& e : events) ext.add(e);
  return ext.get();
}

}  // namespace

StepPipeline::StepPipeline(PipelineOptions options, const NameTable& names, Reporter& reporter,
                           std::vector<std::unique_ptr<Detector>> detectors)
    : options_(std::move(options)),
      names_(names),
      reporter_(reporter),
      detectors_(std::move(detectors)),
      sources_(options_.analysis),
      inferrer_(std::make_unique<StepInferrer>()),
      next_infer_records_(std::max<size_t>(options_.infer_min_records, 1)),
      ring_(std::max<size_t>(options_.ring_steps, 1)),
      summary_(options_.rank) {}

StepPipeline::~StepPipeline() = default;

// ---- input -----------------------------------------------------------------------------------

void StepPipeline::ingest(std::span<const Event> events) {
  if (events.empty()) return;
  reporter_.on_events(events);
  note_late(events);
  sources_.observe(events, names_);
  retained_.insert(retained_.end(), events.begin(), events.end());
  enforce_retention_cap();
}

void StepPipeline::ingest(std::vector<Event>&& events) {
  if (events.empty()) return;
  if (!retained_.empty()) {
    ingest(std::span<const Event>(events));
    events.clear();
    return;
  }
  reporter_.on_events(events);
  note_late(events);
  sources_.observe(events, names_);
  retained_ = std::move(events);
  enforce_retention_cap();
}

void StepPipeline::note_late(std::span<const Event> events) {
  if (analyzed_until_ns_ == std::numeric_limits<int64_t>::min()) return;
  for (const Event& e : events) {
    // It ended inside a step already judged: that step was judged without it. Kept as context
    // for the steps still to come (gap attribution looks back), and counted.
    const int64_t t = e.kind == EventKind::kStepMark ? e.start_ns : e.end_ns;
    late_records_ += t < analyzed_until_ns_;
  }
}

void StepPipeline::set_losses(const LossSnapshot& losses) { external_losses_ = losses; }

std::shared_ptr<const LossSnapshot> StepPipeline::losses_now() {
  LossSnapshot now = external_losses_;
  now.add_records(to_string(LossKind::kLateRecord), late_records_);
  now.add_records(to_string(LossKind::kRetentionCap), evicted_records_);
  if (!losses_ || *losses_ != now) losses_ = std::make_shared<const LossSnapshot>(std::move(now));
  return losses_;
}

// ---- judging ---------------------------------------------------------------------------------

void StepPipeline::advance(int64_t watermark_ns) {
  // No watermark yet (INT64_MIN until the first flush): nothing can be complete. Saturate rather
  // than overflow.
  if (finished_ || watermark_ns < std::numeric_limits<int64_t>::min() + options_.margin_ns) return;
  judge(watermark_ns - options_.margin_ns, false);
}

void StepPipeline::finish(std::chrono::steady_clock::time_point deadline) {
  if (finished_) return;
  judge(std::numeric_limits<int64_t>::max(), true, deadline);
  finished_ = true;
  RunView run;
  run.rank = options_.rank;
  run.steps = steps_analyzed_;
  run.last_step = last_step_ ? last_step_->step : 0;
  run.losses = losses_now();
  FindingCollector sink;
  for (auto& d : detectors_) d->on_finish(run, sink);
  for (const Finding& f : sink.findings) {
    summary_.add_run_finding(f);
    reporter_.on_run_finding(f);
  }
  summary_.set_losses(*run.losses);
  reporter_.on_summary(summary_.build());
}

std::vector<StepWindow> StepPipeline::take_windows(int64_t limit_ns, bool final) {
  if (sources_.any()) {
    std::vector<StepWindow> windows = sources_.take_ready(analyzed_until_ns_, limit_ns, final);
    // Marks that delimit no step at all (one mark at the data's very end) count as no source.
    if (!windows.empty() || !final || steps_analyzed_ > 0) {
      segmentation_.source = sources_.source();
      segmentation_.matched_name = sources_.matched_name();
      return windows;
    }
  }
  std::vector<StepWindow> windows = inferred_windows(limit_ns, final);
  if (!windows.empty() || inferrer_->locked() || !final) return windows;
  // No source and no loop found: the data not judged yet is one pseudo-step (no_step_marks says so).
  const Interval ext = extent_of(retained_);
  if (steps_analyzed_ > 0 && ext.end <= analyzed_until_ns_) return windows;
  segmentation_.source = StepSource::kWholeTrace;
  const int64_t start = steps_analyzed_ > 0 ? std::max(ext.start, analyzed_until_ns_) : ext.start;
  windows.push_back(StepWindow{start, ext.end, static_cast<int64_t>(steps_analyzed_), StepSource::kWholeTrace});
  return windows;
}

std::vector<StepWindow> StepPipeline::inferred_windows(int64_t limit_ns, bool final) {
  // Inference reads complete records only: everything at the end, else what ended by the limit.
  std::vector<Event> complete_copy;
  std::span<const Event> complete(retained_);
  if (!final) {
    for (const Event& e : retained_) {
      if (e.end_ns <= limit_ns) complete_copy.push_back(e);
    }
    complete = complete_copy;
  }
  const Interval ext = extent_of(complete);
  if (inferrer_->locked()) return inferrer_->take_ready(complete, names_, ext, limit_ns, final);
  if (!final) {
    // Tried when enough of the loop is there, then as the data doubles (bounded total work).
    const auto gpu = static_cast<size_t>(
        std::count_if(complete.begin(), complete.end(), [](const Event& e) { return e.is_gpu_record(); }));
    if (gpu < next_infer_records_) return {};
    next_infer_records_ = 2 * gpu;
  }
  auto windows = inferrer_->lock(complete, names_, ext, final);
  if (!windows) return {};
  segmentation_.source = StepSource::kInferred;
  segmentation_.matched_name = inferrer_->description();
  segmentation_.inferred_from = inferrer_->method();
  segmentation_.inferred_period = inferrer_->period_records();
  return std::move(*windows);
}

StepStatus StepPipeline::status_of(const StepWindow& w) const {
  if (!gpu_traced_ || overlaps(untraced_, w)) return StepStatus::kUntraced;
  if (overlaps(incomplete_, w) || overlaps(evicted_, w)) return StepStatus::kIncomplete;
  if (steps_analyzed_ < static_cast<uint64_t>(std::max(options_.analysis.warmup_steps, 0))) return StepStatus::kWarmup;
  return StepStatus::kJudged;
}

void StepPipeline::judge(int64_t limit_ns, bool final, std::chrono::steady_clock::time_point deadline) {
  std::vector<StepWindow> windows = take_windows(limit_ns, final);
  if (windows.empty()) return;
  if (std::chrono::steady_clock::now() >= deadline) {
    // Out of time before anything could be indexed: every window is skipped, counted.
    summary_.add_skipped(windows.size());
    return;
  }

  // The timeline needs everything up to the first GPU record after the last window (it ends that
  // window's last gap); later events only cost time. Live, a partition puts that slice first (the
  // retained events are in no particular order); at the end the slice is everything, in its order.
  size_t slice_size = retained_.size();
  if (!final) {
    const int64_t last_end = windows.back().end_ns;
    int64_t slice_end_ns = std::numeric_limits<int64_t>::max();
    for (const Event& e : retained_) {
      if (e.is_gpu_record() && e.start_ns >= last_end) slice_end_ns = std::min(slice_end_ns, e.start_ns);
    }
    const auto mid = std::partition(retained_.begin(), retained_.end(),
                                    [&](const Event& e) { return e.start_ns <= slice_end_ns; });
    slice_size = static_cast<size_t>(mid - retained_.begin());
  }
  const std::span<Event> slice(retained_.data(), slice_size);
  // NCCL kernels learn their operation's size from NCCL's ranges before the analysis.
  attach_nccl_ranges(slice);
  const Timeline timeline(slice, names_, options_.analysis);
  for (size_t i = 0; i < windows.size(); ++i) {
    if (std::chrono::steady_clock::now() >= deadline) {
      summary_.add_skipped(windows.size() - i);
      break;
    }
    judge_window(windows[i], timeline, slice);
  }
  if (final && options_.hta_overlap) {
    summary_.set_comm_comp_overlap_pct(hta_comm_comp_overlap_pct(timeline, segmentation_));
  }
  if (options_.retain_all) return;
  // Forget what no later step can need: keep everything that ends after the last judged step
  // began (gap attribution reaches back to where the GPU went idle).
  const int64_t keep_from = windows.back().start_ns;
  std::erase_if(retained_, [&](const Event& e) { return e.end_ns < keep_from; });
}

void StepPipeline::judge_window(StepWindow w, const Timeline& timeline, std::span<const Event> slice) {
  StepView view = analyze_step(w, timeline, options_.rank);
  if (w.source == StepSource::kInferred) {
    view.inferred_from = segmentation_.inferred_from;
    view.inferred_period = segmentation_.inferred_period;
  }
  view.losses = losses_now();
  const StepStatus status = status_of(w);
  ++steps_analyzed_;

  FindingCollector sink;
  if (status == StepStatus::kJudged) {
    for (auto& d : detectors_) d->on_step(view, sink);
  }
  if (options_.ring_steps > 0) {
    // Flight recorder: the step's events (those overlapping its window).
    StepCapture capture;
    capture.window = w;
    for (const Event& e : slice) {
      if (e.start_ns < w.end_ns && e.end_ns >= w.start_ns) capture.events.push_back(e);
    }
    ring_.push(std::move(capture));
    for (const Finding& f : sink.findings) {
      // A dump shows the steps where time was lost: findings without a cost (data loss, how
      // steps were found) have nothing to show.
      if (f.cost_ms <= 0 || std::find(fired_.begin(), fired_.end(), f.detector) != fired_.end()) continue;
      fired_.push_back(f.detector);
      std::vector<const StepCapture*> recent;
      ring_.for_each([&](const StepCapture& c) { recent.push_back(&c); });
      reporter_.on_first_fire(f, recent, names_);
    }
  }
  reporter_.on_step(view, status, sink.findings);
  summary_.add_step(view, status, sink.findings);
  if (options_.keep_windows) segmentation_.steps.push_back(w);
  last_step_findings_ = static_cast<int>(sink.findings.size());
  last_step_ = std::move(view);
  analyzed_until_ns_ = std::max(analyzed_until_ns_, w.end_ns);
}

// ---- memory ----------------------------------------------------------------------------------

void StepPipeline::enforce_retention_cap() {
  if (retained_.size() <= options_.max_retained_events) return;
  std::sort(retained_.begin(), retained_.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  const size_t drop = retained_.size() - options_.max_retained_events / 2;
  if (!sources_.any() && !inferrer_->locked()) {
    judge_pseudo_step_and_evict(drop);
    return;
  }
  evicted_records_ += drop;
  // Steps not judged yet that lose events here are judged incomplete, not from what is left.
  int64_t evicted_end = retained_.front().end_ns;
  for (size_t i = 0; i < drop; ++i) evicted_end = std::max(evicted_end, retained_[i].end_ns);
  if (evicted_end > analyzed_until_ns_) {
    evicted_.emplace_back(std::max(retained_.front().start_ns, analyzed_until_ns_), evicted_end);
    if (evicted_.size() > 64) evicted_.erase(evicted_.begin());  // bounded: the oldest are long judged
  }
  retained_.erase(retained_.begin(), retained_.begin() + static_cast<std::ptrdiff_t>(drop));
}

// No step source and no loop found in as much data as memory allows: judge what is held as one
// pseudo-step (the no_step_marks detector says how steps were found) rather than drop it unseen.
void StepPipeline::judge_pseudo_step_and_evict(size_t drop) {
  const std::span<Event> evicted(retained_.data(), drop);
  const Interval ext = extent_of(evicted);
  const StepWindow w{std::max(ext.start, analyzed_until_ns_), ext.end, static_cast<int64_t>(steps_analyzed_),
                     StepSource::kWholeTrace};
  if (w.end_ns > w.start_ns) {
    segmentation_.source = StepSource::kWholeTrace;
    const std::span<Event> all(retained_);
    attach_nccl_ranges(all);
    const Timeline timeline(all, names_, options_.analysis);
    judge_window(w, timeline, all);
  }
  retained_.erase(retained_.begin(), retained_.begin() + static_cast<std::ptrdiff_t>(drop));
}

}  // namespace stepwatch
