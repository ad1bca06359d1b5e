// A scenario written through the Kineto writer and imported back analyzes exactly as the
// generated trace does: identical StepViews (every field, every gap) and identical findings.
// This is what makes flight-recorder dumps and `stepwatch-synth` output trustworthy inputs to
// `stepwatch analyze`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "scenario_support.h"
#include "stepwatch/export/kineto_writer.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch::scenario {
namespace {

void expect_same_gap(const GapRecord& a, const GapRecord& b) {
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.counted_ns, b.counted_ns);
  EXPECT_EQ(a.rule, b.rule);
  EXPECT_EQ(a.parts.ns, b.parts.ns);
  EXPECT_EQ(a.blocking_call, b.blocking_call);
}

void expect_same_view(const StepView& a, const StepView& b) {
  SCOPED_TRACE("step " + std::to_string(a.step));
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.compute_ns, b.compute_ns);
  EXPECT_EQ(a.comm_ns, b.comm_ns);
  EXPECT_EQ(a.exposed_comm_ns, b.exposed_comm_ns);
  EXPECT_EQ(a.copy_ns, b.copy_ns);
  EXPECT_EQ(a.copy_only_ns, b.copy_only_ns);
  EXPECT_EQ(a.busy_ns, b.busy_ns);
  EXPECT_EQ(a.idle.ns, b.idle.ns);
  EXPECT_EQ(a.blocked_idle_ns, b.blocked_idle_ns);
  EXPECT_EQ(a.data_wait_ns, b.data_wait_ns);
  EXPECT_EQ(a.kernels, b.kernels);
  EXPECT_EQ(a.syncs, b.syncs);
  EXPECT_EQ(a.launches, b.launches);
  EXPECT_EQ(a.launch_api_ns, b.launch_api_ns);
  ASSERT_EQ(a.gaps.size(), b.gaps.size());
  for (size_t i = 0; i < a.gaps.size(); ++i) expect_same_gap(a.gaps[i], b.gaps[i]);
  ASSERT_EQ(a.blocking.size(), b.blocking.size());
  for (size_t i = 0; i < a.blocking.size(); ++i) {
    EXPECT_EQ(a.blocking[i].name, b.blocking[i].name);
    EXPECT_EQ(a.blocking[i].api_class, b.blocking[i].api_class);
    EXPECT_EQ(a.blocking[i].count, b.blocking[i].count);
    EXPECT_EQ(a.blocking[i].host_ns, b.blocking[i].host_ns);
    EXPECT_EQ(a.blocking[i].gpu_idle_ns, b.blocking[i].gpu_idle_ns);
    EXPECT_EQ(a.blocking[i].bytes, b.blocking[i].bytes);
    EXPECT_EQ(a.blocking[i].host_memory, b.blocking[i].host_memory);
    EXPECT_EQ(a.blocking[i].copy_kind, b.blocking[i].copy_kind);
  }
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    EXPECT_EQ(a.collectives[i].type, b.collectives[i].type);
    EXPECT_EQ(a.collectives[i].kernels, b.collectives[i].kernels);
    EXPECT_EQ(a.collectives[i].busy_ns, b.collectives[i].busy_ns);
    EXPECT_EQ(a.collectives[i].exposed_ns, b.collectives[i].exposed_ns);
  }
}

void expect_same_findings(const std::vector<Finding>& a, const std::vector<Finding>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].detector + " step " + std::to_string(a[i].step));
    EXPECT_EQ(a[i].detector, b[i].detector);
    EXPECT_EQ(a[i].rank, b[i].rank);
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].severity, b[i].severity);
    EXPECT_EQ(a[i].cost_ms, b[i].cost_ms);
    EXPECT_EQ(a[i].cost_pct, b[i].cost_pct);
    EXPECT_EQ(a[i].message, b[i].message);
    EXPECT_EQ(a[i].evidence, b[i].evidence);
  }
}

class KinetoRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(KinetoRoundTrip, ImportedTraceAnalyzesIdentically) {
  const synthetic::SyntheticRun run = synthetic::make_scenario(GetParam(), {.steps = 6, .first_step = 40});
  std::ostringstream json;
  write_kineto_json(run.trace, json);
  const Trace back = import_kineto_json(json.str(), GetParam());
  EXPECT_EQ(back.events.size(), run.trace.events.size());

  const RankResult direct = analyze(run.trace);
  const RankResult imported = analyze(back);
  EXPECT_EQ(direct.segmentation.source, imported.segmentation.source);
  ASSERT_EQ(direct.steps.size(), imported.steps.size());
  for (size_t i = 0; i < direct.steps.size(); ++i) expect_same_view(direct.steps[i], imported.steps[i]);
  expect_same_findings(direct.findings, imported.findings);
  EXPECT_EQ(direct.summary.gpu_busy_pct, imported.summary.gpu_busy_pct);
}

std::vector<std::string> roundtrip_scenarios() {
  std::vector<std::string> names = synthetic::scenario_names();
  names.emplace_back("serialized_allreduce+no_marks");
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllScenarios, KinetoRoundTrip, ::testing::ValuesIn(roundtrip_scenarios()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) {
                             if (c == '+') c = '_';
                           }
                           return n;
                         });

TEST(KinetoRoundTripFile, GzippedFileGivesTheSameFindings) {
  const synthetic::SyntheticRun run = synthetic::make_scenario("item_sync", {.steps = 4});
  const auto path = std::filesystem::temp_directory_path() /
                    ("stepwatch_scenario_roundtrip_" + std::to_string(::getpid()) + ".json.gz");
  write_kineto_file(run.trace, path.string());
  const Trace back = import_kineto_file(path.string());
  std::filesystem::remove(path);
  const RankResult direct = analyze(run.trace);
  const RankResult imported = analyze(back);
  ASSERT_FALSE(direct.findings.empty());
  expect_same_findings(direct.findings, imported.findings);
}

}  // namespace
}  // namespace stepwatch::scenario
