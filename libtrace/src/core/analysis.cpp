#include "stepwatch/core/analysis.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "stepwatch/core/reporter.h"
#include "stepwatch/core/step_pipeline.h"

namespace stepwatch {
namespace {

// Keys sorted in two halves on two threads: below the minimum a thread costs more than it saves,
// above the maximum the merge's buffer (8 bytes a key) would add to the import's peak memory.
constexpr size_t kParallelSortMin = size_t{1} << 15;
constexpr size_t kParallelSortMax = size_t{1} << 22;

// The order by start, by an LSD radix sort of one 64-bit key per event: the start (less the
// earliest) above the event's position, which the low `position_bits` of keys[i] then name for
// place i. Each pass is stable, so equal starts keep file order. Linear where a comparison sort is
// n log n, and the keys of a profiler trace (a few seconds of ns: ~35 bits) take three or four
// passes. False when start span and position do not fit in 64 bits together (starts hours apart
// in a multi-million-event trace): the caller compares instead. Memory: the keys and one scratch
// copy, 16 bytes an event, the scratch freed before the events move.
bool radix_sort_keys(const std::vector<Event>& events, std::vector<uint64_t>& keys, int& position_bits) {
  const size_t n = events.size();
  if (n > UINT32_MAX) return false;
  const auto [lo, hi] = std::minmax_element(events.begin(), events.end(),
                                            [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  const uint64_t span = static_cast<uint64_t>(hi->start_ns) - static_cast<uint64_t>(lo->start_ns);
  position_bits = static_cast<int>(std::bit_width(static_cast<uint64_t>(n - 1)));
  const int span_bits = static_cast<int>(std::bit_width(span));
  if (position_bits + span_bits > 64) return false;
  const uint64_t base = static_cast<uint64_t>(lo->start_ns);
  keys.resize(n);
  for (size_t i = 0; i < n; ++i) keys[i] = (static_cast<uint64_t>(events[i].start_ns) - base) << position_bits | i;
  std::vector<uint64_t> scratch(n);
  constexpr int kDigitBits = 11;  // 2048 counters (16 KiB): in L1 beside the streams
  constexpr uint64_t kDigitMask = (uint64_t{1} << kDigitBits) - 1;
  std::vector<size_t> counts(size_t{1} << kDigitBits);
  for (int shift = position_bits; shift < position_bits + span_bits; shift += kDigitBits) {
    std::fill(counts.begin(), counts.end(), 0);
    for (const uint64_t k : keys) ++counts[(k >> shift) & kDigitMask];
    if (counts[(keys[0] >> shift) & kDigitMask] == n) continue;  // one digit for all: nothing moves
    size_t at = 0;
    for (size_t& c : counts) at += std::exchange(c, at);
    for (const uint64_t k : keys) scratch[counts[(k >> shift) & kDigitMask]++] = k;
    keys.swap(scratch);
  }
  return true;
}

// The same order by comparing (start, position) pairs: distinct keys, so an unstable sort of them
// is a stable sort of the events. `threads` > 1: two halves at once, then merged (the merge's
// buffer is half the keys: bounded by the cap).
std::vector<std::pair<int64_t, uint32_t>> compared_keys(const std::vector<Event>& events, unsigned threads) {
  std::vector<std::pair<int64_t, uint32_t>> keys(events.size());
  for (size_t i = 0; i < events.size(); ++i) keys[i] = {events[i].start_ns, static_cast<uint32_t>(i)};
  if (threads > 1 && keys.size() >= kParallelSortMin && keys.size() <= kParallelSortMax) {
    const auto mid = keys.begin() + static_cast<std::ptrdiff_t>(keys.size() / 2);
    parallel::both(threads, [&] { std::sort(keys.begin(), mid); }, [&] { std::sort(mid, keys.end()); });
    std::inplace_merge(keys.begin(), mid, keys.end());
  } else {
    std::sort(keys.begin(), keys.end());
  }
  return keys;
}

// from(i) is the event that belongs at i: each cycle of the permutation followed once, every event
// moved once, no second copy of the events.
template <typename From>
void place_in_order(std::vector<Event>& events, From from_of) {
  std::vector<bool> placed(events.size(), false);
  for (size_t i = 0; i < events.size(); ++i) {
    if (placed[i] || from_of(i) == i) continue;
    Event held = events[i];
    size_t at = i;
    for (;;) {
      placed[at] = true;
      const size_t from = from_of(at);
      if (from == i) {
        events[at] = held;
        break;
      }
      events[at] = events[from];
      at = from;
    }
  }
}

}  // namespace

void sort_by_start(std::vector<Event>& events, unsigned threads) {
  const auto by_start = [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; };
  if (std::is_sorted(events.begin(), events.end(), by_start)) return;
  {
    std::vector<uint64_t> keys;
    int position_bits = 0;
    if (radix_sort_keys(events, keys, position_bits)) {
      const uint64_t position_mask = (uint64_t{1} << position_bits) - 1;
      place_in_order(events, [&](size_t i) { return static_cast<size_t>(keys[i] & position_mask); });
      return;
    }
  }
  if (events.size() > UINT32_MAX) {
    std::stable_sort(events.begin(), events.end(), by_start);  // positions would not fit: the plain way
    return;
  }
  const std::vector<std::pair<int64_t, uint32_t>> keys = compared_keys(events, threads);
  place_in_order(events, [&](size_t i) { return size_t{keys[i].second}; });
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
