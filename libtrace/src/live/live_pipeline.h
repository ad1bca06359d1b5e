// The live pipeline, owned by the analysis thread: assembles steps from events that arrive in
// any order, judges a step once its records are complete (the watermark passed its end), and
// feeds the same analyze_step + detectors as the offline analyzer.
//
// Deterministic and thread-free so tests drive it directly; LiveSession runs it on a thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/event_sink.h"
#include "live/live_config.h"
#include "live/outputs/live_reporter.h"
#include "stepwatch/core/detector.h"
#include "stepwatch/core/step_ring.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch::live {

// Loss counters shared with producers (atomics: any thread increments).
struct LossCounters {
  std::array<std::atomic<uint64_t>, static_cast<size_t>(LossKind::kCount_)> counts{};
  void add(LossKind kind, uint64_t n) noexcept {
    counts[static_cast<size_t>(kind)].fetch_add(n, std::memory_order_relaxed);
  }
  std::array<uint64_t, static_cast<size_t>(LossKind::kCount_)> snapshot() const noexcept;
  uint64_t total() const noexcept;  // every kind: changes when anything is lost
};

class LivePipeline {
 public:
  LivePipeline(const LiveConfig& config, const NameTable& names, LossCounters& losses, LiveReporter& reporter);
  ~LivePipeline();

  // New events, in any order (consumed: the vector is cleared).
  void ingest(std::vector<Event>& batch);
  // Every step whose window ended at least `margin_ns` before the watermark is judged.
  void advance(int64_t watermark_ns);
  // End of data: judge every remaining step (the last mark-delimited step ends at the last
  // record), then the detectors' on_finish.
  void finish();
  // The GPU is not traced (another CUPTI client, CUPTI unavailable): steps are still timed,
  // but nothing GPU-based can be judged.
  void set_gpu_traced(bool traced) { gpu_traced_ = traced; }
  // Intervals without GPU tracing (stepwatch_pause): steps overlapping them are analyzed but
  // not judged.
  void set_untraced(std::vector<std::pair<int64_t, int64_t>> intervals) { untraced_ = std::move(intervals); }
  // Intervals whose GPU records may be missing (EventSink::mark_incomplete): steps overlapping
  // them are analyzed but judged incomplete, not by the detectors.
  void set_incomplete(std::vector<std::pair<int64_t, int64_t>> intervals) { incomplete_ = std::move(intervals); }

  const std::optional<StepView>& last_step() const { return last_step_; }
  int last_step_findings() const { return last_step_findings_; }
  uint64_t steps_analyzed() const { return steps_analyzed_; }
  size_t retained_events() const { return retained_.size(); }
  int64_t margin_ns() const { return margin_ns_; }

 private:
  void note_step_source(const Event& e);
  void judge_complete(int64_t limit_ns, bool final_pass);
  void report_losses(int64_t step);
  void enforce_retention_cap();

  LiveConfig config_;
  const NameTable& names_;
  LossCounters& losses_;
  LiveReporter& reporter_;
  std::vector<std::unique_ptr<Detector>> detectors_;
  StepAssembler assembler_;
  std::unordered_map<NameId, bool> step_name_cache_;

  std::vector<Event> retained_;  // events not yet evicted, in no particular order
  // Step windows from each source, not yet judged (sorted by start when used).
  std::vector<StepWindow> explicit_ranges_, range_windows_;
  std::vector<Event> marks_;     // explicit step marks (C API step_begin)
  int64_t analyzed_until_ns_ = INT64_MIN;  // end of the last judged window
  int64_t last_data_ns_ = INT64_MIN;
  int64_t margin_ns_;
  size_t max_retained_;
  bool gpu_traced_ = true;
  std::vector<std::pair<int64_t, int64_t>> untraced_;
  std::vector<std::pair<int64_t, int64_t>> incomplete_;
  bool no_marks_reported_ = false;

  StepRing<StepCapture> ring_;
  std::unordered_map<std::string, bool> fired_;  // detector id -> has fired in this run
  uint64_t steps_analyzed_ = 0;
  int64_t ordinal_ = 0;
  std::optional<StepView> last_step_;
  int last_step_findings_ = 0;
  uint64_t records_reported_ = 0;  // loss totals already reported by a data_loss finding
  uint64_t buffers_reported_ = 0;
};

}  // namespace stepwatch::live
