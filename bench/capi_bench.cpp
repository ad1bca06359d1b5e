// Cost of the C API on the calling (training) thread: stepwatch_step_begin/end and
// stepwatch_phase_push/pop as LiveSession runs them (a clock read, a name lookup, a push into the
// thread's queue). Without stepwatch these calls do not exist, so all of it is "added"; the
// disabled session (STEPWATCH_ENABLE=0: the call returns at once) is the floor of a call into the
// library. The session here has no GPU tracing; its analysis thread drains the queues.
//   build/bin/stepwatch_bench --benchmark_filter=CApi
#include <benchmark/benchmark.h>

#if defined(STEPWATCH_HAVE_RECORD_INGEST)

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "live/live_session.h"

namespace stepwatch::live {
namespace {

std::unique_ptr<LiveSession> make_session(bool enabled) {
  LiveConfig config;
  config.enabled = enabled;
  config.flush_period_ms = 40;  // drained every 20 ms: the per-thread ring never fills here
  config.output_dir = (std::filesystem::temp_directory_path() / ("sw-capi-bench-" + std::to_string(::getpid()))).string();
  config.nvml = false;
  config.log_level = "off";
  return LiveSession::create(config, {}, config.output_dir + ".log");
}

// Every begin/end pair is a step the analysis thread judges: the session is given time to catch
// up before it is destroyed (its exit path waits at most 10 s for the final pass).
void wait_until_judged(LiveSession& session, int64_t last_step) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  stepwatch_step_summary s{};
  s.struct_size = sizeof s;
  while (std::chrono::steady_clock::now() < deadline) {
    session.flush();
    if (session.last_step(&s) == STEPWATCH_OK && s.step >= last_step - 1) return;
  }
}

void BM_CApiStepBeginEnd(benchmark::State& state) {
  auto session = make_session(state.range(0) != 0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(session->step_begin(-1));
    benchmark::DoNotOptimize(session->step_end());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) != 0 ? "enabled" : "disabled (floor)");
  if (state.range(0) != 0) wait_until_judged(*session, static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_CApiStepBeginEnd)->Arg(1)->Arg(0)->Iterations(100'000);

void BM_CApiPhasePushPop(benchmark::State& state) {
  auto session = make_session(state.range(0) != 0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(session->phase_push("DataLoader"));
    benchmark::DoNotOptimize(session->phase_pop());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) != 0 ? "enabled" : "disabled (floor)");
}
BENCHMARK(BM_CApiPhasePushPop)->Arg(1)->Arg(0);

}  // namespace
}  // namespace stepwatch::live

#endif
