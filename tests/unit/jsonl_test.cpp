#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stepwatch/report/jsonl.h"

namespace stepwatch {
namespace {

StepView awkward_step() {
  // Parts chosen so that rounding each to µs separately would not add up to the duration.
  StepView v;
  v.rank = 3;
  v.step = 105;
  v.start_ns = 1'000'000'123;
  v.end_ns = v.start_ns + 10'000'000;
  v.compute_ns = 3'333'333;
  v.exposed_comm_ns = 1'666'667;
  v.copy_only_ns = 1'000'400;
  v.idle[IdleCause::kInput] = 1'999'700;
  v.idle[IdleCause::kSync] = 1'000'400;
  v.idle[IdleCause::kLaunch] = 333'300;
  v.idle[IdleCause::kHost] = 333'300;
  v.idle[IdleCause::kOther] = 332'900;
  v.comm_ns = 2'000'000;
  v.busy_ns = 6'000'400;
  v.kernels = 12;
  v.syncs = 2;
  return v;
}

TEST(Jsonl, StepRecordHasTheContractFieldsAndAddsUp) {
  const StepView v = awkward_step();
  ASSERT_EQ(v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total(), v.duration_ns());
  const auto j = nlohmann::ordered_json::parse(jsonl_step(v));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"type", "rank", "step", "start_us", "dur_ms", "gpu_busy_pct", "compute_ms",
                                            "comm_ms", "exposed_comm_ms", "copy_ms", "copy_only_ms", "idle_ms",
                                            "blocked_idle_ms", "kernels", "syncs"}));
  EXPECT_EQ(j["type"], "step");
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["step"], 105);
  EXPECT_DOUBLE_EQ(j["start_us"].get<double>(), 1000000.123);
  EXPECT_DOUBLE_EQ(j["dur_ms"].get<double>(), 10.0);
  double sum_us = 0;
  for (const char* k : {"compute_ms", "exposed_comm_ms", "copy_only_ms"}) sum_us += std::round(j[k].get<double>() * 1000);
  for (auto& [k, val] : j["idle_ms"].items()) sum_us += std::round(val.get<double>() * 1000);
  EXPECT_EQ(sum_us, 10000.0);
  EXPECT_NEAR(j["compute_ms"].get<double>(), 3.333, 0.0011);
  EXPECT_DOUBLE_EQ(j["gpu_busy_pct"].get<double>(), 60.004);
}

TEST(Jsonl, FindingAndSummaryRecords) {
  Finding f;
  f.detector = "hidden_sync";
  f.rank = 1;
  f.step = 7;
  f.severity = Severity::kCritical;
  f.cost_ms = 12.34567;
  f.cost_pct = 30.0;
  f.message = "GPU idle \"quoted\"";
  f.with("calls", std::vector<std::string>{"cudaStreamSynchronize"}).with("n", int64_t{3}).with("x", 1.23456);
  const auto j = nlohmann::ordered_json::parse(jsonl_finding(f));
  EXPECT_EQ(j["severity"], "critical");
  EXPECT_DOUBLE_EQ(j["cost_ms"].get<double>(), 12.346);
  EXPECT_EQ(j["message"], "GPU idle \"quoted\"");
  EXPECT_EQ(j["evidence"]["calls"][0], "cudaStreamSynchronize");
  EXPECT_DOUBLE_EQ(j["evidence"]["x"].get<double>(), 1.235);

  RunSummary s;
  s.rank = 1;
  s.steps = 2;
  s.comm_comp_overlap_pct = std::nan("");
  s.findings["hidden_sync"] = {2, 24.5, TaxShare::kOwn, {}};
  const auto js = nlohmann::ordered_json::parse(jsonl_summary(s));
  EXPECT_TRUE(js["comm_comp_overlap_pct"].is_null());
  EXPECT_EQ(js["findings"]["hidden_sync"]["steps"], 2);

  const auto meta = nlohmann::ordered_json::parse(jsonl_meta());
  EXPECT_EQ(meta["type"], "meta");
  EXPECT_EQ(meta["schema"], 1);
  EXPECT_EQ(meta["tool"], "stepwatch");
}

}  // namespace
}  // namespace stepwatch
