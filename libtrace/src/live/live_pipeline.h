// The live front of the step pipeline (stepwatch/core/step_pipeline.h): the analysis thread's
// handle on it. It translates the live configuration into the pipeline's options (warm-up steps,
// flight-recorder depth, the retention cap from STEPWATCH_MEMORY_MB, the watermark margin from
// STEPWATCH_FLUSH_MS), owns the detectors, and passes the front ends' loss counters on before
// every judgement. Everything else — step sources, inference, judging — is the one pipeline the
// offline analyzer runs too.
//
// Deterministic and thread-free so tests drive it directly; LiveSession runs it on a thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "live/live_config.h"
#include "stepwatch/core/data_loss.h"
#include "stepwatch/core/reporter.h"
#include "stepwatch/core/step_pipeline.h"

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

// The pipeline's options for a live run.
PipelineOptions live_pipeline_options(const LiveConfig& config);

class LivePipeline {
 public:
  LivePipeline(const LiveConfig& config, const NameTable& names, LossCounters& losses, Reporter& reporter);

  // New events, in any order (consumed: the vector is cleared).
  void ingest(std::vector<Event>& batch);
  // Every step whose window ended at least margin_ns() before the watermark is judged.
  void advance(int64_t watermark_ns);
  // End of data: every remaining step, the run-level findings, the run summary.
  // Steps still unjudged at `deadline` are counted as skipped (RunSummary::skipped_steps), the
  // summary is written regardless: the exit time bound.
  void finish(std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  // The GPU is not traced (another CUPTI client, CUPTI unavailable): steps are still timed,
  // but nothing GPU-based can be judged.
  void set_gpu_traced(bool traced) { pipeline_.set_gpu_traced(traced); }
  // Intervals without GPU tracing (stepwatch_pause): steps overlapping them are not judged.
  void set_untraced(std::vector<std::pair<int64_t, int64_t>> intervals) { pipeline_.set_untraced(std::move(intervals)); }
  // Intervals whose GPU records may be missing (EventSink::mark_incomplete): steps overlapping
  // them are analyzed but judged incomplete, not by the detectors.
  void set_incomplete(std::vector<std::pair<int64_t, int64_t>> intervals) {
    pipeline_.set_incomplete(std::move(intervals));
  }

  const std::optional<StepView>& last_step() const { return pipeline_.last_step(); }
  int last_step_findings() const { return pipeline_.last_step_findings(); }
  uint64_t steps_analyzed() const { return pipeline_.steps_analyzed(); }
  size_t retained_events() const { return pipeline_.retained_events(); }
  int64_t margin_ns() const { return pipeline_.margin_ns(); }

 private:
  LossCounters& losses_;
  StepPipeline pipeline_;
};

}  // namespace stepwatch::live
