// Advice that fits the program, collectives named on RCCL, and trend detectors (issue 14, items
// 5-7), on synthetic runs: an umbrella's message follows its evidence and points to the refinement
// that fired, the run's total tax counts each idle interval once (never over 100%), fixes fit the
// stack (PyTorch / plain CUDA / ROCm) and never show versioned call names; RCCL's generic kernels
// are named from PyTorch's nccl ops; step_variance respects the cost rule; a gradual slowdown is
// throttle against the best early baseline.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "evidence_support.h"
#include "scenario_support.h"
#include "stepwatch/export/kineto_writer.h"
#include "stepwatch/import/kineto_importer.h"
#include "synthetic/accuracy_runs.h"
#include "synthetic/transforms_c.h"

namespace stepwatch::scenario {
namespace {

constexpr int kSteps = 8;

AnalyzedRun analyzed(synthetic::SyntheticRun run) {
  AnalyzedRun a{std::move(run), {}};
  a.result = analyze(a.run.trace);
  return a;
}

bool mentions(const Finding& f, std::string_view text) { return f.message.find(text) != std::string::npos; }

// ---- item 5 -------------------------------------------------------------------------------------

TEST(Advice, TheUmbrellaFollowsItsEvidenceAndPointsToTheRefinement) {
  const AnalyzedRun a = analyze_scenario("allocator_churn", {.steps = kSteps});
  const auto syncs = a.findings("hidden_sync");
  ASSERT_FALSE(syncs.empty()) << describe_findings(a.result);
  for (const Finding& f : syncs) {
    EXPECT_TRUE(mentions(f, "frees synchronize the device")) << f.message;
    EXPECT_TRUE(mentions(f, "expandable_segments")) << f.message;
    EXPECT_FALSE(mentions(f, ".item()")) << f.message;
    if (a.steps_flagged_by("allocator_churn").count(f.step) != 0) {
      EXPECT_TRUE(mentions(f, "(see allocator_churn)")) << f.message;
      EXPECT_EQ(evidence<std::vector<std::string>>(f, "refined_by"), std::vector<std::string>{"allocator_churn"});
    }
  }
  // Syncs still get the metrics advice; pageable copies the pinned-memory one.
  for (const Finding& f : analyze_scenario("item_sync", {.steps = 4}).findings("hidden_sync")) {
    EXPECT_TRUE(mentions(f, "defer metrics (.item(), .cpu(), logging)")) << f.message;
  }
  for (const Finding& f : analyze_scenario("pageable_copy", {.steps = 4}).findings("hidden_sync")) {
    EXPECT_TRUE(mentions(f, "pin_memory=True")) << f.message;
    EXPECT_TRUE(mentions(f, "(see pageable_memcpy)")) << f.message;
  }
}

TEST(Advice, TheSummaryCountsEachIdleIntervalOnce) {
  for (const std::string& name : synthetic::scenario_names()) {
    const AnalyzedRun a = analyze_scenario(name, {.steps = 4, .magnitude = 2.0});
    const RunSummary& s = a.result.summary;
    EXPECT_LE(s.tax_pct, 100.0 + 1e-9) << name;
    double own = 0;
    for (const auto& [id, t] : s.findings) {
      if (t.tax_share == TaxShare::kRefinement) {
        EXPECT_EQ(s.findings.count(t.refines), 1u) << id << " on " << name;
      }
      own += t.tax_share == TaxShare::kOwn ? t.cost_ms : 0.0;
    }
    EXPECT_LE(s.tax_ms, own + 1e-6) << name;
  }
  // The umbrella and its refinement on the same idle: the tax is the umbrella's, not their sum.
  const AnalyzedRun a = analyze_scenario("allocator_churn", {.steps = kSteps});
  const RunSummary& s = a.result.summary;
  ASSERT_EQ(s.findings.at("allocator_churn").refines, "hidden_sync");
  EXPECT_LE(s.tax_ms, s.findings.at("hidden_sync").cost_ms + 1e-6);
}

TEST(Advice, FixesFitThePlainCudaAndRocmPrograms) {
  for (bool rocm : {false, true}) {
    SCOPED_TRACE(rocm ? "rocm" : "cuda");
    // (+no_marks: no_step_marks' own fix, how to mark steps, fits the program too.)
    for (const char* name : {"item_sync", "allocator_churn", "launch_bound", "sync_copy", "item_sync+no_marks"}) {
      synthetic::SyntheticRun run = synthetic::make_scenario(name, {.steps = 4});
      synthetic::to_plain_program(run, rocm);
      const AnalyzedRun a = analyzed(std::move(run));
      ASSERT_FALSE(a.result.findings.empty()) << name;
      for (const Finding& f : a.result.findings) {
        for (const char* pytorch : {"torch", ".item()", "pin_memory", "PYTORCH_", "DataLoader"}) {
          EXPECT_FALSE(mentions(f, pytorch)) << name << ": " << f.message;
        }
        if (rocm) {
          EXPECT_FALSE(mentions(f, "nvidia-smi") || mentions(f, "CUDA graph")) << f.message;
        }
      }
      if (std::string_view(name).ends_with("+no_marks")) {
        const auto marks = a.findings("no_step_marks");
        ASSERT_EQ(marks.size(), 1u) << describe_findings(a.result);
        EXPECT_TRUE(mentions(marks[0], rocm ? "roctxRangePushA" : "nvtxRangePushA")) << marks[0].message;
      }
    }
  }
}

TEST(Advice, NoVersionedCallNamesInMessages) {
  synthetic::SyntheticRun run = synthetic::make_scenario("item_sync", {.steps = 4});
  for (Event& e : run.trace.events) {
    if (e.kind == EventKind::kApiCall) e.name = run.trace.names.intern(std::string(run.trace.names.view(e.name)) + "_v3020");
  }
  const AnalyzedRun a = analyzed(std::move(run));
  ASSERT_FALSE(a.findings("hidden_sync").empty());
  for (const Finding& f : a.result.findings) EXPECT_FALSE(mentions(f, "_v3020")) << f.message;
}

// ---- item 6 -------------------------------------------------------------------------------------

TEST(CollectiveNamingScenario, RcclGenericKernelsAreNamedFromPyTorchsNcclOps) {
  // The loop reads its loss back at the end of each step (.item()), so every step's kernels were
  // launched inside the capture: the join needs each kernel's launch call in the data. (A GPU-bound
  // loop without it runs kernels launched before the capture began, which no range can name.)
  synthetic::WorkloadConfig c = synthetic::scenario_config("serialized_allreduce", {.steps = 4});
  c.end_of_step_sync = true;
  synthetic::SyntheticRun run = synthetic::generate(c);
  synthetic::to_rccl_generic(run);
  const AnalyzedRun a = analyzed(std::move(run));
  const auto found = a.findings("exposed_collective");
  ASSERT_FALSE(found.empty()) << describe_findings(a.result);
  for (const Finding& f : found) {
    EXPECT_EQ(evidence<std::vector<std::string>>(f, "collectives"), std::vector<std::string>{"AllReduce"}) << f.message;
    EXPECT_FALSE(mentions(f, "Other")) << f.message;
  }
}

// The same RCCL run through a Kineto trace file: the importer keeps the op ranges and the
// correlations, and the pipeline's range join names the kernels from them.
TEST(CollectiveNamingScenario, AKinetoTraceOfTheRcclRunNamesItsCollectivesToo) {
  synthetic::WorkloadConfig c = synthetic::scenario_config("serialized_allreduce", {.steps = 4});
  c.end_of_step_sync = true;
  synthetic::SyntheticRun run = synthetic::generate(c);
  synthetic::to_rccl_generic(run);
  std::ostringstream json;
  write_kineto_json(run.trace, json);
  const Trace back = import_kineto_json(json.str(), "rccl.json");
  const RankResult r = analyze(back);
  size_t found = 0;
  for (const Finding& f : r.findings) {
    if (f.detector != "exposed_collective") continue;
    ++found;
    EXPECT_EQ(evidence<std::vector<std::string>>(f, "collectives"), std::vector<std::string>{"AllReduce"}) << f.message;
  }
  EXPECT_GT(found, 0u) << describe_findings(r);
  // Without the op ranges nothing names them: Other, as before (the join is what names them).
  synthetic::SyntheticRun bare = synthetic::generate(c);
  synthetic::to_rccl_generic(bare);
  std::erase_if(bare.trace.events, [&](const Event& e) {
    return e.kind == EventKind::kRange && bare.trace.names.view(e.name) == "nccl:all_reduce";
  });
  const RankResult unnamed = analyze(bare.trace);
  for (const Finding& f : unnamed.findings) {
    if (f.detector == "exposed_collective") {
      EXPECT_EQ(evidence<std::vector<std::string>>(f, "collectives"), std::vector<std::string>{"Other"});
    }
  }
}

// ---- item 7 -------------------------------------------------------------------------------------

TEST(Trends, AGradualSlowdownIsThrottleAgainstTheBestEarlyBaseline) {
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 24});
  synthetic::inject_linear_drift(run, 0.04);  // step k runs 1 + 0.04 k times the base
  const AnalyzedRun a = analyzed(std::move(run));
  const auto found = a.findings("throttle");
  ASSERT_FALSE(found.empty()) << describe_findings(a.result);
  // Established within the first dozen steps and kept on every later one.
  EXPECT_LE(found.front().step, a.result.steps.front().step + 14) << describe_findings(a.result);
  EXPECT_EQ(found.back().step, a.result.steps.back().step);
  EXPECT_NE(found.back().message.find("early"), std::string::npos) << found.back().message;
}

TEST(Trends, SteadyRunsAndAOneOffSlowerPhaseAreNoDrift) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const AnalyzedRun a = analyze_scenario("gpu_bound", {.steps = 24, .seed = seed});
    EXPECT_EQ(a.findings_of("throttle"), 0u) << describe_findings(a.result);
    EXPECT_EQ(a.findings_of("step_variance"), 0u) << describe_findings(a.result);
  }
}

}  // namespace
}  // namespace stepwatch::scenario
