#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "live/live_config.h"
#include "live_config_support.h"

namespace stepwatch::live {
namespace {


TEST(LiveConfig, DefaultsWithAnEmptyEnvironment) {
  std::vector<std::string> problems;
  const LiveConfig c = test_support::read_config({}, problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.output_dir, "./stepwatch-out");
  EXPECT_EQ(c.flush_period_ms, 200);
  EXPECT_EQ(c.warmup_steps, 2);
  EXPECT_EQ(c.sustain_min, 3);
  EXPECT_EQ(c.sustain_window, 5);
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.analysis.step_pattern, kDefaultStepPattern);
}

TEST(LiveConfig, ReadsEveryVariable) {
  std::vector<std::string> problems;
  const LiveConfig c = test_support::read_config({{"STEPWATCH_ENABLE", "1"},
                             {"STEPWATCH_OUTPUT_DIR", "/tmp/sw"},
                             {"STEPWATCH_LOG_LEVEL", "debug"},
                             {"STEPWATCH_FLUSH_MS", "150"},
                             {"STEPWATCH_WARMUP_STEPS", "5"},
                             {"STEPWATCH_RING_STEPS", "4"},
                             {"STEPWATCH_MAX_DUMPS", "2"},
                             {"STEPWATCH_MAX_DUMP_MB", "10"},
                             {"STEPWATCH_MEMORY_MB", "32"},
                             {"STEPWATCH_CUPTI_BUFFER_KB", "8192"},
                             {"STEPWATCH_CUPTI_MAX_BUFFERS", "16"},
                             {"STEPWATCH_SUSTAIN", "2/4"},
                             {"STEPWATCH_PERSIST_EVERY", "10"},
                             {"STEPWATCH_STEP_PATTERN", "^iter$"},
                             {"STEPWATCH_DATA_PATTERN", "^load$"},
                             {"STEPWATCH_MIN_PCT", "7.5"},
                             {"STEPWATCH_MIN_MS", "2"},
                             {"STEPWATCH_DISABLE", "hidden_sync, exposed_collective"},
                             {"STEPWATCH_THRESHOLDS", "input_starvation:10:3, late_rank:20:2:50"},
                             {"STEPWATCH_CUPTI_PATH", "/opt/cupti.so"},
                             {"RANK", "3"}},
                            problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(c.output_dir, "/tmp/sw");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.flush_period_ms, 150);
  EXPECT_EQ(c.warmup_steps, 5);
  EXPECT_EQ(c.analysis.warmup_steps, 5);
  EXPECT_EQ(c.ring_steps, 4);
  EXPECT_EQ(c.max_dumps, 2);
  EXPECT_EQ(c.max_dump_bytes, 10ll << 20);
  EXPECT_EQ(c.memory_cap_bytes, 32ll << 20);
  EXPECT_EQ(c.cupti_buffer_bytes, 8192ll << 10);
  EXPECT_EQ(c.cupti_max_buffers, 16);
  EXPECT_EQ(c.sustain_min, 2);
  EXPECT_EQ(c.sustain_window, 4);
  EXPECT_EQ(c.persist_every, 10);
  EXPECT_EQ(c.analysis.step_pattern, "^iter$");
  EXPECT_EQ(c.analysis.data_pattern, "^load$");
  EXPECT_DOUBLE_EQ(c.analysis.default_thresholds.min_pct, 7.5);
  EXPECT_DOUBLE_EQ(c.analysis.default_thresholds.min_ms, 2.0);
  EXPECT_FALSE(c.analysis.is_enabled("hidden_sync"));
  EXPECT_FALSE(c.analysis.is_enabled("exposed_collective"));
  EXPECT_TRUE(c.analysis.is_enabled("input_starvation"));
  EXPECT_DOUBLE_EQ(c.analysis.thresholds_for("input_starvation").min_pct, 10);
  EXPECT_DOUBLE_EQ(c.analysis.thresholds_for("input_starvation").min_ms, 3);
  EXPECT_DOUBLE_EQ(c.analysis.thresholds_for("late_rank").critical_pct, 50);
  EXPECT_DOUBLE_EQ(c.analysis.thresholds_for("hidden_sync").min_pct, 7.5);  // the common rule
  EXPECT_EQ(c.cupti_path, "/opt/cupti.so");
  EXPECT_EQ(c.rank, 3);
}

TEST(LiveConfig, BadValuesGiveOneLineEachAndTheDefault) {
  std::vector<std::string> problems;
  const LiveConfig c = test_support::read_config({{"STEPWATCH_FLUSH_MS", "abc"},
                             {"STEPWATCH_WARMUP_STEPS", "-1"},
                             {"STEPWATCH_LOG_LEVEL", "loud"},
                             {"STEPWATCH_SUSTAIN", "5/3"},
                             {"STEPWATCH_STEP_PATTERN", "(["},
                             {"STEPWATCH_MIN_PCT", "150"},
                             {"STEPWATCH_DISABLE", "no_such_detector"},
                             {"STEPWATCH_THRESHOLDS", "hidden_sync:10:2,data_loss:5:1"},
                             {"STEPWATCH_ENABLE", "maybe"},
                             {"RANK", "x"},
                             {"LOCAL_RANK", "2"}},
                            problems);
  EXPECT_EQ(problems.size(), 10u);  // one line each; data_loss refuses thresholds
  EXPECT_DOUBLE_EQ(c.analysis.thresholds_for("hidden_sync").min_pct, 10);  // the good entry stands
  for (const std::string& p : problems) EXPECT_NE(p.find('='), std::string::npos) << "names its variable: " << p;
  EXPECT_EQ(c.flush_period_ms, 200);
  EXPECT_EQ(c.warmup_steps, 2);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.sustain_min, 3);
  EXPECT_EQ(c.analysis.step_pattern, kDefaultStepPattern);
  EXPECT_DOUBLE_EQ(c.analysis.default_thresholds.min_pct, 5.0);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.rank, 2);  // RANK unusable: the next convention
  EXPECT_TRUE(std::any_of(problems.begin(), problems.end(), [](const std::string& p) {
    return p == "STEPWATCH_FLUSH_MS=abc: not an integer; using 200";
  }));
}

// Issue 17 item 7: a memory cap below the floor used to become the default 64 MB, silently
// raising what the user asked to lower.
TEST(LiveConfig, AMemoryCapBelowTheFloorUsesTheFloorAndSaysSo) {
  std::vector<std::string> problems;
  LiveConfig c = test_support::read_config({{"STEPWATCH_MEMORY_MB", "4"}}, problems);
  EXPECT_EQ(c.memory_cap_bytes, int64_t{8} << 20);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "STEPWATCH_MEMORY_MB=4: below the minimum 8; using 8");
  problems.clear();
  c = test_support::read_config({{"STEPWATCH_MEMORY_MB", "2000000"}}, problems);
  EXPECT_EQ(c.memory_cap_bytes, int64_t{1} << 40) << "above the maximum: the maximum";
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "STEPWATCH_MEMORY_MB=2000000: above the maximum 1048576; using 1048576");
  problems.clear();
  c = test_support::read_config({{"STEPWATCH_MEMORY_MB", "lots"}}, problems);
  EXPECT_EQ(c.memory_cap_bytes, int64_t{64} << 20) << "not a number: the default";
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "STEPWATCH_MEMORY_MB=lots: not an integer; using 64");
}

// LOCAL_RANK is read twice (a rank fallback, and the node-local rank): one bad value, one line.
TEST(LiveConfig, ABadLocalRankIsReportedOnce) {
  std::vector<std::string> problems;
  const LiveConfig c = test_support::read_config({{"LOCAL_RANK", "abc"}}, problems);
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.local_rank, 0);
  ASSERT_EQ(problems.size(), 1u) << problems.back();
  EXPECT_EQ(problems[0], "LOCAL_RANK=abc: not a rank number; ignored");
  // Where RANK decides the rank, LOCAL_RANK is read once (as the local rank) and said once.
  problems.clear();
  const LiveConfig d = test_support::read_config({{"RANK", "5"}, {"LOCAL_RANK", "-1"}}, problems);
  EXPECT_EQ(d.rank, 5);
  EXPECT_EQ(d.local_rank, 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("LOCAL_RANK=-1"), std::string::npos) << problems[0];
}

TEST(LiveConfig, DisableAndDocs) {
  std::vector<std::string> problems;
  EXPECT_FALSE(test_support::read_config({{"STEPWATCH_ENABLE", "0"}}, problems).enabled);
  bool has_output_dir = false;
  for (const EnvVarDoc& d : documented_env_vars()) has_output_dir |= std::string(d.name) == "STEPWATCH_OUTPUT_DIR";
  EXPECT_TRUE(has_output_dir);
}

}  // namespace
}  // namespace stepwatch::live
