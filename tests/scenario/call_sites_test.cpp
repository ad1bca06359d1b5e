// Where in the program: a trace recorded with torch.profiler(with_stack=True) names the line
// behind each hidden sync (the generator's item_sync_stack: three `.item()` per step made by
// log_metrics() in train.py), read from the events and from the Kineto file written of them.
#include <gtest/gtest.h>

#include <sstream>

#include "scenario_support.h"
#include "stepwatch/export/kineto_writer.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch::scenario {
namespace {

const std::vector<SiteEvidence>* sites_of(const Finding& f) {
  for (const auto& [key, value] : f.evidence) {
    if (key == "sites") return std::get_if<std::vector<SiteEvidence>>(&value);
  }
  return nullptr;
}

void expect_log_metrics_site(const RankResult& result, size_t steps) {
  size_t flagged = 0;
  for (const Finding& f : result.findings) {
    if (f.detector != "hidden_sync") continue;
    ++flagged;
    const auto* sites = sites_of(f);
    ASSERT_NE(sites, nullptr) << f.message;
    ASSERT_FALSE(sites->empty());
    EXPECT_EQ(sites->front().site, "log_metrics() defined at train.py:40");
    EXPECT_EQ(sites->front().call, "Tensor.item()");
    // Three .item() per step: two a pageable read-back copy (+ a sync that returns at once), one a
    // pinned copy + sync — five blocking calls.
    EXPECT_EQ(sites->front().calls, 5);
    EXPECT_EQ(sites->size(), 1u) << "one site made them all";
    EXPECT_GT(sites->front().blocked_ms, 0.5 * f.cost_ms) << "the site carries the drain it caused";
    EXPECT_NE(f.message.find("from `Tensor.item()` in log_metrics() defined at train.py:40 (5 blocking calls, "),
              std::string::npos)
        << f.message;
  }
  EXPECT_GE(flagged, steps - 1);
}

TEST(CallSites, WithStackTracesNameTheLineBehindEachHiddenSync) {
  const AnalyzedRun a = analyze_scenario("item_sync_stack", {.steps = 6});
  expect_log_metrics_site(a.result, 6);
}

TEST(CallSites, TheKinetoFileOfTheRunNamesTheSameSites) {
  const synthetic::SyntheticRun run = synthetic::make_scenario("item_sync_stack", {.steps = 6});
  std::ostringstream json;
  write_kineto_json(run.trace, json);
  const Trace back = import_kineto_json(json.str(), "item_sync_stack.json");
  size_t frames = 0;
  for (const Event& e : back.events) frames += e.kind == EventKind::kPythonFrame;
  EXPECT_EQ(frames, 6u * (1 + 2 * 3));  // train_step, and per .item() log_metrics + the built-in
  expect_log_metrics_site(analyze(back), 6);
}

// Host-bound gaps: the program's own function the host was in (the innermost user frame over
// the gaps' host part), named next to the range that covers it.
TEST(CallSites, HostBoundGapsNameThePythonFunctionTheHostWasIn) {
  synthetic::WorkloadConfig c = synthetic::scenario_config("host_bound", {.steps = 6});
  c.python_stack = true;
  const RankResult r = analyze(synthetic::generate(c).trace);
  size_t flagged = 0;
  for (const Finding& f : r.findings) {
    if (f.detector != "host_bound") continue;
    ++flagged;
    std::vector<std::string> names;
    for (const auto& [key, value] : f.evidence) {
      if (key == "python_functions") names = std::get<std::vector<std::string>>(value);
    }
    ASSERT_FALSE(names.empty()) << f.message;
    EXPECT_EQ(names.front(), "sync_gradients() defined at train.py:61");
    EXPECT_NE(f.message.find("; in Python: sync_gradients() defined at train.py:61 "), std::string::npos) << f.message;
  }
  EXPECT_GE(flagged, 5u);
  // Without frames: no Python evidence.
  for (const Finding& f : analyze_scenario("host_bound", {.steps = 4}).findings("host_bound")) {
    for (const auto& [key, value] : f.evidence) EXPECT_NE(key, "python_functions");
  }
}

TEST(CallSites, WithoutFramesThereAreNoSites) {
  const AnalyzedRun a = analyze_scenario("item_sync", {.steps = 6});
  ASSERT_FALSE(a.findings("hidden_sync").empty());
  for (const Finding& f : a.findings("hidden_sync")) {
    EXPECT_EQ(sites_of(f), nullptr);
    EXPECT_EQ(f.message.find(" defined at "), std::string::npos) << f.message;
  }
}

}  // namespace
}  // namespace stepwatch::scenario
