#include "live/live_pipeline.h"

#include <algorithm>

#include "stepwatch/detectors/registry.h"

namespace stepwatch::live {

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

PipelineOptions live_pipeline_options(const LiveConfig& config) {
  PipelineOptions o;
  o.analysis = config.analysis;
  o.analysis.warmup_steps = config.warmup_steps;
  o.rank = config.rank;
  o.ring_steps = static_cast<size_t>(std::max(config.ring_steps, 1));
  // Half the memory cap for retained events (the rest: queues, names, dumps).
  o.max_retained_events =
      static_cast<size_t>(std::max<int64_t>(config.memory_cap_bytes / 2, 1 << 20)) / sizeof(Event);
  // GPU work of a step that just ended may still be running: a step is complete one flush period
  // after its end.
  o.margin_ns = config.flush_period_ms * 1'000'000;
  return o;
}

LivePipeline::LivePipeline(const LiveConfig& config, const NameTable& names, LossCounters& losses,
                           Reporter& reporter)
    : losses_(losses),
      pipeline_(live_pipeline_options(config), names, reporter, make_detectors(config.analysis)) {}

void LivePipeline::ingest(std::vector<Event>& batch) {
  pipeline_.ingest(std::span<const Event>(batch));
  batch.clear();
}

void LivePipeline::advance(int64_t watermark_ns) {
  const auto counts = losses_.snapshot();
  pipeline_.set_losses(snapshot_of(counts));
  pipeline_.advance(watermark_ns);
}

void LivePipeline::finish(std::chrono::steady_clock::time_point deadline) {
  const auto counts = losses_.snapshot();
  pipeline_.set_losses(snapshot_of(counts));
  pipeline_.finish(deadline);
}

}  // namespace stepwatch::live
