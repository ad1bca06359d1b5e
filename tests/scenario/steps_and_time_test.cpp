// Steps that are really steps, and the time outside them (issue 14, items 3 and 4), on synthetic
// runs built from the described patterns (synthetic/accuracy_runs.h): a single forward pass is not
// a loop of its layers; SGLang's step ranges are steps; a closing empty ProfilerStep is not; one-off
// initialization before the first step or filling it is reported once, never as a step fault, and
// the summary accounts for the whole trace.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "evidence_support.h"
#include "scenario_support.h"
#include "stepwatch/core/step_sources.h"
#include "synthetic/accuracy_runs.h"

namespace stepwatch::scenario {
namespace {

AnalyzedRun analyzed(synthetic::SyntheticRun run) {
  AnalyzedRun a{std::move(run), {}};
  a.result = analyze(a.run.trace);
  return a;
}

void expect_whole_trace_accounted(const RunSummary& s) {
  const TimeAccounting& t = s.time;
  EXPECT_NEAR(t.before_first_step_ms + t.in_steps_ms + t.between_steps_ms + t.after_last_step_ms, t.trace_ms,
              1e-6 * t.trace_ms + 1e-3);
  EXPECT_GE(t.before_first_step_ms, 0.0);
  EXPECT_GE(t.after_last_step_ms, 0.0);
  EXPECT_LE(t.gpu_busy_pct, 100.0 + 1e-9);
}

// ---- item 3: inferred steps must be steps ---------------------------------------------------------

TEST(SingleForward, TheLayersOfOneForwardPassAreNotSteps) {
  for (int layers : {24, 36}) {
    SCOPED_TRACE(std::to_string(layers) + " layers");
    const AnalyzedRun a = analyzed(synthetic::single_forward(layers));
    EXPECT_EQ(a.result.segmentation.source, StepSource::kWholeTrace) << a.result.segmentation.matched_name;
    ASSERT_EQ(a.result.steps.size(), 1u);
    // The forward keeps the GPU busy: the pseudo-step says so (not 0% over windows without kernels).
    EXPECT_GT(a.result.steps[0].duty_cycle(), 0.9);
    EXPECT_EQ(a.findings_of("no_step_marks"), 1u);
    expect_whole_trace_accounted(a.result.summary);
  }
}

TEST(SingleForward, ASynchronousCopyStallOutsideTheLayersIsNotLost) {
  const AnalyzedRun a = analyzed(synthetic::single_forward(36, 493'000'000));
  EXPECT_EQ(a.result.segmentation.source, StepSource::kWholeTrace);
  ASSERT_EQ(a.result.steps.size(), 1u);
  const StepView& v = a.result.steps[0];
  EXPECT_GT(v.duration_ns(), 490'000'000) << describe_step(v);
  // The copy stall is in the analyzed time and found as what it is: a synchronous copy.
  const auto copies = a.findings("sync_memcpy");
  ASSERT_EQ(copies.size(), 1u) << describe_findings(a.result);
  EXPECT_GT(copies[0].cost_ms, 400.0);
}

TEST(StepInferenceScenario, TrainingLoopsStillInferTheirSteps) {
  // The negative control of the rules above: a real loop (the host paced by the GPU) keeps its steps.
  for (const char* name : {"no_marks", "launch_bound+no_marks", "slow_dataloader+no_marks"}) {
    const AnalyzedRun a = analyze_scenario(name, {.steps = 8});
    EXPECT_EQ(a.result.segmentation.source, StepSource::kInferred) << name;
    EXPECT_GE(a.result.steps.size(), 7u) << name;
  }
}

// A serving engine's iteration ranges named `range` are the 6 steps of the run, numbered by ordinal
// (the names carry batch sizes and request counts, not step numbers).
void expect_engine_iterations(const AnalyzedRun& a, std::string_view range) {
  EXPECT_EQ(a.result.segmentation.source, StepSource::kRange);
  EXPECT_EQ(a.result.segmentation.matched_name, range);
  ASSERT_EQ(a.result.steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(a.result.steps[i].step, static_cast<int64_t>(i));
  EXPECT_EQ(a.findings_of("no_step_marks"), 0u);
}

TEST(ServingSteps, SGLangStepRangesAreSteps) {
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 6});
  synthetic::to_sglang_step_ranges(run);
  expect_engine_iterations(analyzed(std::move(run)), "step[DECODE bs=32]");
}

TEST(ServingSteps, LayerAndDataRangesAreNoSteps) {
  StepSources sources{AnalysisConfig{}};
  for (const char* name : {"step[DECODE bs=32]", "step[EXTEND bs=15 toks=15360]", "step[idle]", "ProfilerStep#3",
                           "step 12", "train_step", "execute_context_1(888_788544)_generation_0(0)",
                           "execute_context_0(0)_generation_32(32)", "execute_new_2_cached_30"}) {
    EXPECT_TRUE(sources.matches_step_pattern(name)) << name;
  }
  for (const char* name : {"layers.3.self_attn", "step[", "DataLoader", "stepwise", "step[DECODE] extra",
                           "Optimizer.step#AdamW.step", "execute_model", "execute_context_1(888)",
                           "vllm::unified_attention_with_output", "execute_new_2_cached_30 extra"}) {
    EXPECT_FALSE(sources.matches_step_pattern(name)) << name;
  }
  // vLLM's annotations end in request and token counts, not a step number.
  EXPECT_EQ(step_number_from_name("execute_new_2_cached_30"), -1);
  EXPECT_EQ(step_number_from_name("execute_context_0(0)_generation_32(32)"), -1);
  EXPECT_EQ(step_number_from_name("ProfilerStep#30"), 30);
}

TEST(ServingSteps, VllmIterationsAreStepsAndFixesNameTheEnginesSettings) {
  // vLLM V1's per-iteration annotation (Worker.annotate_profile) around an eager, launch-bound forward.
  synthetic::SyntheticRun run = synthetic::make_scenario("launch_bound", {.steps = 6});
  synthetic::to_vllm_iterations(run);
  const AnalyzedRun a = analyzed(std::move(run));
  expect_engine_iterations(a, "execute_context_0(0)_generation_32(32)");
  const auto found = a.findings("launch_bound");
  ASSERT_GE(found.size(), 5u) << describe_findings(a.result);
  for (const Finding& f : found) {
    EXPECT_NE(f.message.find("drop enforce_eager (--enforce-eager)"), std::string::npos) << f.message;
    EXPECT_EQ(f.message.find("torch.cuda.graphs"), std::string::npos) << f.message;
  }
  // SGLang's spans: its own switches.
  synthetic::SyntheticRun sglang = synthetic::make_scenario("launch_bound", {.steps = 6});
  synthetic::to_sglang_step_ranges(sglang);
  const AnalyzedRun b = analyzed(std::move(sglang));
  const auto sglang_found = b.findings("launch_bound");
  ASSERT_GE(sglang_found.size(), 5u) << describe_findings(b.result);
  for (const Finding& f : sglang_found) {
    EXPECT_NE(f.message.find("drop --disable-cuda-graph"), std::string::npos) << f.message;
  }
  // A training loop keeps PyTorch's own advice.
  for (const Finding& f : analyze_scenario("launch_bound", {.steps = 6}).findings("launch_bound")) {
    EXPECT_NE(f.message.find("torch.cuda.graphs"), std::string::npos) << f.message;
  }
}

TEST(TrailingStep, ANearEmptyClosingProfilerStepIsNotAStep) {
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 5});
  synthetic::add_trailing_empty_step(run);
  const AnalyzedRun a = analyzed(std::move(run));
  ASSERT_EQ(a.result.steps.size(), 5u);
  EXPECT_EQ(a.result.steps.back().step, 5);
  EXPECT_EQ(a.result.summary.time.dropped_windows, 1);
  EXPECT_LT(a.result.summary.step_ms.cv, 0.2);  // not CV 0.99 from a 49 µs "step"
  EXPECT_TRUE(a.result.findings.empty()) << describe_findings(a.result);
  expect_whole_trace_accounted(a.result.summary);
}

// ---- item 4: one-off initialization ----------------------------------------------------------------

TEST(Initialization, BeforeTheFirstStepIsReportedOnceWithItsCost) {
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 6});
  const int64_t truth = synthetic::add_initialization(run, 2'000'000'000, 0);
  const AnalyzedRun a = analyzed(std::move(run));
  const auto found = a.findings("initialization");
  ASSERT_EQ(found.size(), 1u) << describe_findings(a.result);
  const Finding& f = found[0];
  EXPECT_NEAR(f.cost_ms, double(truth) / 1e6, 0.01 * double(truth) / 1e6);
  EXPECT_EQ(f.tax_share, TaxShare::kOverlapping);
  EXPECT_EQ(f.step, a.result.steps.front().step);
  EXPECT_NE(f.message.find("context creation 2000.0 ms (cudaGetDeviceCount"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("allocator set-up"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("before the first step"), std::string::npos) << f.message;
  // Never a per-step fault: the steps' findings are the loop's (none: gpu_bound is healthy).
  for (const Finding& x : a.result.findings) EXPECT_EQ(x.detector, "initialization") << describe_findings(a.result);
  const TimeAccounting& t = a.result.summary.time;
  EXPECT_GT(t.before_first_step_ms, 2'500.0);
  expect_whole_trace_accounted(a.result.summary);
  // The whole trace's busy % counts the idle start-up; the steps' own does not.
  EXPECT_LT(t.gpu_busy_pct, 0.5 * a.result.summary.gpu_busy_pct);
}

TEST(Initialization, AFirstStepFilledByInitializationIsWarmUpNotAHiddenSync) {
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 6});
  const int64_t truth = synthetic::add_initialization(run, 1'000'000'000, 3'000'000'000);
  const AnalyzedRun a = analyzed(std::move(run));
  ASSERT_EQ(a.result.steps.size(), 6u);
  EXPECT_EQ(a.result.summary.warmup_steps, 1);
  const auto found = a.findings("initialization");
  ASSERT_EQ(found.size(), 1u) << describe_findings(a.result);
  EXPECT_NEAR(found[0].cost_ms, double(truth) / 1e6, 0.02 * double(truth) / 1e6);
  EXPECT_EQ(evidence<int64_t>(found[0], "first_step_warmup"), 1);
  EXPECT_NE(found[0].message.find("module loading"), std::string::npos) << found[0].message;
  for (const char* id : {"hidden_sync", "host_bound", "recompilation", "gc_pause", "step_variance"}) {
    EXPECT_EQ(a.findings_of(id), 0u) << id << "\n" << describe_findings(a.result);
  }
}

TEST(Initialization, LazyModuleLoadsAtFirstLaunchesMakeTheFirstStepWarmUp) {
  // A capture from the process's first iteration (no warm-up before it): each kernel's first launch
  // loads its module, 4 ms each under the tracer's "Lazy Function Loading" record — far below the
  // 10 ms that makes a call initialization by its length alone, yet ~10 of them fill the first step.
  synthetic::WorkloadConfig c = synthetic::scenario_config("gpu_bound", {.steps = 6});
  c.warmup_steps = 0;
  c.lazy_load_ns = 4'000'000;
  const AnalyzedRun a = analyzed(synthetic::generate(c));
  ASSERT_EQ(a.result.steps.size(), 6u);
  EXPECT_EQ(a.result.summary.warmup_steps, 1);
  const auto found = a.findings("initialization");
  ASSERT_EQ(found.size(), 1u) << describe_findings(a.result);
  EXPECT_EQ(evidence<int64_t>(found[0], "first_step_warmup"), 1);
  EXPECT_NE(found[0].message.find("module loading"), std::string::npos) << found[0].message;
  EXPECT_NE(found[0].message.find("(cudaLaunchKernel 4.0 ms)"), std::string::npos) << found[0].message;
  for (const char* id : {"launch_bound", "host_bound", "hidden_sync", "step_variance", "recompilation"}) {
    EXPECT_EQ(a.findings_of(id), 0u) << id << "\n" << describe_findings(a.result);
  }
  // The same stalls without the tracer's records: no call is long enough to say what it was.
  c.lazy_load_records = false;
  const AnalyzedRun b = analyzed(synthetic::generate(c));
  EXPECT_EQ(b.findings_of("initialization"), 0u) << describe_findings(b.result);
  EXPECT_EQ(b.result.summary.warmup_steps, 0);
}

TEST(Initialization, WarmUpBeforeTheFirstOptimizerStepIsNotDroppedWithoutAWord) {
  synthetic::SyntheticRun run = synthetic::make_scenario("no_marks", {.steps = 8});
  synthetic::add_initialization(run, 3'000'000'000, 0);
  const AnalyzedRun a = analyzed(std::move(run));
  EXPECT_EQ(a.result.segmentation.source, StepSource::kInferred);
  EXPECT_EQ(a.findings_of("initialization"), 1u) << describe_findings(a.result);
  EXPECT_GT(a.result.summary.time.before_first_step_ms, 3'000.0);
  expect_whole_trace_accounted(a.result.summary);
}

TEST(Initialization, SilentOnEveryScenarioWithoutIt) {
  for (const std::string& name : synthetic::scenario_names()) {
    const AnalyzedRun a = analyze_scenario(name, {.steps = 4});
    EXPECT_EQ(a.findings_of("initialization"), 0u) << name << "\n" << describe_findings(a.result);
    expect_whole_trace_accounted(a.result.summary);
  }
}

}  // namespace
}  // namespace stepwatch::scenario
