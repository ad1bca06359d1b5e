// The job log: sustained rule, "persists", "cleared", rate-limited whole-run findings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/logger.h>

#include "live/outputs/log_reporter.h"

namespace stepwatch::live {
namespace {

struct LogFixture {
  LogFixture() {
    path = (std::filesystem::temp_directory_path() / ("sw_log_" + std::to_string(::getpid()) + "_" +
                                                      std::to_string(counter++) + ".txt"))
               .string();
    std::filesystem::remove(path);
    config.rank = 1;
    config.sustain_min = 3;
    config.sustain_window = 5;
    config.persist_every = 4;
    logger = make_job_logger("info", path);
    log = std::make_unique<LogReporter>(logger, config);
  }
  ~LogFixture() { std::filesystem::remove(path); }
  std::vector<std::string> lines() {
    logger->flush();
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }
  void step(int64_t n, bool fires) {
    StepView v;
    v.step = n;
    v.rank = 1;
    v.end_ns = 100'000'000;
    std::vector<Finding> f;
    if (fires) {
      Finding x;
      x.detector = "hidden_sync";
      x.rank = 1;
      x.step = n;
      x.cost_ms = 10;
      x.cost_pct = 10;
      x.message = "GPU idle 10.0 ms";
      f.push_back(x);
    }
    log->on_step(v, true, f);
  }
  static inline int counter = 0;
  std::string path;
  LiveConfig config;
  std::shared_ptr<spdlog::logger> logger;
  std::unique_ptr<LogReporter> log;
};

TEST(LogReporter, ReportsOnceSustainedThenPersistsThenClears) {
  LogFixture fx;
  fx.step(1, true);
  fx.step(2, false);
  fx.step(3, true);
  EXPECT_TRUE(fx.lines().empty());  // 2 of 3: not yet sustained
  fx.step(4, true);                 // 3 of the last 4
  auto lines = fx.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[stepwatch][rank 1][step 4] hidden_sync: GPU idle 10.0 ms");
  for (int64_t s = 5; s <= 8; ++s) fx.step(s, true);  // 4 more judged steps: one "persists" line
  lines = fx.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("[step 8] hidden_sync persists: 4 of the last 4 steps, total cost 70.0 ms since step 4"),
            std::string::npos)
      << lines[1];
  for (int64_t s = 9; s <= 13; ++s) fx.step(s, false);  // a whole window without it
  lines = fx.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find("[step 13] hidden_sync cleared: not seen in the last 5 steps (was on 7 steps since step 4"),
            std::string::npos)
      << lines[2];
}

TEST(LogReporter, IsolatedFiringsStayOutOfTheLog) {
  LogFixture fx;
  for (int64_t s = 1; s <= 30; ++s) fx.step(s, s % 4 == 0);  // 1 in 4: never 3 of 5
  EXPECT_TRUE(fx.lines().empty());
}

TEST(LogReporter, WholeRunFindingsAreRateLimited) {
  LogFixture fx;
  Finding loss;
  loss.detector = "data_loss";
  loss.rank = 1;
  loss.step = 3;
  loss.message = "12 trace records lost";
  fx.log->on_run_finding(loss);
  fx.log->on_run_finding(loss);  // within persist_every judged steps: quiet
  EXPECT_EQ(fx.lines().size(), 1u);
  for (int64_t s = 1; s <= 4; ++s) fx.step(s, false);
  fx.log->on_run_finding(loss);
  EXPECT_EQ(fx.lines().size(), 2u);
}

}  // namespace
}  // namespace stepwatch::live

namespace stepwatch::live {
namespace {

TEST(LogReporter, EstablishedPatternsAreReportedAtOnce) {
  LogFixture fx;
  StepView v;
  v.step = 9;
  v.rank = 1;
  v.end_ns = 100'000'000;
  Finding f;
  f.detector = "checkpoint_stall";
  f.rank = 1;
  f.step = 9;
  f.message = "every 4 steps a 420 ms D2H burst";
  f.established = true;
  std::vector<Finding> fs{f};
  fx.log->on_step(v, true, fs);
  auto lines = fx.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[stepwatch][rank 1][step 9] checkpoint_stall: every 4 steps a 420 ms D2H burst");
  v.step = 13;
  fs[0].step = 13;
  fx.log->on_step(v, true, fs);  // again within persist_every steps: quiet
  EXPECT_EQ(fx.lines().size(), 1u);
}

}  // namespace
}  // namespace stepwatch::live
