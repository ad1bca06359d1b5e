// The live path after the CUPTI parser: per-thread queue push, drain by the analysis thread,
// LivePipeline ingest and the judging of every step (Timeline + analyze_step + detectors).
// Together with BM_CuptiIngest* (record parsing) this is "adapter + pipeline ingest".
//   build/bin/stepwatch_bench --benchmark_filter=LiveIngest
#include <benchmark/benchmark.h>

#if __has_include("live/live_pipeline.h")
#include "live/event_queue.h"
#include "live/live_pipeline.h"
#include "stepwatch/core/classify.h"

namespace stepwatch::live {
namespace {

class NullReporter final : public Reporter {
 public:
  void on_step(const StepView&, StepStatus, std::span<const Finding>) override {}
  void on_run_finding(const Finding&) override {}
  void on_first_fire(const Finding&, std::span<const StepCapture* const>, const NameTable&) override {}
  void on_events(std::span<const Event>) override {}
};

// A kernel-dominated stream: `kernels` back-to-back kernels per step (with their launches), one
// NVTX step range per step, as CUPTI + NVTX would deliver it.
std::vector<Event> make_stream(NameTable& names, int steps, int kernels) {
  std::vector<Event> out;
  const NameId kname = names.intern("_Z10gemm_kernelPfS_S_i");
  const NameId lname = names.intern("cudaLaunchKernel");
  const NameId sname = names.intern("step");
  int64_t t = 1'000'000'000;
  uint64_t corr = 1;
  for (int s = 0; s < steps; ++s) {
    const int64_t step_start = t;
    for (int k = 0; k < kernels; ++k, ++corr) {
      Event l;
      l.kind = EventKind::kApiCall;
      l.name = lname;
      l.detail = static_cast<uint8_t>(ApiClass::kLaunch);
      l.start_ns = t;
      l.end_ns = t + 3'000;
      l.correlation = corr;
      l.thread = 1;
      Event e;
      e.kind = EventKind::kKernel;
      e.name = kname;
      e.start_ns = t + 4'000;
      e.end_ns = t + 24'000;
      e.correlation = corr;
      e.stream = 7;
      out.push_back(l);
      out.push_back(e);
      t += 21'000;
    }
    Event r;
    r.kind = EventKind::kRange;
    r.name = sname;
    r.start_ns = step_start;
    r.end_ns = t;
    r.thread = 1;
    out.push_back(r);
  }
  return out;
}

// Ingest only: queue push, drain, LivePipeline::ingest (step assembly, retention) — what every
// record costs on its way into the pipeline. Judging is measured by BM_LiveJudge.
void BM_LiveIngest(benchmark::State& state) {
  NameTable names;
  const std::vector<Event> stream = make_stream(names, 50, static_cast<int>(state.range(0)));
  LiveConfig config;
  config.warmup_steps = 0;
  config.memory_cap_bytes = 1ll << 30;  // no retention cap in play: every event stays until judged
  for (auto _ : state) {
    LossCounters losses;
    NullReporter reporter;
    LivePipeline pipeline(config, names, losses, reporter);
    EventQueues queues(1 << 16, 4);
    std::vector<Event> batch;
    for (size_t i = 0; i < stream.size(); i += 8192) {
      const size_t end = std::min(stream.size(), i + 8192);
      for (size_t j = i; j < end; ++j) queues.push(stream[j]);
      queues.drain(batch);
      pipeline.ingest(batch);
    }
    benchmark::DoNotOptimize(pipeline.retained_events());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(stream.size()));
}
BENCHMARK(BM_LiveIngest)->Arg(2000)->Unit(benchmark::kMillisecond);

// The whole live path after the parser: ingest plus judging every step (Timeline over the step
// and its context, analyze_step, every detector).
void BM_LiveJudge(benchmark::State& state) {
  NameTable names;
  const std::vector<Event> stream = make_stream(names, 50, static_cast<int>(state.range(0)));
  LiveConfig config;
  config.warmup_steps = 0;
  config.memory_cap_bytes = 256ll << 20;
  for (auto _ : state) {
    LossCounters losses;
    NullReporter reporter;
    LivePipeline pipeline(config, names, losses, reporter);
    EventQueues queues(1 << 16, 4);
    std::vector<Event> batch;
    // Producer and consumer alternate per 8k events, as a CUPTI buffer would arrive.
    for (size_t i = 0; i < stream.size(); i += 8192) {
      const size_t end = std::min(stream.size(), i + 8192);
      for (size_t j = i; j < end; ++j) queues.push(stream[j]);
      queues.drain(batch);
      pipeline.ingest(batch);
      pipeline.advance(stream[end - 1].end_ns);
    }
    pipeline.finish();
    benchmark::DoNotOptimize(pipeline.steps_analyzed());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(stream.size()));
}
BENCHMARK(BM_LiveJudge)->Arg(2000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stepwatch::live
#endif
