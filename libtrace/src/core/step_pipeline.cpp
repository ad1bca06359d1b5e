#include "stepwatch/core/step_pipeline.h"

#include <algorithm>

#include "core/nccl_join.h"
#include "core/parallel.h"
#include "core/step_batches.h"
#include "core/step_inference.h"
#include "stepwatch/core/outside_steps.h"
#include "stepwatch/core/stats.h"
#include "stepwatch/core/timeline.h"

namespace stepwatch {
namespace {

// Steps whose views are computed at once (offline, several threads): their views are held
// together, a few MB at most.
constexpr size_t kParallelViews = 64;

bool overlaps(const std::vector<std::pair<int64_t, int64_t>>& intervals, const StepWindow& w) {
  return std::any_of(intervals.begin(), intervals.end(),
                     [&](const auto& iv) { return iv.first < w.end_ns && iv.second > w.start_ns; });
}

// 1: the name shows PyTorch (its profiler's op and step ranges, ATen kernels); 2: a ROCm program
// (HIP runtime calls); 0: neither.
// What a name says of the program's stack (ProgramStack): 1 PyTorch, 2 ROCm, 3 vLLM, 4 SGLang (both
// engines run PyTorch models), 0 nothing.
constexpr uint8_t kStackPyTorch = 1, kStackRocm = 2, kStackVllm = 3, kStackSglang = 4;
uint8_t stack_evidence(std::string_view name, EventKind kind) {
  if (kind == EventKind::kApiCall) return name.starts_with("hip") ? kStackRocm : 0;
  if (kind == EventKind::kKernel) {
    return name.find("at::native") != std::string_view::npos || name.find("c10::") != std::string_view::npos
               ? kStackPyTorch
               : 0;
  }
  // The engines' registered custom ops (torch.ops.vllm / torch.ops.sglang, profiled as "vllm::…")
  // and their per-iteration ranges (config.h kDefaultStepPattern).
  if (name.starts_with("vllm::") || name.starts_with("execute_context_") || name.starts_with("execute_new_")) {
    return kStackVllm;
  }
  if (name.starts_with("sglang::") || (name.starts_with("step[") && name.ends_with("]"))) return kStackSglang;
  return name.starts_with("aten::") || name.starts_with("ProfilerStep#") || name.starts_with("Optimizer.step#") ||
                 name.starts_with("enumerate(DataLoader)") || name.starts_with("nn.Module:")
             ? kStackPyTorch
             : 0;
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
  note_stack(events);
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
  note_stack(events);
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

void StepPipeline::note_stack(std::span<const Event> events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::kApiCall) first_call_ns_ = std::min(first_call_ns_, e.start_ns);
    if (e.start_ns >= first_pytorch_ns_ && e.start_ns >= first_rocm_ns_ && e.start_ns >= first_engine_ns_) continue;
    if (e.kind != EventKind::kApiCall && e.kind != EventKind::kRange && e.kind != EventKind::kKernel) continue;
    // Name ids are dense: a flat table classifies each name once, cheaply on the live path.
    constexpr uint8_t kUnclassified = 0xFF;
    if (e.name >= stack_names_.size()) stack_names_.resize(size_t{e.name} + 1, kUnclassified);
    uint8_t& evidence = stack_names_[e.name];
    if (evidence == kUnclassified) evidence = stack_evidence(names_.view(e.name), e.kind);
    if (evidence == kStackPyTorch) first_pytorch_ns_ = std::min(first_pytorch_ns_, e.start_ns);
    if (evidence == kStackRocm) first_rocm_ns_ = std::min(first_rocm_ns_, e.start_ns);
    if ((evidence == kStackVllm || evidence == kStackSglang) && e.start_ns < first_engine_ns_) {
      first_pytorch_ns_ = std::min(first_pytorch_ns_, e.start_ns);
      first_engine_ns_ = e.start_ns;
      engine_ = evidence == kStackVllm ? Engine::kVllm : Engine::kSglang;
    }
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
  // Every step was judged before the end (live): the time after the last is described from what
  // is retained — within the exit's time bound.
  if (after_last_.empty() && std::chrono::steady_clock::now() < deadline) describe_after_last(nullptr);
  finished_ = true;
  RunView run;
  run.rank = options_.rank;
  run.steps = steps_analyzed_;
  run.first_step = first_step_number_;
  run.last_step = last_step_ ? last_step_->step : 0;
  run.losses = losses_now();
  run.before_first = before_first_;
  run.after_last = after_last_;
  run.first_step_init = first_step_init_;
  run.first_step_init_idle_ns = first_step_init_idle_ns_;
  run.first_step_ns = first_step_ns_;
  run.first_step_warmup = first_step_warmup_;
  const TimeAccounting time = time_accounting();
  run.data_ns = static_cast<int64_t>(time.trace_ms * 1e6);
  run.in_steps_ns = in_steps_ns_;
  run.source = segmentation_.source;
  run.stack.framework =
      first_pytorch_ns_ < std::numeric_limits<int64_t>::max() ? Framework::kPyTorch : Framework::kNone;
  run.stack.rocm = first_rocm_ns_ < std::numeric_limits<int64_t>::max();
  run.stack.engine = engine_;
  summary_.set_time(time);
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
  const int64_t start = steps_analyzed_ > 0 ? std::max(ext.start, analyzed_until_ns_) : pseudo_step_start(ext.start);
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
  if (final && options_.retain_all && options_.threads > 1 && deadline == std::chrono::steady_clock::time_point::max() &&
      retained_.size() <= options_.batch_events) {
    return judge_all_at_once();
  }
  std::vector<StepWindow> windows = take_windows(limit_ns, final);
  if (windows.empty()) return;
  if (std::chrono::steady_clock::now() >= deadline) {
    // Out of time before anything could be indexed: every window is skipped, counted.
    summary_.add_skipped(windows.size());
    return;
  }
  if (final && options_.retain_all && judge_in_batches(windows, deadline)) return;

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
  attach_nccl_ranges(slice, &names_);
  const Timeline timeline(slice, names_, options_.analysis, options_.threads);
  judge_over(windows, timeline, slice, final, deadline);
  if (options_.retain_all) return;
  // Forget what no later step can need: keep everything that ends after the last judged step
  // began (gap attribution reaches back to where the GPU went idle).
  int64_t keep_from = windows.back().start_ns;
  // Inferred steps cut by the GPU when it runs behind the host: the next boundary's launch calls
  // lie before the last window in time, and must stay.
  if (windows.back().source == StepSource::kInferred && inferrer_->locked()) {
    keep_from = std::min(keep_from, inferrer_->resume_host_ns());
  }
  std::erase_if(retained_, [&](const Event& e) { return e.end_ns < keep_from; });
}

// Offline, with threads to spare and everything in one batch: the Timeline over everything is built
// while the windows are found (step sources or inference read the events, the Timeline indexes them:
// neither writes them), NCCL's sizes joined into the kernels first (nothing that finds windows
// reads them). Then as judge() does.
void StepPipeline::judge_all_at_once() {
  const std::span<Event> all(retained_);
  attach_nccl_ranges(all, &names_);
  std::vector<StepWindow> windows;
  std::optional<Timeline> timeline;
  parallel::both(
      options_.threads, [&] { windows = take_windows(std::numeric_limits<int64_t>::max(), true); },
      [&] { timeline.emplace(all, names_, options_.analysis, options_.threads); });
  if (!windows.empty()) judge_over(windows, *timeline, all, true, std::chrono::steady_clock::time_point::max());
}

// Every window over one Timeline; at the end, also the time around the steps and HTA's overlap.
void StepPipeline::judge_over(const std::vector<StepWindow>& windows, const Timeline& timeline,
                              std::span<const Event> slice, bool final,
                              std::chrono::steady_clock::time_point deadline) {
  if (final) ++segmentation_.timelines;
  describe_before_first(timeline, windows.front());
  judge_windows(windows, 0, windows.size(), final, timeline, slice, deadline);
  if (!final) return;
  describe_after_last(&timeline);
  if (options_.hta_overlap) summary_.set_comm_comp_overlap_pct(hta_comm_comp_overlap_pct(timeline, segmentation_));
}

// Offline, a trace larger than one batch: every window judged as above, a batch of windows at a
// time over a Timeline of the events they read (step_batches.h). False when it does not apply (one
// batch holds everything, or the events or windows are not in start order): judged at once.
bool StepPipeline::judge_in_batches(const std::vector<StepWindow>& windows,
                                    std::chrono::steady_clock::time_point deadline) {
  const auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  if (retained_.size() <= options_.batch_events || retained_.size() > UINT32_MAX ||
      !std::is_sorted(windows.begin(), windows.end(), by_start) ||
      !std::is_sorted(retained_.begin(), retained_.end(), by_start)) {
    return false;
  }
  // Sizes joined into the retained events themselves, once: the batches copy them.
  attach_nccl_ranges(std::span<Event>(retained_), &names_);
  StepBatches batches(retained_, windows, options_.analysis.sync_slack_ns, options_.batch_events);
  std::vector<Event> slice;
  StepBatches::Batch batch;
  while (batches.next(batch, slice)) {
    const Timeline timeline(slice, names_, options_.analysis, options_.threads);
    ++segmentation_.timelines;
    if (batch.first_window == 0) describe_before_first(timeline, windows.front());
    if (!judge_windows(windows, batch.first_window, batch.end_window, true, timeline, slice, deadline)) break;
    if (batch.end_window == windows.size()) describe_after_last(&timeline);
  }
  if (options_.hta_overlap) {
    summary_.set_comm_comp_overlap_pct(hta_comm_comp_overlap_pct(retained_, batches.calls(), segmentation_));
  }
  return true;
}

void StepPipeline::describe_before_first(const Timeline& timeline, const StepWindow& first) {
  if (before_described_) return;
  // Everything before the first step is still retained (nothing was judged yet).
  before_described_ = true;
  before_first_ = describe_outside(timeline, std::min(sources_.data_extent().start, first.start_ns), first.start_ns,
                                   first_call_ns_, options_.rank);
}

// Windows [from, to) of `windows` over one Timeline; false when the deadline passed (the rest of
// `windows` counted as skipped).
bool StepPipeline::judge_windows(const std::vector<StepWindow>& windows, size_t from, size_t to, bool final,
                                 const Timeline& timeline, std::span<const Event> slice,
                                 std::chrono::steady_clock::time_point deadline) {
  // Without a deadline (offline) the views of a block of steps are computed on several threads
  // first; with one (live exit), one at a time, so that the deadline is checked between steps.
  const bool parallel = options_.threads > 1 && deadline == std::chrono::steady_clock::time_point::max();
  const size_t block = parallel ? kParallelViews : 1;
  for (size_t b = from; b < to; b += block) {
    const size_t b_end = std::min(to, b + block);
    std::vector<StepView> views;
    if (parallel) views = analyze_steps(std::span(windows).subspan(b, b_end - b), timeline, options_.rank, options_.threads);
    for (size_t i = b; i < b_end; ++i) {
      if (std::chrono::steady_clock::now() >= deadline) {
        summary_.add_skipped(windows.size() - i);
        return false;
      }
      if (final && i + 1 == windows.size() && is_closing_empty_step(windows[i], timeline)) {
        ++dropped_windows_;
        continue;
      }
      note_window_time(windows[i], timeline);
      judge_window(windows[i], timeline, slice,
                   parallel ? std::move(views[i - b]) : analyze_step(windows[i], timeline, options_.rank));
    }
  }
  return true;
}

void StepPipeline::judge_window(StepWindow w, const Timeline& timeline, std::span<const Event> slice, StepView view) {
  view.stack.framework = first_pytorch_ns_ < w.end_ns ? Framework::kPyTorch : Framework::kNone;
  view.stack.rocm = first_rocm_ns_ < w.end_ns;
  view.stack.engine = first_engine_ns_ < w.end_ns ? engine_ : Engine::kNone;
  if (w.source == StepSource::kInferred) {
    view.inferred_from = segmentation_.inferred_from;
    view.inferred_period = segmentation_.inferred_period;
  }
  view.losses = losses_now();
  const StepStatus status = first_step_status(w, timeline, status_of(w));
  ++steps_analyzed_;
  recent_step_ns_.push_back(w.end_ns - w.start_ns);
  if (recent_step_ns_.size() > 64) recent_step_ns_.erase(recent_step_ns_.begin());

  FindingCollector sink;
  if (status == StepStatus::kJudged) {
    for (auto& d : detectors_) d->on_step(view, sink);
    link_refinements(sink.findings);
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

// ---- the time outside the steps ------------------------------------------------------------------

// The data's last window, a step range holding no GPU record and no CUDA call and shorter than
// half the recent steps, is not a step: the profiler's closing ProfilerStep (49 µs, no kernel)
// after the last real one. Never a step the program marked itself (C API), and never in time
// without GPU tracing (there, no record says nothing).
bool StepPipeline::is_closing_empty_step(const StepWindow& w, const Timeline& tl) const {
  if (recent_step_ns_.empty() || w.source != StepSource::kRange) return false;
  if (status_of(w) == StepStatus::kUntraced) return false;
  std::vector<int64_t> recent = recent_step_ns_;
  std::nth_element(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(recent.size() / 2), recent.end());
  if (2 * (w.end_ns - w.start_ns) >= recent[recent.size() / 2]) return false;
  const auto events = tl.events();
  auto starts_inside = [&](std::span<const uint32_t> by_start) {
    auto it = std::lower_bound(by_start.begin(), by_start.end(), w.start_ns,
                               [&](uint32_t i, int64_t t) { return events[i].start_ns < t; });
    return it != by_start.end() && events[*it].start_ns < w.end_ns;
  };
  return !starts_inside(tl.gpu_by_start()) && !starts_inside(tl.api_by_start());
}

// The first step holds the data's one-off initialization when the capture began with the process
// (context creation, lazy module loading, allocator set-up): judged, it would read as a giant
// hidden sync. When initialization calls covered half of it, it is measured as warm-up, and the
// initialization detector reports the calls.
StepStatus StepPipeline::first_step_status(const StepWindow& w, const Timeline& tl, StepStatus status) {
  if (steps_analyzed_ != 0) return status;
  first_step_number_ = w.number;
  first_step_ns_ = w.end_ns - w.start_ns;
  first_step_init_ = init_calls_in(tl, w.start_ns, w.end_ns, first_call_ns_, first_step_init_idle_ns_);
  if (status == StepStatus::kJudged && 2 * first_step_init_idle_ns_ >= first_step_ns_) status = StepStatus::kWarmup;
  // Not judged (for this reason, or live's warm-up steps): its initialization is reported as such.
  first_step_warmup_ = status == StepStatus::kWarmup;
  return status;
}

void StepPipeline::note_window_time(const StepWindow& w, const Timeline& tl) {
  if (last_window_end_ != std::numeric_limits<int64_t>::min() && w.start_ns > last_window_end_) {
    between_ns_ += w.start_ns - last_window_end_;
    between_busy_ns_ += tl.busy().measure_within(last_window_end_, w.start_ns);
  }
  first_window_start_ = std::min(first_window_start_, w.start_ns);
  last_window_end_ = std::max(last_window_end_, w.end_ns);
  in_steps_ns_ += w.end_ns - w.start_ns;
}

// The data after the last step: from the final pass's timeline, or (every step already judged)
// one over what is still retained — everything that ends after the last step began.
void StepPipeline::describe_after_last(const Timeline* timeline) {
  const int64_t end = sources_.data_extent().end;
  if (last_window_end_ == std::numeric_limits<int64_t>::min() || end <= last_window_end_) return;
  if (timeline != nullptr) {
    after_last_ = describe_outside(*timeline, last_window_end_, end, first_call_ns_, options_.rank);
    return;
  }
  const std::span<Event> all(retained_);
  const Timeline tl(all, names_, options_.analysis);
  after_last_ = describe_outside(tl, last_window_end_, end, first_call_ns_, options_.rank);
}

TimeAccounting StepPipeline::time_accounting() const {
  TimeAccounting t;
  t.dropped_windows = dropped_windows_;
  const Interval ext = sources_.data_extent();
  if (last_window_end_ == std::numeric_limits<int64_t>::min()) {
    t.trace_ms = ms_of(std::max<int64_t>(0, ext.end - ext.start));
    return t;
  }
  const int64_t start = std::min(ext.start, first_window_start_);
  const int64_t end = std::max(ext.end, last_window_end_);
  t.trace_ms = ms_of(end - start);
  t.before_first_step_ms = ms_of(first_window_start_ - start);
  t.in_steps_ms = ms_of(in_steps_ns_);
  t.between_steps_ms = ms_of(between_ns_);
  t.after_last_step_ms = ms_of(end - last_window_end_);
  const int64_t busy = summary_.busy_ns() + between_busy_ns_ + before_first_.busy_ns + after_last_.busy_ns;
  t.gpu_busy_pct = end > start ? 100.0 * double(busy) / double(end - start) : 0.0;
  return t;
}

// The whole-data pseudo-step begins with the first GPU work (where its launch call began): what
// precedes it — context creation, the first allocations — is initialization, outside the step.
int64_t StepPipeline::pseudo_step_start(int64_t extent_start) const {
  const Event* first = nullptr;
  for (const Event& e : retained_) {
    if (e.is_gpu_record() && (first == nullptr || e.start_ns < first->start_ns)) first = &e;
  }
  if (first == nullptr) return extent_start;
  int64_t start = first->start_ns;
  for (const Event& e : retained_) {
    if (e.kind == EventKind::kApiCall && first->correlation != 0 && e.correlation == first->correlation) {
      start = std::min(start, e.start_ns);
    }
  }
  return std::max(extent_start, start);
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
    attach_nccl_ranges(all, &names_);
    const Timeline timeline(all, names_, options_.analysis);
    note_window_time(w, timeline);
    judge_window(w, timeline, all, analyze_step(w, timeline, options_.rank));
  }
  retained_.erase(retained_.begin(), retained_.begin() + static_cast<std::ptrdiff_t>(drop));
}

}  // namespace stepwatch
