// Issue 14's verdicts on the corpus traces that show its patterns (docs/detectors.md "Corpus
// verdicts"): host-bound steps, one-off initialization, a closing empty profiler step, advice that
// fits the program, each idle interval taxed once. Skipped without ../shared/corpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "corpus_support.h"
#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/import/kineto_importer.h"
#include "stepwatch/import/nsys_importer.h"

namespace stepwatch {
namespace {

using testing::corpus_dir;

RankResult analyzed(Trace trace) {
  AnalysisConfig config;
  auto detectors = make_detectors(config);
  const int rank = std::max(trace.rank, 0);
  return analyze_rank(trace, rank, config, std::move(detectors));
}

RankResult kineto(const std::string& relative) {
  return analyzed(import_kineto_file((corpus_dir() / "kineto" / relative).string()));
}

RankResult nsys(const std::string& file) { return analyzed(import_nsys_sqlite((corpus_dir() / "nsys" / file).string())); }

std::vector<const Finding*> of(const RankResult& r, std::string_view detector) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings) {
    if (f.detector == detector) out.push_back(&f);
  }
  return out;
}

bool says(const Finding& f, std::string_view text) { return f.message.find(text) != std::string::npos; }

// Item 1: host-bound DDP, GPU busy ~22%, 74% of each step host idle: the host in its own CPU work
// between the kernels, in long gaps and in hundreds of short ones (not launch overhead: launch
// calls are ~4% of the step).
TEST(CorpusAccuracy, NcclParserConfigIsHostBoundOnEveryStep) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = kineto("hta-nccl_parser_config/nccl_data.json.gz");
  ASSERT_EQ(r.steps.size(), 3u);
  const auto found = of(r, "host_bound");
  ASSERT_EQ(found.size(), 3u);
  for (const Finding* f : found) {
    EXPECT_GE(f->cost_pct, 65.0) << f->message;
    EXPECT_GT(std::get<double>(std::find_if(f->evidence.begin(), f->evidence.end(), [](const auto& e) {
                                 return e.first == "short_gap_host_ms";
                               })->second),
              50.0);
    EXPECT_TRUE(says(*f, "aten::")) << "names the host's ops: " << f->message;
    EXPECT_TRUE(says(*f, "torch.compile")) << f->message;
  }
  EXPECT_TRUE(of(r, "launch_bound").empty());  // launch calls are ~4% of the step
}

// Item 1: a 218 ms host gap at the start of a 383 ms inference step.
TEST(CorpusAccuracy, TimesformerHostGapIsHostBound) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = kineto("tracelens-h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz");
  const auto found = of(r, "host_bound");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NEAR(found[0]->cost_ms, 218.0, 3.0);
  EXPECT_TRUE(of(r, "hidden_sync").empty());
}

// Item 3: the profiler's closing ProfilerStep (49 µs, no kernel) is no step.
TEST(CorpusAccuracy, Mi250TrailingEmptyStepIsDropped) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = kineto("hta-amd_mi250/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_GT(r.steps[0].duration_ns(), 1'000'000);
  EXPECT_EQ(r.summary.time.dropped_windows, 1);
}

// Item 4: a 43 s benchmark capture whose time is context creation, lazy module loading and
// allocator set-up: initialization, not a hidden sync with ".item()" advice.
TEST(CorpusAccuracy, AlexnetStartUpIsInitializationNotAHiddenSync) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = kineto("hta-critical_path-alexnet/benchmark_result_2869224_1695835535_trace.json.gz");
  const auto init = of(r, "initialization");
  ASSERT_EQ(init.size(), 1u);
  EXPECT_GT(init[0]->cost_pct, 90.0) << init[0]->message;
  EXPECT_TRUE(says(*init[0], "context creation")) << init[0]->message;
  EXPECT_TRUE(says(*init[0], "module loading")) << init[0]->message;
  EXPECT_TRUE(of(r, "hidden_sync").empty());
  // The summary accounts for the whole trace: the parts add up.
  const TimeAccounting& t = r.summary.time;
  EXPECT_NEAR(t.before_first_step_ms + t.in_steps_ms + t.between_steps_ms + t.after_last_step_ms, t.trace_ms, 0.01);
  EXPECT_GT(t.before_first_step_ms, 20'000.0);
}

// Item 5: hipFree churn on ROCm. The umbrella's fix follows the frees and points to the
// refinement, the knobs are HIP's, and the run's tax counts the idle once.
TEST(CorpusAccuracy, Mi300FreesGetAllocatorAdviceAndTheTaxStaysUnder100) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = kineto("tracelens-mi300/train_resnet18.json.gz");
  const auto syncs = of(r, "hidden_sync");
  ASSERT_FALSE(syncs.empty());
  for (const Finding* f : syncs) {
    EXPECT_TRUE(says(*f, "frees synchronize the device")) << f->message;
    EXPECT_TRUE(says(*f, "(see allocator_churn)")) << f->message;
    EXPECT_TRUE(says(*f, "PYTORCH_HIP_ALLOC_CONF")) << f->message;
    EXPECT_FALSE(says(*f, ".item()")) << f->message;
  }
  for (const Finding& f : r.findings) EXPECT_FALSE(says(f, "nvidia-smi") || says(f, "PYTORCH_CUDA_")) << f.message;
  EXPECT_LE(r.summary.tax_pct, 100.0);
  EXPECT_EQ(r.summary.findings.at("allocator_churn").tax_share, TaxShare::kRefinement);
}

// Item 5: plain CUDA programs get the runtime's fixes, never PyTorch's, and no versioned names.
TEST(CorpusAccuracy, PlainCudaProgramsGetCudaFixes) {
  STEPWATCH_REQUIRE_CORPUS();
  for (const char* file : {"pipit-cloverleaf.sqlite", "pipit-saxpy-mpi.sqlite"}) {
    SCOPED_TRACE(file);
    const RankResult r = nsys(file);
    ASSERT_FALSE(of(r, "hidden_sync").empty());
    for (const Finding& f : r.findings) {
      for (const char* pytorch : {"torch", ".item()", "pin_memory", "PYTORCH_", "DataLoader", "_v3020"}) {
        EXPECT_FALSE(says(f, pytorch)) << f.detector << ": " << f.message;
      }
    }
    EXPECT_LE(r.summary.tax_pct, 100.0);
  }
}

}  // namespace
}  // namespace stepwatch
