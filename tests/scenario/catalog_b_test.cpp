#include <gtest/gtest.h>
#include <cstdio>
#include "scenario_support.h"
#include "synthetic/transforms.h"

namespace stepwatch::scenario {
namespace {

void dump(const char* title, synthetic::SyntheticRun run, const std::vector<synthetic::InjectedStall>& st) {
  std::printf("=== %s\n", title);
  for (auto& s : st) std::printf("  stall step %lld host %.3f gpu %.3f\n", (long long)s.step, s.host_ns/1e6, s.gpu_delay_ns/1e6);
  RankResult r = analyze(run.trace);
  for (size_t i = 0; i < r.steps.size(); ++i) {
    std::printf("  %s | truth dur %.3f idle %.3f input %.3f\n", describe_step(r.steps[i]).c_str(),
                run.truth[i].duration_ns()/1e6, run.truth[i].idle_ns/1e6, run.truth[i].input_idle_ns/1e6);
  }
  std::printf("%s", describe_findings(r).c_str());
}

TEST(Explore, Print) {
  using namespace synthetic;
  {
    auto run = make_scenario("gpu_bound", {.steps = 12});
    dump("gpu_bound", run, {});
  }
  {
    auto run = make_scenario("gpu_bound", {.steps = 12});
    auto st = inject_recompilation(run, {4, 9}, 20.0);
    dump("recompile", run, st);
  }
  {
    auto c = scenario_config("gpu_bound", {.steps = 12});
    c.launch_queue_depth = 32;
    auto run = generate(c);
    auto st = inject_gc_pauses(run, {4, 7, 8, 11}, 40'000'000, false);
    dump("gc", run, st);
  }
  {
    auto run = make_scenario("gpu_bound", {.steps = 12});
    auto st = inject_checkpoints(run, {});
    dump("ckpt", run, st);
  }
  {
    auto run = make_scenario("gpu_bound", {.steps = 12});
    auto st = inject_epoch_boundaries(run, 4, 400'000'000);
    dump("epoch", run, st);
  }
  {
    auto run = make_scenario("gpu_bound", {.steps = 12});
    auto st = inject_gpu_jitter(run, {{2, 12'000'000}, {4, 25'000'000}, {5, 4'000'000}, {7, 18'000'000}, {9, 30'000'000}, {10, 8'000'000}, {12, 15'000'000}});
    dump("jitter", run, st);
  }
}

}  // namespace
}  // namespace stepwatch::scenario
