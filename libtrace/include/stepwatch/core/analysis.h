// The offline analysis of one rank: the step pipeline (step_pipeline.h) given the whole trace at
// once, its output collected for the text, JSONL and HTML reports and the rank merge.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/detector.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/run_summary.h"
#include "stepwatch/core/step_view.h"
#include "stepwatch/core/step_window.h"
#include "stepwatch/core/trace.h"

namespace stepwatch {

struct RankResult {
  int rank = 0;
  std::string source;
  Segmentation segmentation;
  std::vector<StepView> steps;
  std::vector<Finding> findings;
  RunSummary summary;
  int64_t gpu_records = 0;  // kernels, copies and memsets in the trace (0: no GPU activity at all)
  bool gpu_traced = false;  // the trace says the GPU was traced throughout (Trace::gpu_traced)
};

// What the result keeps of each step. The reports need the breakdown and its tables, not the
// record of every gap (a launch-bound step has thousands; the detectors have read them already).
enum class StepDetail : uint8_t { kFull, kWithoutGaps };

// The final pass judges the steps a batch at a time (step_batches.h), each batch over a Timeline of
// its own events: above a million events, about a sixteenth of the trace, at most 1Mi events (a
// Timeline of a million events holds about 80 MiB, and the batch's events are copied for it).
// Traces of up to a million events are judged at once: faster, and their index is small.
// `batch_events` given: that many a batch.
inline constexpr size_t kOfflineBatchEvents = 0;  // 0: sized from the trace as above
size_t offline_batch_events(size_t trace_events);

// Runs `detectors` over the trace. `trace.events` is sorted in place by start time (stable: equal
// starts keep their order); NCCL kernels gain the sizes their NCCL ranges carry (nccl_join.h).
// Records the importer left out (`trace.skipped`) are reported as data loss. `threads`: how many
// threads may sort, index and compute step views (the same results at any number).
RankResult analyze_rank(Trace& trace, int rank, const AnalysisConfig& config,
                        std::vector<std::unique_ptr<Detector>> detectors, StepDetail detail = StepDetail::kFull,
                        size_t batch_events = kOfflineBatchEvents, unsigned threads = 1);

// Sorts by start time, keeping the order of equal starts, with less memory than std::stable_sort
// (whose buffer is half the events): 16 bytes per event for the keys (a radix sort; compared
// pairs where start span and position do not fit in 64 bits), then the events moved into place
// along the permutation's cycles. `threads` > 1: compared keys of a large trace are sorted in two
// halves at once.
void sort_by_start(std::vector<Event>& events, unsigned threads = 1);

}  // namespace stepwatch
