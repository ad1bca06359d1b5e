#include "stepwatch/core/analysis.h"

#include <algorithm>

#include "core/parallel.h"
#include "stepwatch/core/reporter.h"
#include "stepwatch/core/step_pipeline.h"

namespace stepwatch {
namespace {

// Keys sorted in two halves on two threads: below the minimum a thread costs more than it saves,
// above the maximum the merge's buffer (8 bytes a key) would add to the import's peak memory.
constexpr size_t kParallelSortMin = size_t{1} << 15;
constexpr size_t kParallelSortMax = size_t{1} << 22;

}  // namespace

void sort_by_start(std::vector<Event>& events, unsigned threads) {
  const auto by_start = [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; };
  if (std::is_sorted(events.begin(), events.end(), by_start)) return;
  // (start, original position): distinct keys, so an unstable sort of them is a stable sort of
  // the events.
  std::vector<std::pair<int64_t, uint32_t>> keys(events.size());
  for (size_t i = 0; i < events.size(); ++i) keys[i] = {events[i].start_ns, static_cast<uint32_t>(i)};
  if (events.size() > UINT32_MAX) {
    std::stable_sort(events.begin(), events.end(), by_start);  // positions would not fit: the plain way
    return;
  }
  if (threads > 1 && keys.size() >= kParallelSortMin && keys.size() <= kParallelSortMax) {
    // Two halves at once, then merged (the merge's buffer is half the keys: bounded by the cap).
    const auto mid = keys.begin() + static_cast<std::ptrdiff_t>(keys.size() / 2);
    parallel::both(threads, [&] { std::sort(keys.begin(), mid); }, [&] { std::sort(mid, keys.end()); });
    std::inplace_merge(keys.begin(), mid, keys.end());
  } else {
    std::sort(keys.begin(), keys.end());
  }
  // keys[i].second is the event that belongs at i: follow each cycle once.
  std::vector<bool> placed(events.size(), false);
  for (size_t i = 0; i < events.size(); ++i) {
    if (placed[i] || keys[i].second == i) continue;
    Event held = events[i];
    size_t at = i;
    for (;;) {
      placed[at] = true;
      const size_t from = keys[at].second;
      if (from == i) {
        events[at] = held;
        break;
      }
      events[at] = events[from];
      at = from;
    }
  }
}

size_t offline_batch_events(size_t trace_events) {
  // Up to a million events (64 MiB of them) one Timeline costs less time than the batches' slices
  // and lookups, and its memory is small.
  if (trace_events <= size_t{1} << 20) return trace_events;
  return std::clamp<size_t>(trace_events / 16, size_t{1} << 16, size_t{1} << 20);
}

RankResult analyze_rank(Trace& trace, int rank, const AnalysisConfig& config,
                        std::vector<std::unique_ptr<Detector>> detectors, StepDetail detail, size_t batch_events,
                        unsigned threads) {
  sort_by_start(trace.events, threads);
  PipelineOptions options;
  options.analysis = config;
  options.rank = rank;
  options.hta_overlap = true;
  options.keep_windows = true;
  options.retain_all = true;
  options.batch_events = batch_events != 0 ? batch_events : offline_batch_events(trace.events.size());
  options.threads = std::max(1u, threads);
  CollectingReporter reporter;
  reporter.keep_gaps = detail == StepDetail::kFull;
  StepPipeline pipeline(options, trace.names, reporter, std::move(detectors));
  LossSnapshot skipped;
  for (const auto& [reason, n] : trace.skipped) skipped.add_records(reason, n);
  pipeline.set_losses(skipped);
  const auto gpu_records = static_cast<int64_t>(
      std::count_if(trace.events.begin(), trace.events.end(), [](const Event& e) { return e.is_gpu_record(); }));
  pipeline.ingest(std::move(trace.events));
  pipeline.finish();
  trace.events = pipeline.release_events();

  RankResult result;
  result.rank = rank;
  result.source = trace.source;
  result.segmentation = pipeline.segmentation();
  result.steps.reserve(reporter.steps.size());
  for (CollectingReporter::Step& s : reporter.steps) result.steps.push_back(std::move(s.view));
  result.findings = reporter.take_findings();
  result.summary = std::move(reporter.summary);
  result.gpu_records = gpu_records;
  result.gpu_traced = trace.gpu_traced;
  return result;
}

}  // namespace stepwatch
