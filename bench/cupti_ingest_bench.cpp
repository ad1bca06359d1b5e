// The live ingest path end to end, per core: CUPTI record parsing (the real libcupti's
// cuptiActivityGetNextRecord + the adapter's conversion to Event) + the per-thread queue + the live
// pipeline's ingest — and its parts. Reached through a CUPTI-free entry point
// (libtrace/src/bench_support/record_ingest.h): no CUPTI header is included here.
//   build/bin/stepwatch_bench --benchmark_filter='CuptiIngest|LiveIngestEndToEnd|GetNextRecordOnly'
// Issue 18's goal: >= 20M records/s/core end to end at 10,000 distinct kernel names, and >= 0.8x
// the 16-name rate of the same run.
#include <benchmark/benchmark.h>

#if defined(STEPWATCH_HAVE_RECORD_INGEST)

#include <string>
#include <vector>

#include "bench_support/record_ingest.h"
#include "live/event_queue.h"
#include "live/live_pipeline.h"
#include "stepwatch/core/name_table.h"

namespace stepwatch::live {
namespace {

constexpr size_t kBufferBytes = 4u << 20;  // the adapter's largest activity buffer

// Parsing alone: an append into reserved memory.
class VectorSink : public EventSink {
 public:
  explicit VectorSink(size_t capacity) { events_.reserve(capacity); }
  void submit(const Event& event) noexcept override { events_.push_back(event); }
  NameId intern(std::string_view name) noexcept override { return names_.intern(name); }
  void report_loss(LossKind, uint64_t) noexcept override {}
  void advance_watermark(int64_t) noexcept override {}
  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}
  void clear() { events_.clear(); }
  size_t size() const { return events_.size(); }

 private:
  std::vector<Event> events_;
  NameTable names_;
};

// What the live session does with each converted record: its per-thread queue, its name table.
class QueueSink : public EventSink {
 public:
  QueueSink(EventQueues& queues, NameTable& names) : queues_(queues), names_(names) {}
  void submit(const Event& event) noexcept override { queues_.push(event); }
  NameId intern(std::string_view name) noexcept override { return names_.intern(name); }
  void report_loss(LossKind, uint64_t) noexcept override {}
  void advance_watermark(int64_t) noexcept override {}
  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}

 private:
  EventQueues& queues_;
  NameTable& names_;
};

class NullReporter final : public Reporter {
 public:
  void on_step(const StepView&, StepStatus, std::span<const Finding>) override {}
  void on_run_finding(const Finding&) override {}
  void on_first_fire(const Finding&, std::span<const StepCapture* const>, const NameTable&) override {}
  void on_events(std::span<const Event>) override {}
};

void BM_CuptiIngestKernels(benchmark::State& state) {
  VectorSink sink(kBufferBytes / 200);
  std::string error;
  auto parser = bench::RecordParser::create(sink, error);
  if (parser == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  auto buffer = bench::RecordBuffer::kernels(kBufferBytes, static_cast<size_t>(state.range(0)));
  uint64_t records = 0;
  for (auto _ : state) {
    sink.clear();
    records += parser->parse(*buffer);
    benchmark::DoNotOptimize(sink.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
  state.counters["records_per_buffer"] = static_cast<double>(buffer->records());
}
// Arg: distinct kernel names in the buffer (a transformer step: a few hundred; torch.compile and
// Triton: thousands).
BENCHMARK(BM_CuptiIngestKernels)->Arg(16)->Arg(200)->Arg(4000)->Arg(10000)->Unit(benchmark::kMicrosecond);

// A launch-bound mix: per launch one runtime API record and one kernel, a copy every 16th.
void BM_CuptiIngestMixed(benchmark::State& state) {
  VectorSink sink(kBufferBytes / 40);
  std::string error;
  auto parser = bench::RecordParser::create(sink, error);
  if (parser == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  auto buffer = bench::RecordBuffer::launches(kBufferBytes, 200);
  uint64_t records = 0;
  for (auto _ : state) {
    sink.clear();
    records += parser->parse(*buffer);
    benchmark::DoNotOptimize(sink.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_CuptiIngestMixed)->Unit(benchmark::kMicrosecond);

// Baseline: cuptiActivityGetNextRecord alone (CUPTI's share of the cost).
void BM_CuptiGetNextRecordOnly(benchmark::State& state) {
  VectorSink sink(0);
  std::string error;
  auto parser = bench::RecordParser::create(sink, error);
  if (parser == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  auto buffer = bench::RecordBuffer::kernels(kBufferBytes, 200);
  uint64_t records = 0;
  for (auto _ : state) records += parser->iterate_only(*buffer);
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_CuptiGetNextRecordOnly)->Unit(benchmark::kMicrosecond);

// End to end on one core: a 4 MiB buffer of kernel records parsed into the session's per-thread
// queue, drained, and ingested by the live pipeline (step assembly bookkeeping, retention) — what
// every record costs between CUPTI and the judging. Arg: distinct kernel names.
void BM_LiveIngestEndToEnd(benchmark::State& state) {
  NameTable names;
  EventQueues queues(1 << 16, 4);
  QueueSink sink(queues, names);
  std::string error;
  auto parser = bench::RecordParser::create(sink, error);
  if (parser == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  auto buffer = bench::RecordBuffer::kernels(kBufferBytes, static_cast<size_t>(state.range(0)));
  LiveConfig config;
  config.memory_cap_bytes = 1ll << 30;  // no retention cap in play
  LossCounters losses;
  NullReporter reporter;
  auto pipeline = std::make_unique<LivePipeline>(config, names, losses, reporter);
  std::vector<Event> batch;
  batch.reserve(1 << 16);
  uint64_t records = 0;
  for (auto _ : state) {
    records += parser->parse(*buffer);
    queues.drain(batch);
    pipeline->ingest(batch);
    if (pipeline->retained_events() > (256u << 10)) {
      // Nothing is judged here (no steps): start over at about what the session retains between
      // judged steps (the 64 MiB default memory cap keeps at most 512k events).
      state.PauseTiming();
      pipeline = std::make_unique<LivePipeline>(config, names, losses, reporter);
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_LiveIngestEndToEnd)->Arg(16)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stepwatch::live

#endif  // STEPWATCH_HAVE_RECORD_INGEST
