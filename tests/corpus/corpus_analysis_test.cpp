// The analysis on real traces, against their measured character (../shared/corpus/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "corpus_support.h"
#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch {
namespace {

using testing::corpus_dir;

RankResult analyze_file(const std::filesystem::path& path) {
  Trace trace = import_kineto_file(path.string());
  AnalysisConfig config;
  auto detectors = make_detectors(config);
  return analyze_rank(trace, std::max(trace.rank, 0), config, std::move(detectors));
}

std::vector<const Finding*> findings_of(const RankResult& r, std::string_view detector) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings) {
    if (f.detector == detector) out.push_back(&f);
  }
  return out;
}

TEST(CorpusAnalysis, EveryFileBreakdownAddsUpToTheStepWallTime) {
  STEPWATCH_REQUIRE_CORPUS();
  const auto files = testing::kineto_files();
  ASSERT_GE(files.size(), 15u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    const RankResult r = analyze_file(file);
    ASSERT_FALSE(r.steps.empty());
    for (const StepView& v : r.steps) {
      EXPECT_GT(v.duration_ns(), 0);
      EXPECT_EQ(v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total(), v.duration_ns())
          << "step " << v.step;
      for (IdleCause c : kIdleCauses) EXPECT_GE(v.idle[c], 0) << to_string(c);
      EXPECT_LE(v.blocked_idle_ns, v.duration_ns() - v.busy_ns);
    }
  }
}

TEST(CorpusAnalysis, DfIndexResolverHasAFullyExposedAllReduceEveryStep) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = analyze_file(corpus_dir() / "kineto/hta-df_index_resolver/df_index_resolver.json.gz");
  ASSERT_EQ(r.steps.size(), 5u);
  const auto exposed = findings_of(r, "exposed_collective");
  ASSERT_EQ(exposed.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(exposed[i]->cost_ms, 60.0, 3.0) << "step " << exposed[i]->step;
  EXPECT_NEAR(exposed[4]->cost_ms, 119.0, 3.0);
  for (const StepView& v : r.steps) EXPECT_EQ(v.exposed_comm_ns, v.comm_ns);  // HTA overlap 0.0%
  EXPECT_NEAR(r.summary.comm_comp_overlap_pct, 0.0, 1.0);
}

TEST(CorpusAnalysis, RecommendationModelsAllToAllsAreEmbeddingTablesNotExperts) {
  // hta-trace_diff-* and hta-sampled-2ranks are TorchRec/FBGEMM recommendation models (split_embedding
  // kernels, All2All_Pooled_* and sparse_data_dist ranges): their all-to-alls move sparse features and
  // pooled embeddings between the tables' ranks. No MoE words, no dispatch/combine layers.
  STEPWATCH_REQUIRE_CORPUS();
  for (const char* file : {"hta-trace_diff-control/control.json.gz", "hta-trace_diff-test/test.json.gz",
                           "hta-sampled-2ranks/sampled_rank-0.json.gz", "hta-sampled-2ranks/sampled_rank-1.json.gz"}) {
    SCOPED_TRACE(file);
    const RankResult r = analyze_file(corpus_dir() / "kineto" / file);
    const auto exposed = findings_of(r, "exposed_collective");
    ASSERT_FALSE(exposed.empty());
    int named = 0;
    for (const Finding* f : exposed) {
      SCOPED_TRACE(f->message);
      EXPECT_EQ(f->message.find("expert"), std::string::npos);
      EXPECT_EQ(f->message.find("EP axis"), std::string::npos);
      bool layers = false;
      for (const auto& [key, value] : f->evidence) layers |= key == "a2a_layers";
      EXPECT_FALSE(layers);
      if (f->message.find("All-to-all of sharded embedding tables (TorchRec)") != std::string::npos) ++named;
    }
    EXPECT_EQ(named, static_cast<int>(exposed.size()));
    // Every step's all-to-all kernels fall in one of the two distributions.
    for (const StepView& v : r.steps) {
      const AllToAllStat& a = v.all_to_all;
      EXPECT_EQ(a.layered.kernels, 0) << "step " << v.step;
      EXPECT_EQ(a.sparse_features.kernels + a.embeddings_forward.kernels + a.embeddings_backward.kernels, a.kernels);
    }
  }
  // trace_diff's pipeline runs the input distribution a batch ahead (## sparse_data_dist ##).
  const RankResult control = analyze_file(corpus_dir() / "kineto/hta-trace_diff-control/control.json.gz");
  for (const StepView& v : control.steps) {
    EXPECT_TRUE(v.all_to_all.sparse_features_ahead) << "step " << v.step;
    EXPECT_GT(v.all_to_all.embeddings_forward.kernels, 0) << "step " << v.step;
    EXPECT_GT(v.all_to_all.embeddings_backward.kernels, 0) << "step " << v.step;
  }
}

TEST(CorpusAnalysis, NsResolutionHealthyStepsStaySilent) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = analyze_file(corpus_dir() / "kineto/hta-ns_resolution/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
  ASSERT_EQ(r.steps.size(), 5u);
  for (const Finding& f : r.findings) {
    EXPECT_FALSE(f.step >= 102 && f.step <= 105) << f.detector << " fired on healthy step " << f.step << ": "
                                                 << f.message;
  }
  for (const StepView& v : r.steps) {
    if (v.step >= 102) {
      EXPECT_GT(v.duty_cycle(), 0.98) << "step " << v.step;
    }
  }
}

TEST(CorpusAnalysis, TimesformerGapAtStepStartIsHostSide) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r =
      analyze_file(corpus_dir() / "kineto/tracelens-h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz");
  ASSERT_EQ(r.steps.size(), 1u);
  const StepView& v = r.steps[0];
  EXPECT_NEAR(double(v.duration_ns()) / 1e6, 383.0, 2.0);
  // The largest gap: ~218 ms at the start of the step. Its cudaDeviceSynchronize starts after
  // the GPU is already idle, so rule 2 does not apply: the gap is host time.
  auto largest = std::max_element(v.gaps.begin(), v.gaps.end(),
                                  [](const GapRecord& a, const GapRecord& b) { return a.counted_ns < b.counted_ns; });
  ASSERT_NE(largest, v.gaps.end());
  EXPECT_NEAR(double(largest->counted_ns) / 1e6, 218.0, 3.0);
  EXPECT_LT(largest->start_ns - v.start_ns, v.duration_ns() / 10);
  EXPECT_EQ(largest->rule, GapRule::kHostActivity);
  EXPECT_GT(largest->parts[IdleCause::kHost], largest->counted_ns * 9 / 10);
  EXPECT_EQ(largest->parts[IdleCause::kSync], 0);
}

TEST(CorpusAnalysis, CommComputeOverlapMatchesHta) {
  STEPWATCH_REQUIRE_CORPUS();
  // HTA get_comm_comp_overlap figures from the corpus README.
  const std::map<std::string, double> hta = {
      {"hta-df_index_resolver/df_index_resolver.json.gz", 0.0},
      {"hta-nccl_parser_config/nccl_data.json.gz", 14.31},
      {"hta-trace_diff-control/control.json.gz", 47.03},
      {"hta-trace_diff-test/test.json.gz", 68.8},
      {"hta-sampled-2ranks/sampled_rank-0.json.gz", 11.81},
      {"hta-sampled-2ranks/sampled_rank-1.json.gz", 20.05},
  };
  for (const auto& [file, expected] : hta) {
    SCOPED_TRACE(file);
    const RankResult r = analyze_file(corpus_dir() / "kineto" / file);
    ASSERT_TRUE(std::isfinite(r.summary.comm_comp_overlap_pct));
    EXPECT_NEAR(r.summary.comm_comp_overlap_pct, expected, 1.0);
  }
}

// Without step ranges the steps are inferred (core/step_inference.h) and no_step_marks says how:
// PARAM's benchmarks record one `Optimizer.step#SGD.step` range per iteration, and the AlexNet
// benchmark runs one forward pass (no repetition): one whole-trace pseudo-step.
TEST(CorpusAnalysis, TracesWithoutStepRangesGetInferredStepsOrOnePseudoStep) {
  STEPWATCH_REQUIRE_CORPUS();
  struct Expected {
    const char* file;
    StepSource source;
    std::string_view inferred_from;
    size_t steps;
    int32_t period;
  };
  const Expected cases[] = {
      {"param-resnet/resnet_kineto.json.gz", StepSource::kInferred, "optimizer_ranges", 29, 0},
      {"param-linear/linear_kineto.json.gz", StepSource::kInferred, "optimizer_ranges", 39, 0},
      {"hta-critical_path-alexnet/benchmark_result_2869224_1695835535_trace.json.gz", StepSource::kWholeTrace, "", 1,
       0},
  };
  for (const Expected& c : cases) {
    SCOPED_TRACE(c.file);
    const RankResult r = analyze_file(corpus_dir() / "kineto" / c.file);
    EXPECT_EQ(r.segmentation.source, c.source) << r.segmentation.matched_name;
    EXPECT_EQ(r.segmentation.inferred_from, c.inferred_from);
    EXPECT_EQ(r.steps.size(), c.steps);
    EXPECT_EQ(r.segmentation.inferred_period, c.period);
    const auto marks = findings_of(r, "no_step_marks");
    ASSERT_EQ(marks.size(), 1u);
    EXPECT_EQ(marks[0]->severity, Severity::kInfo);
    const bool inferred = c.source == StepSource::kInferred;
    EXPECT_EQ(marks[0]->message.find("were inferred from") != std::string::npos, inferred) << marks[0]->message;
  }
}

// TraceLens' B200 trace is one vLLM engine iteration: a prefill of gpt-oss (36 layers, one
// execute_model call) inside vLLM's own annotation `execute_context_1(888_788544)_generation_0(0)`.
// Its kernel sequence repeats layer by layer; read as steps, those repeats made 17 "steps" of 3.8 ms.
// The annotation is the step; the program is vLLM, run eagerly, and the fix names vLLM's settings.
TEST(CorpusAnalysis, VllmIterationIsTheStepNotItsRepeatedLayers) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = analyze_file(corpus_dir() / "kineto/tracelens-b200/eager_trace.json.gz");
  EXPECT_EQ(r.segmentation.source, StepSource::kRange);
  EXPECT_EQ(r.segmentation.matched_name, "execute_context_1(888_788544)_generation_0(0)");
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].step, 0);  // an ordinal: the annotation carries request and token counts
  EXPECT_EQ(r.steps[0].kernels, 768);
  EXPECT_NEAR(double(r.steps[0].duration_ns()) / 1e6, 87.4, 0.5);
  EXPECT_EQ(r.steps[0].stack.engine, Engine::kVllm);
  EXPECT_TRUE(findings_of(r, "no_step_marks").empty());
  const auto launch = findings_of(r, "launch_bound");
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_NE(launch[0]->message.find("let vLLM capture CUDA graphs: drop enforce_eager"), std::string::npos)
      << launch[0]->message;
  EXPECT_EQ(launch[0]->message.find("torch.cuda.graphs"), std::string::npos) << launch[0]->message;
  for (const Finding* f : findings_of(r, "host_bound")) {
    EXPECT_NE(f->message.find("(--async-scheduling)"), std::string::npos) << f->message;
  }
  for (const Finding& f : r.findings) EXPECT_EQ(f.message.find("DataLoader"), std::string::npos) << f.message;
}

TEST(CorpusAnalysis, NcclParserConfigCountsItsBlockingCalls) {
  STEPWATCH_REQUIRE_CORPUS();
  // The README speaks of 24 synchronous copies; the trace's 24 blocking calls are in fact
  // cudaEventSynchronize (its 960 copies are all async DtoD), plus one cudaDeviceSynchronize.
  const RankResult r = analyze_file(corpus_dir() / "kineto/hta-nccl_parser_config/nccl_data.json.gz");
  ASSERT_EQ(r.steps.size(), 3u);
  int syncs = 0, event_syncs = 0;
  for (const StepView& v : r.steps) {
    syncs += v.syncs;
    for (const BlockingCallStat& c : v.blocking) event_syncs += c.api_class == ApiClass::kEventSync ? c.count : 0;
  }
  EXPECT_GT(event_syncs, 0);
  EXPECT_LE(event_syncs, 24);
  EXPECT_LE(syncs, 25);
}

}  // namespace
}  // namespace stepwatch

namespace stepwatch {
namespace {

// ResNet-18 training on an MI300 recorded with_stack=True: every blocking call of the loop is made
// from main() of train_single_gpu.py — the frees inside the forward pass (the costliest), the loss
// read back by `.item()` — and the hidden_sync findings say where.
TEST(CorpusAnalysis, ResnetWithStackNamesTheSitesOfItsBlockingCalls) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r = analyze_file(corpus_dir() / "kineto/tracelens-mi300/train_resnet18.json.gz");
  const auto syncs = findings_of(r, "hidden_sync");
  ASSERT_FALSE(syncs.empty());
  bool item_seen = false;
  for (const Finding* f : syncs) {
    const std::vector<SiteEvidence>* sites = nullptr;
    for (const auto& [key, value] : f->evidence) {
      if (key == "sites") sites = std::get_if<std::vector<SiteEvidence>>(&value);
    }
    ASSERT_NE(sites, nullptr) << f->message;
    for (const SiteEvidence& s : *sites) {
      EXPECT_EQ(s.site, "main() defined at train_single_gpu.py:41");
      item_seen = item_seen || s.call == "Tensor.item()";
    }
    EXPECT_EQ(sites->front().call, "ResNet.forward()");
    // The frees made on the autograd thread (no Python frames) outweigh every sited call: the
    // job-log line names no site rather than one that explains a sliver of the idle.
    EXPECT_EQ(f->message.find("train_single_gpu.py"), std::string::npos) << f->message;
  }
  EXPECT_TRUE(item_seen) << "the loss read-back";
}

}  // namespace
}  // namespace stepwatch

namespace stepwatch {
namespace {

// TimeSformer inference through transformers' pipeline (with_stack=True): the 218 ms host gap at
// the step's start is the pipeline's image preprocessing on the CPU — half of it in
// transformers' normalize() — which the host_bound finding now says in the program's terms.
TEST(CorpusAnalysis, TimesformerHostGapNamesThePreprocessingFunction) {
  STEPWATCH_REQUIRE_CORPUS();
  const RankResult r =
      analyze_file(corpus_dir() / "kineto/tracelens-h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz");
  const auto found = findings_of(r, "host_bound");
  ASSERT_EQ(found.size(), 1u);
  std::vector<std::string> names;
  std::vector<int64_t> us;
  for (const auto& [key, value] : found[0]->evidence) {
    if (key == "python_functions") names = std::get<std::vector<std::string>>(value);
    if (key == "python_functions_us") us = std::get<std::vector<int64_t>>(value);
  }
  ASSERT_FALSE(names.empty()) << found[0]->message;
  EXPECT_EQ(names.front(), "normalize() defined at transformers/image_transforms.py:390");
  ASSERT_EQ(us.size(), names.size());
  EXPECT_NEAR(double(us.front()) / 1e3, 105.8, 2.0);
  EXPECT_NE(found[0]->message.find("in Python: normalize() defined at transformers/image_transforms.py:390"),
            std::string::npos);
}

}  // namespace
}  // namespace stepwatch
