// Each core detector on hand-built StepViews: the threshold rule (>= 5% and >= 1 ms), severity,
// and a message that names the signature and the fix.
#include <gtest/gtest.h>

#include "stepwatch/core/detector.h"
#include "stepwatch/detectors/registry.h"
#include "detector_test_support.h"
#include "evidence_support.h"

namespace stepwatch {
namespace {

using testing::make;

StepView step_ms(double dur_ms) {
  StepView v;
  v.step = 4;
  v.rank = 2;
  v.start_ns = 0;
  v.end_ns = static_cast<int64_t>(dur_ms * 1e6);
  v.source = StepSource::kRange;
  return v;
}

std::vector<Finding> judge(std::string_view id, const StepView& v, const AnalysisConfig& config = {}) {
  auto d = make(id, config);
  EXPECT_NE(d, nullptr) << id;
  FindingCollector sink;
  d->on_step(v, sink);
  d->on_finish(RunView{}, sink);
  return sink.findings;
}

TEST(Registry, ListsTheCoreDetectorsWithDescriptions) {
  std::vector<std::string> ids;
  for (const DetectorInfo& d : registered_detectors()) {
    ids.emplace_back(d.id);
    EXPECT_FALSE(d.description.empty());
  }
  for (const char* id : {"input_starvation", "hidden_sync", "exposed_collective", "no_step_marks"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
  AnalysisConfig off;
  off.enabled["hidden_sync"] = false;
  EXPECT_EQ(make_detectors(off).size(), registered_detectors().size() - 1);
}

TEST(InputStarvation, FiresAtFivePercentAndOneMillisecond) {
  StepView v = step_ms(100);
  v.idle[IdleCause::kInput] = 6'000'000;
  v.data_wait_ns = 7'000'000;
  auto f = judge("input_starvation", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 6.0);
  EXPECT_DOUBLE_EQ(f[0].cost_pct, 6.0);
  EXPECT_EQ(f[0].step, 4);
  EXPECT_EQ(f[0].rank, 2);
  EXPECT_NE(f[0].message.find("waited for data"), std::string::npos);
  EXPECT_NE(f[0].message.find("Fix:"), std::string::npos);
  EXPECT_EQ(format_log_line(f[0]).rfind("[stepwatch][rank 2][step 4] input_starvation: GPU idle 6.0 ms", 0), 0u)
      << format_log_line(f[0]);

  v.idle[IdleCause::kInput] = 4'000'000;  // 4%: below the share threshold
  EXPECT_TRUE(judge("input_starvation", v).empty());

  StepView short_step = step_ms(10);
  short_step.idle[IdleCause::kInput] = 900'000;  // 9% but < 1 ms
  EXPECT_TRUE(judge("input_starvation", short_step).empty());
}

TEST(InputStarvation, CriticalAtTwentyFivePercentAndConfigurable) {
  StepView v = step_ms(100);
  v.idle[IdleCause::kInput] = 30'000'000;
  EXPECT_EQ(judge("input_starvation", v)[0].severity, Severity::kCritical);
  AnalysisConfig strict;
  strict.per_detector["input_starvation"] = DetectorThresholds{40.0, 1.0, 60.0};
  EXPECT_TRUE(judge("input_starvation", v, strict).empty());
}

TEST(HiddenSync, CostIsTheLargerOfSyncIdleAndBlockedIdle) {
  StepView v = step_ms(100);
  v.idle[IdleCause::kSync] = 8'000'000;
  v.blocked_idle_ns = 12'000'000;
  v.syncs = 3;
  BlockingCallStat c;
  c.name = "cudaMemcpyAsync";
  c.api_class = ApiClass::kMemcpyAsync;
  c.host_memory = MemoryKind::kPageable;
  c.copy_kind = CopyKind::kDtoH;
  c.count = 3;
  c.gpu_idle_ns = 12'000'000;
  v.blocking.push_back(c);
  auto f = judge("hidden_sync", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].cost_ms, 12.0);
  EXPECT_NE(f[0].message.find("3x cudaMemcpyAsync (DtoH with pageable memory)"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("Fix:"), std::string::npos);

  StepView healthy = step_ms(100);
  healthy.syncs = 10;  // syncs that never left the GPU idle cost nothing
  EXPECT_TRUE(judge("hidden_sync", healthy).empty());
}

TEST(ExposedCollective, NamesTheCollectiveAndTheFix) {
  StepView v = step_ms(345);
  v.comm_ns = 60'000'000;
  v.exposed_comm_ns = 60'000'000;
  v.collectives.push_back(CollectiveStat{CollectiveType::kAllReduce, 40, 60'000'000, 60'000'000});
  auto f = judge("exposed_collective", v);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("NCCL AllReduce ran 60.0 ms"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("bucket"), std::string::npos);

  StepView a2a = step_ms(100);
  a2a.comm_ns = a2a.exposed_comm_ns = 20'000'000;
  a2a.collectives.push_back(CollectiveStat{CollectiveType::kAllToAll, 8, 20'000'000, 20'000'000});
  auto g = judge("exposed_collective", a2a);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NE(g[0].message.find("expert"), std::string::npos) << g[0].message;

  StepView hidden = step_ms(100);
  hidden.comm_ns = 50'000'000;
  hidden.exposed_comm_ns = 2'000'000;  // overlapped DDP: 2% exposed
  EXPECT_TRUE(judge("exposed_collective", hidden).empty());
}

TEST(ExposedCollective, EmbeddingTablesAllToAllsGetTheShardingFixNotTheExpertOne) {
  // A recommendation model's all-to-alls (TorchRec): the embeddings' output distribution the more exposed.
  StepView v = step_ms(80);
  v.comm_ns = 30'000'000;
  v.exposed_comm_ns = 20'000'000;
  v.collectives.push_back(CollectiveStat{CollectiveType::kSendRecv, 8, 30'000'000, 20'000'000});
  v.all_to_all.kernels = 8;
  v.all_to_all.embeddings_forward = {1, 10'000'000, 8'000'000};
  v.all_to_all.embeddings_backward = {1, 8'000'000, 6'000'000};
  v.all_to_all.sparse_features = {6, 12'000'000, 6'000'000};
  v.all_to_all.sparse_features_ahead = true;
  auto f = judge("exposed_collective", v);
  ASSERT_EQ(f.size(), 1u);
  const std::string& m = f[0].message;
  EXPECT_NE(m.find("All-to-all of sharded embedding tables (TorchRec): embeddings 2 kernels, "
                   "18.0 ms (14.0 ms exposed: forward 8.0 ms, backward 6.0 ms); sparse-feature distribution 6 "
                   "kernels, 12.0 ms (6.0 ms exposed, issued a batch ahead)."),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("EmbeddingShardingPlanner"), std::string::npos) << m;
  EXPECT_NE(m.find("QCommsConfig"), std::string::npos) << m;
  EXPECT_EQ(m.find("expert capacity"), std::string::npos) << m;
  EXPECT_EQ(m.find("EP axis"), std::string::npos) << m;
  EXPECT_EQ(evidence<std::string>(f[0], "a2a_purpose"), "embedding_sharding");
  EXPECT_DOUBLE_EQ(evidence<double>(f[0], "embedding_a2a_exposed_ms"), 20.0);
  EXPECT_FALSE(has_evidence(f[0], "a2a_layers"));

  // The sparse features the more exposed: the pipeline's fix, or, when it already runs them a batch
  // ahead, fewer ids.
  v.all_to_all.embeddings_forward = {1, 10'000'000, 1'000'000};
  v.all_to_all.embeddings_backward = {};
  v.all_to_all.sparse_features = {6, 12'000'000, 9'000'000};
  const std::string ahead = judge("exposed_collective", v).at(0).message;
  EXPECT_NE(ahead.find("already issues this input distribution a batch ahead"), std::string::npos) << ahead;
  EXPECT_NE(ahead.find("embeddings 1 kernel, 10.0 ms (1.0 ms exposed, forward)"), std::string::npos) << ahead;
  v.all_to_all.sparse_features_ahead = false;
  const std::string not_ahead = judge("exposed_collective", v).at(0).message;
  EXPECT_NE(not_ahead.find("TrainPipelineSparseDist runs it a batch ahead"), std::string::npos) << not_ahead;
  EXPECT_EQ(not_ahead.find("issued a batch ahead"), std::string::npos) << not_ahead;

  // MoE layers that outweigh the tables keep the expert measurement and its fix.
  v.all_to_all.layered = {16, 12'000'000, 11'000'000};
  v.all_to_all.layers = 8;
  v.all_to_all.expert_compute_ns = 6'000'000;
  const auto moe = judge("exposed_collective", v);
  ASSERT_EQ(moe.size(), 1u);
  EXPECT_NE(moe[0].message.find("All-to-all: 8 layers (16 kernels), 12.0 ms (11.0 ms exposed"), std::string::npos)
      << moe[0].message;
  EXPECT_NE(moe[0].message.find("cut its volume (capacity factor"), std::string::npos) << moe[0].message;
  EXPECT_EQ(evidence<int64_t>(moe[0], "a2a_layers"), 8);
  EXPECT_FALSE(has_evidence(moe[0], "a2a_purpose"));
}

TEST(NoStepMarks, OnlyForAPseudoStepAndOnlyOnce) {
  StepView v = step_ms(1000);
  EXPECT_TRUE(judge("no_step_marks", v).empty());
  v.source = StepSource::kWholeTrace;
  auto d = make("no_step_marks");
  FindingCollector sink;
  d->on_step(v, sink);
  d->on_step(v, sink);
  ASSERT_EQ(sink.findings.size(), 1u);
  EXPECT_EQ(sink.findings[0].severity, Severity::kInfo);
  EXPECT_NE(sink.findings[0].message.find("stepwatch.step()"), std::string::npos);
}

}  // namespace
}  // namespace stepwatch
