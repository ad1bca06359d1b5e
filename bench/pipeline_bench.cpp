// Throughput of the analysis pipeline: events/s through StepAssembler + Timeline + analyze_step
// + detectors (analyze_rank), on synthetic training loops of known size.
//   build/bin/stepwatch_bench --benchmark_filter=Pipeline
#include <benchmark/benchmark.h>

#include "stepwatch/core/analysis.h"
#include "stepwatch/core/step_window.h"
#include "stepwatch/core/timeline.h"
#include "stepwatch/detectors/registry.h"
#include "synthetic/workload.h"

namespace stepwatch {
namespace {

void run_pipeline(benchmark::State& state, const char* scenario) {
  synthetic::ScenarioOptions opts;
  opts.steps = static_cast<int>(state.range(0));
  synthetic::SyntheticRun run = synthetic::make_scenario(scenario, opts);
  AnalysisConfig config;
  for (auto _ : state) {
    auto detectors = make_detectors(config);
    RankResult r = analyze_rank(run.trace, 0, config, std::move(detectors));
    benchmark::DoNotOptimize(r.steps.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(run.trace.events.size()));
  state.counters["events"] = static_cast<double>(run.trace.events.size());
}

void BM_Pipeline_GpuBound(benchmark::State& state) { run_pipeline(state, "gpu_bound"); }
void BM_Pipeline_DdpOverlap(benchmark::State& state) { run_pipeline(state, "ddp_overlap"); }
void BM_Pipeline_ItemSync(benchmark::State& state) { run_pipeline(state, "item_sync"); }
BENCHMARK(BM_Pipeline_GpuBound)->Arg(50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pipeline_DdpOverlap)->Arg(50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pipeline_ItemSync)->Arg(50)->Unit(benchmark::kMillisecond);

// The per-step part alone (what the live analysis thread does once a step is complete):
// analyze_step + detectors over an already indexed timeline.
void BM_Pipeline_PerStep(benchmark::State& state) {
  synthetic::ScenarioOptions opts;
  opts.steps = 50;
  synthetic::SyntheticRun run = synthetic::make_scenario("ddp_overlap", opts);
  AnalysisConfig config;
  std::stable_sort(run.trace.events.begin(), run.trace.events.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  const Segmentation seg = StepAssembler(config).segment(run.trace.events, run.trace.names);
  const Timeline tl(run.trace.events, run.trace.names, config);
  auto detectors = make_detectors(config);
  class Null : public FindingSink {
   public:
    void emit(Finding) override {}
  } sink;
  size_t i = 0;
  for (auto _ : state) {
    StepView v = analyze_step(seg.steps[i++ % seg.steps.size()], tl, 0);
    for (auto& d : detectors) d->on_step(v, sink);
    benchmark::DoNotOptimize(v.busy_ns);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(run.trace.events.size() / seg.steps.size()));
}
BENCHMARK(BM_Pipeline_PerStep)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stepwatch
