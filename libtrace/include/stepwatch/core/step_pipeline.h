// The step pipeline: the one step loop of both front ends.
//
//   ingest(events)     events in any order, as the importer or the live queues produce them
//   advance(watermark) judge every step whose records are complete: it ended at least
//                      `margin_ns` before the watermark (the time before which every record has
//                      arrived); live only
//   finish()           end of input or exit: judge the rest, the run-level findings, the summary
//
// Per step: the window from the step sources in priority order (step_sources.h: C API ranges,
// C API marks, step-pattern ranges; else inference — optimizer ranges, the kernel period,
// step_inference.h — else the whole data as one pseudo-step), NCCL's ranges joined to their
// kernels (nccl_join.h), the Timeline over the retained events, analyze_step, the detectors
// (judged steps only), the flight-recorder ring, and everything out through one Reporter.
//
// Offline: ingest everything, finish. Live: the session feeds it from its queues and supplies the
// watermark (live/live_pipeline.h). Given the same complete stream, both give the same steps,
// findings and summary (the parity test); live inference locks on once enough of the loop has
// been seen and then follows it with the same cut rule.
//
// Memory: events are retained from the start of the last judged step (gap attribution reaches
// back to where the GPU went idle); past `max_retained_events` the oldest are evicted and counted
// (data loss kind retention_cap) — or, when no step was ever found, the retained data is judged as
// one pseudo-step first. Events that arrive after their step was judged are counted (late_record)
// and kept as context. Single owner (the analysis thread); not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/data_loss.h"
#include "stepwatch/core/detector.h"
#include "stepwatch/core/reporter.h"
#include "stepwatch/core/run_summary.h"
#include "stepwatch/core/step_ring.h"
#include "stepwatch/core/step_sources.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

class StepInferrer;
class Timeline;

struct PipelineOptions {
  AnalysisConfig analysis;  // patterns, thresholds, warm-up steps (offline 0)
  int rank = 0;
  size_t ring_steps = 0;    // flight recorder depth (0: no captures, no first-fire dumps)
  size_t max_retained_events = std::numeric_limits<size_t>::max();
  int64_t margin_ns = 0;    // a step is complete once the watermark passed its end by this much
  // Without any step source, inference is first tried once this many GPU records are complete,
  // then each time that number doubled (offline: at the end, over everything).
  size_t infer_min_records = 256;
  bool hta_overlap = false;   // compute HTA's comm/comp overlap at the end (offline: whole trace)
  bool keep_windows = false;  // keep every judged window in segmentation().steps (offline reports)
  bool retain_all = false;    // evict nothing, even after the last pass (offline: release_events)
  // Offline (retain_all), the final pass judges the steps in batches of about this many events,
  // each over a Timeline of the events its steps read (step_batches.h), not one over everything.
  size_t batch_events = std::numeric_limits<size_t>::max();
  // Offline (no deadline), threads that compute the steps' views and build a Timeline's indexes;
  // the detectors, reporter and summary still take the steps one at a time, in order. Live: 1 (the
  // analysis thread is the only one the library adds for this).
  unsigned threads = 1;
};

class StepPipeline {
 public:
  StepPipeline(PipelineOptions options, const NameTable& names, Reporter& reporter,
               std::vector<std::unique_ptr<Detector>> detectors);
  ~StepPipeline();
  StepPipeline(const StepPipeline&) = delete;
  StepPipeline& operator=(const StepPipeline&) = delete;

  // New events, any order. The rvalue form takes the vector's storage when nothing is retained
  // (offline: the whole trace, without a copy).
  void ingest(std::span<const Event> events);
  void ingest(std::vector<Event>&& events);
  void advance(int64_t watermark_ns);
  // `deadline`: the exit path is bounded — steps not judged by then are counted as skipped (the
  // run summary's `skipped_steps`) and the summary is still built.
  void finish(std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

  // Live context, applied to the steps judged from then on.
  void set_gpu_traced(bool traced) { gpu_traced_ = traced; }
  void set_untraced(std::vector<std::pair<int64_t, int64_t>> intervals) { untraced_ = std::move(intervals); }
  void set_incomplete(std::vector<std::pair<int64_t, int64_t>> intervals) { incomplete_ = std::move(intervals); }
  // Everything the front ends lost so far (cumulative); the pipeline adds its own losses.
  void set_losses(const LossSnapshot& losses);

  const std::optional<StepView>& last_step() const { return last_step_; }
  int last_step_findings() const { return last_step_findings_; }
  uint64_t steps_analyzed() const { return steps_analyzed_; }
  size_t retained_events() const { return retained_.size(); }
  int64_t margin_ns() const { return options_.margin_ns; }
  // How steps were found, and (offline) every window judged.
  const Segmentation& segmentation() const { return segmentation_; }
  // After finish(): the retained events (offline: the whole trace, with NCCL sizes joined), in
  // their original order.
  std::vector<Event> release_events() { return std::move(retained_); }

 private:
  std::vector<StepWindow> take_windows(int64_t limit_ns, bool final);
  std::vector<StepWindow> inferred_windows(int64_t limit_ns, bool final);
  void judge(int64_t limit_ns, bool final,
             std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  bool judge_in_batches(const std::vector<StepWindow>& windows, std::chrono::steady_clock::time_point deadline);
  void judge_all_at_once();
  void judge_over(const std::vector<StepWindow>& windows, const Timeline& timeline, std::span<const Event> slice,
                  bool final, std::chrono::steady_clock::time_point deadline);
  bool judge_windows(const std::vector<StepWindow>& windows, size_t from, size_t to, bool final,
                     const Timeline& timeline, std::span<const Event> slice,
                     std::chrono::steady_clock::time_point deadline);
  void describe_before_first(const Timeline& timeline, const StepWindow& first);
  void judge_window(StepWindow w, const Timeline& timeline, std::span<const Event> slice, StepView view);
  bool is_closing_empty_step(const StepWindow& w, const Timeline& timeline) const;
  StepStatus first_step_status(const StepWindow& w, const Timeline& timeline, StepStatus status);
  void note_window_time(const StepWindow& w, const Timeline& timeline);
  void describe_after_last(const Timeline* timeline);
  TimeAccounting time_accounting() const;
  int64_t pseudo_step_start(int64_t extent_start) const;
  void judge_pseudo_step_and_evict(size_t drop);
  StepStatus status_of(const StepWindow& w) const;
  void enforce_retention_cap();
  void note_late(std::span<const Event> events);
  void note_stack(std::span<const Event> events);
  std::shared_ptr<const LossSnapshot> losses_now();

  PipelineOptions options_;
  const NameTable& names_;
  Reporter& reporter_;
  std::vector<std::unique_ptr<Detector>> detectors_;
  StepSources sources_;
  std::unique_ptr<StepInferrer> inferrer_;
  size_t next_infer_records_;
  std::vector<Event> retained_;
  int64_t analyzed_until_ns_ = std::numeric_limits<int64_t>::min();  // end of the last judged window

  // Where the data first showed PyTorch (profiler ops, at::native kernels) and ROCm (hip* calls):
  // a step ending after that point is judged with that stack's fixes. By time, not by arrival, so
  // that live and offline agree on every step.
  int64_t first_pytorch_ns_ = std::numeric_limits<int64_t>::max();
  int64_t first_engine_ns_ = std::numeric_limits<int64_t>::max();  // the first name of a serving engine
  Engine engine_ = Engine::kNone;                                   // which (ProgramStack::engine)
  int64_t first_rocm_ns_ = std::numeric_limits<int64_t>::max();
  std::vector<uint8_t> stack_names_;  // by name id: 1 PyTorch, 2 ROCm, 0 neither, kUnclassified

  // The time outside the steps (outside_steps.h) and the steps' own time, for the run-level
  // detectors and the summary's accounting of the whole trace. Bounded: summaries, not events.
  int64_t first_call_ns_ = std::numeric_limits<int64_t>::max();  // the data's first CUDA call
  OutsideView before_first_, after_last_;
  bool before_described_ = false;
  std::vector<InitCall> first_step_init_;
  int64_t first_step_init_idle_ns_ = 0, first_step_ns_ = 0, first_step_number_ = 0;
  bool first_step_warmup_ = false;
  int64_t first_window_start_ = std::numeric_limits<int64_t>::max();
  int64_t last_window_end_ = std::numeric_limits<int64_t>::min();
  int64_t in_steps_ns_ = 0, between_ns_ = 0, between_busy_ns_ = 0;
  int dropped_windows_ = 0;
  std::vector<int64_t> recent_step_ns_;  // the last steps' durations (empty-window rule), bounded

  bool gpu_traced_ = true;
  std::vector<std::pair<int64_t, int64_t>> untraced_, incomplete_;
  // Times whose events were evicted at the retention cap before their steps were judged: those
  // steps are incomplete (their own interval list: set_incomplete replaces the tracer's).
  std::vector<std::pair<int64_t, int64_t>> evicted_;
  LossSnapshot external_losses_;
  uint64_t late_records_ = 0, evicted_records_ = 0;
  std::shared_ptr<const LossSnapshot> losses_;  // shared by the steps until something changes

  StepRing<StepCapture> ring_;
  std::vector<std::string> fired_;  // detectors that have fired in this run
  uint64_t steps_analyzed_ = 0;
  std::optional<StepView> last_step_;
  int last_step_findings_ = 0;
  Segmentation segmentation_;
  RunSummaryBuilder summary_;
  bool finished_ = false;
};

}  // namespace stepwatch
