// End to end: the real libstepwatch.so loaded into a simulated training process (the e2e
// driver) with the fake libcupti; a loop per fault; assertions on the job log, findings.jsonl,
// steps.jsonl, the flight-recorder dump read back by `stepwatch analyze`, and the exit summary.
#include <chrono>

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <csignal>
#include <cstdio>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace {

using namespace stepwatch::test_support;
namespace fs = std::filesystem;

struct FaultCase {
  const char* scenario;
  const char* detector;
};

class LiveFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(LiveFault, FindingInTheLogTheFilesAndTheDump) {
  const FaultCase c = GetParam();
  const RunResult r = run_driver(c.scenario, 8);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.log.find("[stepwatch][rank 0] active: stepwatch"), std::string::npos) << r.log;
  // The log line, in the documented format, once the pattern is sustained (3 of 5 judged steps).
  const std::regex line("\\[stepwatch\\]\\[rank 0\\]\\[step [0-9]+\\] " + std::string(c.detector) + ": .*Fix: ");
  EXPECT_TRUE(std::regex_search(r.log, line)) << r.log;
  ASSERT_FALSE(r.run_dir.empty());
  ASSERT_FALSE(r.steps.empty());
  EXPECT_EQ(r.steps.front().value("type", ""), "meta");
  EXPECT_EQ(r.steps.size(), 1u + 8u) << "meta + one record per step";
  // Warm-up (2 steps) not judged: 6 judged steps, the fault on (nearly) all of them.
  EXPECT_GE(count_detector(r, c.detector), 5u) << r.log;
  for (const auto& f : r.findings) {
    if (f.value("type", "") == "finding") {
      EXPECT_GE(f.value("step", -1), 2) << f.dump();
    }
  }
  // Exit summary in the log and as files.
  EXPECT_NE(r.log.find("exit summary: 8 steps analyzed"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("kern_sum"), std::string::npos);
  EXPECT_TRUE(fs::exists(r.run_dir / "summary.txt"));
  const auto summary = nlohmann::json::parse(slurp(r.run_dir / "summary.json"));
  EXPECT_EQ(summary["steps"], 8);
  EXPECT_GE(summary["findings"][c.detector]["steps"].get<int>(), 5);

  // The flight-recorder dump reads back through `stepwatch analyze` with the same finding.
  fs::path dump;
  if (fs::exists(r.run_dir / "dumps")) {
    // One dump per detector that fired: this detector's.
    for (const auto& e : fs::directory_iterator(r.run_dir / "dumps")) {
      if (e.path().filename().string().rfind(std::string(c.detector) + "-step", 0) == 0) dump = e.path();
    }
  }
  ASSERT_FALSE(dump.empty()) << "no dump in " << r.run_dir;
  EXPECT_NE(dump.filename().string().find(c.detector), std::string::npos);
  const fs::path analyzed = r.run_dir / "dump.jsonl";
  const std::string cmd = std::string(STEPWATCH_CLI) + " analyze --json " + analyzed.string() + " " + dump.string() +
                          " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  RunResult offline;
  offline.findings = read_jsonl(analyzed);
  size_t offline_steps = 0;
  for (const auto& x : offline.findings) offline_steps += x.value("type", "") == "step" ? 1 : 0;
  EXPECT_GE(offline_steps, 2u);
  EXPECT_GE(count_detector(offline, c.detector), offline_steps - 1) << slurp(analyzed);
}

INSTANTIATE_TEST_SUITE_P(Faults, LiveFault,
                         ::testing::Values(FaultCase{"slow_dataloader", "input_starvation"},
                                           FaultCase{"item_sync", "hidden_sync"},
                                           FaultCase{"serialized_allreduce", "exposed_collective"},
                                           FaultCase{"launch_bound", "launch_bound"},
                                           FaultCase{"allocator_churn", "allocator_churn"}),
                         [](const ::testing::TestParamInfo<FaultCase>& p) { return std::string(p.param.scenario); });

TEST(LiveTrend, CheckpointStallIsReportedOnceItsPeriodIsEstablished) {
  const RunResult r = run_driver("checkpoint", 13);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_GE(count_detector(r, "checkpoint_stall"), 1u) << r.log;
  // An established pattern is in the log at once (it never recurs on 3 of 5 steps).
  const std::regex line("\\[stepwatch\\]\\[rank 0\\]\\[step [0-9]+\\] checkpoint_stall: .*Fix: ");
  EXPECT_TRUE(std::regex_search(r.log, line)) << r.log;
}

TEST(LiveHealthy, GpuBoundLoopStaysSilent) {
  const RunResult r = run_driver("gpu_bound", 8);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_EQ(r.log.find("][step "), std::string::npos) << r.log;
  size_t findings = 0;
  for (const auto& f : r.findings) findings += f.value("type", "") == "finding" ? 1 : 0;
  EXPECT_EQ(findings, 0u);
  EXPECT_NE(r.log.find("findings: none"), std::string::npos) << r.log;
}

TEST(LiveErrors, AnotherSubscriberMakesStepwatchStandDown) {
  const RunResult r = run_driver("item_sync", 4, "conflict");
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.log.find("not active"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("Nsight Systems"), std::string::npos) << r.log;
  EXPECT_EQ(count_detector(r, "hidden_sync"), 0u);  // nothing GPU-based judged without GPU data
}

TEST(LiveErrors, PoolExhaustedIsReportedAsDataLoss) {
  const RunResult r = run_driver("gpu_bound", 4, "pool", "STEPWATCH_CUPTI_MAX_BUFFERS=4");
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_GE(count_detector(r, "data_loss"), 1u) << r.log;
  EXPECT_NE(r.log.find("data_loss"), std::string::npos);
  EXPECT_NE(r.log.find("buffer_pool_exhausted"), std::string::npos) << r.log;
}

TEST(LiveErrors, FatalErrorCallbackNeverCrashes) {
  const RunResult r = run_driver("item_sync", 6, "fatal");
  EXPECT_EQ(r.exit_code, 0) << r.log;
}

TEST(LiveErrors, ForkedChildIsDisabledAndParentCarriesOn) {
  const RunResult r = run_driver("item_sync", 6, "fork");
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.out.find("fork child exit 0"), std::string::npos) << r.out << r.log;
  EXPECT_NE(r.log.find("exit summary: 6 steps analyzed"), std::string::npos) << r.log;
}

TEST(LiveErrors, UnderscoreExitLeavesValidFiles) {
  // _exit skips every join by definition: under ThreadSanitizer, threads of ours that already
  // finished (a sampler that gave up) would read as "leaked"; that is the mode under test, not a bug.
  const std::string tsan_options = std::getenv("TSAN_OPTIONS") ? std::getenv("TSAN_OPTIONS") : "";
  const RunResult r = run_driver("serialized_allreduce", 6, "_exit",
                                 "TSAN_OPTIONS='" + tsan_options + " report_thread_leaks=0'");
  ASSERT_EQ(r.exit_code, 0) << r.log;
  // No exit summary (no atexit), but what was written is complete JSONL.
  EXPECT_GE(count_detector(r, "exposed_collective"), 1u);
}

// torchrun/slurm end jobs with SIGTERM. stepwatch installs no signal handler: with the default
// disposition the process dies by the signal at once, even with CUPTI's flush hung under our
// stepwatch_flush; there is no atexit then, and what was written before is complete JSONL.
TEST(LiveSignals, SigtermDuringAFlushEndsTheProcessAtOnceWithValidFiles) {
  const RunResult r = run_driver("item_sync", 8, "sigterm", "", /*watchdog_s=*/30);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out << r.log;  // not 124: the watchdog did not fire
  EXPECT_NE(r.out.find("sigterm: flushing"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("survived"), std::string::npos) << r.out;
  EXPECT_FALSE(has_crash_report(r.log)) << r.log;
  EXPECT_EQ(r.log.find("exit summary"), std::string::npos) << "no atexit under the default disposition";
  ASSERT_FALSE(r.run_dir.empty()) << r.log;
  EXPECT_TRUE(torn_lines(r.run_dir / "steps.jsonl").empty());
  EXPECT_TRUE(torn_lines(r.run_dir / "findings.jsonl").empty());
  EXPECT_GE(r.steps.size(), 2u) << "meta + the steps judged before the signal";
}

// A host handler that calls exit() (C++ launchers do): stepwatch's atexit path runs while CUPTI's
// flush is still hung — bounded (the adapter abandons the stuck flush after 2 s), then the exit
// summary for the steps that have data, and the buffer CUPTI never returned is data_loss.
TEST(LiveSignals, HostSigtermHandlerCallingExitGetsTheSummaryAndTheLoss) {
  const RunResult r = run_driver("item_sync", 8, "sigterm_exit", "", /*watchdog_s=*/30);
  EXPECT_EQ(r.exit_code, 143) << r.out << r.log;
  EXPECT_FALSE(has_crash_report(r.log)) << r.log;
  EXPECT_NE(r.log.find("exit summary: 4 steps analyzed, 2 judged"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("still inside CUPTI at exit"), std::string::npos) << r.log;
  ASSERT_FALSE(r.run_dir.empty());
  EXPECT_TRUE(torn_lines(r.run_dir / "steps.jsonl").empty());
  EXPECT_TRUE(torn_lines(r.run_dir / "findings.jsonl").empty());
  // The findings where data is present: the judged steps (2 after the warm-up) have their hidden sync.
  EXPECT_GE(count_detector(r, "hidden_sync"), 1u) << r.log;
  bool loss_reported = false;
  for (const auto& f : r.findings) {
    if (f.value("detector", "") == "data_loss") {
      loss_reported = loss_reported || f["evidence"].value("buffers_abandoned", 0) >= 1;
    }
  }
  EXPECT_TRUE(loss_reported) << slurp(r.run_dir / "findings.jsonl");
  const auto summary = nlohmann::json::parse(slurp(r.run_dir / "summary.json"));
  EXPECT_EQ(summary["steps"], 4);
  EXPECT_GE(summary["data_loss"]["buffers"].value("buffers_abandoned", 0), 1);
}

// 64 host threads launching at once through the callback path and activity buffers, with a pool of
// 8 buffers of 64 KiB: refused buffers lose records (CUPTI counts them), full queues lose events
// (we count them). Nothing crashes or hangs, the loop's findings stand, and the books balance:
// records produced = records analyzed + records reported dropped.
TEST(LiveStorm, SixtyFourThreadsLaunchingAtOnceLoseOnlyWhatIsReported) {
  const RunResult r = run_driver("item_sync", 6, "storm", "STEPWATCH_CUPTI_MAX_BUFFERS=8 STEPWATCH_CUPTI_BUFFER_KB=64");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
  EXPECT_FALSE(has_crash_report(r.log)) << r.log;
  unsigned long long produced = 0, dropped_by_cupti = 0, refused = 0;
  const size_t at = r.out.find("storm: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "storm: produced %llu dropped_by_cupti %llu refused_requests %llu",
                        &produced, &dropped_by_cupti, &refused),
            3)
      << r.out;
  EXPECT_EQ(produced, 64u * 1500u);
  EXPECT_GT(dropped_by_cupti, 0u) << "a pool of 8 for 64 threads must refuse some";

  ASSERT_FALSE(r.run_dir.empty());
  const auto summary = nlohmann::json::parse(slurp(r.run_dir / "summary.json"));
  unsigned long long analyzed = 0;
  for (const auto& k : summary["kern_sum"]) {
    if (k.value("name", "") == "storm_kernel") analyzed = k["count"].get<unsigned long long>();
  }
  // The run summary's schema: lost records and lost activity buffers by reason (zero counts left out).
  const auto& loss = summary["data_loss"]["records"];
  const auto cupti_dropped = loss.value("cupti_dropped", 0ULL);
  const auto queue_full = loss.value("queue_full", 0ULL);
  EXPECT_EQ(cupti_dropped, dropped_by_cupti);
  EXPECT_EQ(summary["data_loss"]["buffers"].value("buffer_pool_exhausted", 0ULL), refused);
  EXPECT_EQ(loss.value("retention_cap", 0ULL), 0u);
  EXPECT_EQ(produced, analyzed + cupti_dropped + queue_full)
      << "analyzed " << analyzed << ", cupti_dropped " << cupti_dropped << ", queue_full " << queue_full
      << "; data_loss " << loss.dump() << "\n" << r.log;
  // The data_loss finding's totals are the summary's: records, and (separately, in buffers, so
  // that records are not counted twice) the refused buffers.
  long long lost_total = -1;
  long long buffers_total = -1;
  for (const auto& f : r.findings) {
    if (f.value("detector", "") != "data_loss") continue;
    lost_total = f["evidence"].value("lost_total", -1LL);
    buffers_total = f["evidence"].value("buffers_total", -1LL);
  }
  unsigned long long summary_records = 0;
  for (const auto& [kind, n] : loss.items()) summary_records += n.get<unsigned long long>();
  EXPECT_EQ(lost_total, static_cast<long long>(summary_records));
  EXPECT_EQ(lost_total, static_cast<long long>(cupti_dropped + queue_full));
  EXPECT_EQ(buffers_total, static_cast<long long>(refused));
  // The training loop before the storm is judged as without it: 4 judged steps, (nearly) each a
  // hidden sync, as in LiveFault.
  EXPECT_GE(count_detector(r, "hidden_sync"), 3u) << r.log;
  EXPECT_NE(r.log.find("exit summary: 6 steps analyzed"), std::string::npos) << r.log;
}

// A starved exit (issue: steps and the whole summary vanished when the analysis thread had no CPU
// at exit): more steps pending than the exit bound allows. The exit summary is written anyway, in
// time, every step is accounted for (analyzed or counted as not judged), and the steps marked in a
// burst all reach the pipeline (the C API's step events do not go through the droppable rings).
TEST(LiveExit, MoreStepsThanTheExitBoundAllowsAreCountedAndTheSummaryIsWritten) {
  const auto begin = std::chrono::steady_clock::now();
  const RunResult r = run_driver("item_sync", 8, "exit_burst",
                                 "STEPWATCH_EXIT_TIMEOUT_MS=200 STEPWATCH_FLUSH_MS=5000 STEPWATCH_LOG_LEVEL=info");
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
  EXPECT_FALSE(has_crash_report(r.log)) << r.log;
  EXPECT_NE(r.out.find("exit_burst: 30000 steps marked"), std::string::npos) << r.out;
  EXPECT_NE(r.log.find("more steps not judged: the exit time bound was reached first"), std::string::npos) << r.log;
  ASSERT_FALSE(r.run_dir.empty()) << r.log;
  const auto summary = nlohmann::json::parse(slurp(r.run_dir / "summary.json"));
  const int64_t analyzed = summary["steps"].get<int64_t>();
  const int64_t skipped = summary["skipped_steps"].get<int64_t>();
  EXPECT_GT(skipped, 0) << summary.dump();
  EXPECT_EQ(analyzed + skipped, 8 + 30000) << summary.dump();
  EXPECT_EQ(summary["data_loss"]["records"].value("queue_full", 0), 0) << summary.dump();
  EXPECT_TRUE(torn_lines(r.run_dir / "steps.jsonl").empty());
  // The loop itself takes about a second; the exit adds at most the bound (plus process teardown).
  EXPECT_LT(wall_s, 20.0);
}

// A job that marks no steps: the live pipeline infers them from the loop (as the offline analyzer
// does) and judges them — a healthy GPU-bound loop, so nothing above info — and no_step_marks
// says how they were found.
TEST(LiveUnmarked, StepsAreInferredAndJudged) {
  const RunResult r = run_driver("gpu_bound", 16, "unmarked");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
  ASSERT_FALSE(r.run_dir.empty()) << r.log;
  const auto summary = nlohmann::json::parse(slurp(r.run_dir / "summary.json"));
  EXPECT_GE(summary["judged_steps"].get<int>(), 8) << summary.dump();
  EXPECT_GE(r.steps.size(), 10u);
  bool inferred = false;
  for (const auto& f : r.findings) {
    if (f.value("type", "") != "finding") continue;
    EXPECT_EQ(f.value("severity", ""), "info") << f.dump();
    if (f.value("detector", "") == "no_step_marks") {
      inferred = f["evidence"].value("inferred_from", "") == "kernel_period";
      EXPECT_NE(f.value("message", "").find("inferred"), std::string::npos) << f.dump();
    }
  }
  EXPECT_TRUE(inferred) << slurp(r.run_dir / "findings.jsonl") << r.log;
}

TEST(LiveErrors, BadConfigValuesGiveOneLineAndDefaults) {
  const RunResult r = run_driver("gpu_bound", 4, "normal", "STEPWATCH_FLUSH_MS=fast STEPWATCH_WARMUP_STEPS=-3");
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.log.find("STEPWATCH_FLUSH_MS=fast: not an integer; using 200"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("STEPWATCH_WARMUP_STEPS=-3"), std::string::npos) << r.log;
}

}  // namespace
