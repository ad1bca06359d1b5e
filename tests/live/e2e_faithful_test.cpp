// End to end against the faithful fake (issue 13): the real libstepwatch.so in a process whose
// CUDA calls go through the fake libcupti's model of CUPTI 13.0 (tests/live/fake_cupti/fake_cupti.h:
// per-thread buffers, FlushAll(0) withholding any buffer with an incomplete record, thread ids per
// cuptiSetThreadIdType, completed-query sync records, memsets on the driver call's id, Kineto as a
// second client), with production defaults unless a test says otherwise. Each test names the
// problem of the issue it covers; each failed on the code before the fix it pins (the fix's commit
// says how).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace {

using namespace stepwatch::test_support;

// The model GPU's busy share of each step's window, as the driver printed it ("truth: step N
// busy_pct X"): the ground truth stepwatch's per-step breakdown is compared with.
std::map<int, double> truth_busy(const RunResult& r) {
  std::map<int, double> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    int step = 0;
    double pct = 0;
    if (std::sscanf(line.c_str(), "truth: step %d busy_pct %lf", &step, &pct) == 2) out[step] = pct;
  }
  return out;
}

// Each step's wall time, as the driver measured it ("truth: step N busy_pct X wall_ms Y").
std::vector<double> truth_wall_ms(const RunResult& r) {
  std::vector<double> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    int step = 0;
    double pct = 0, ms = 0;
    if (std::sscanf(line.c_str(), "truth: step %d busy_pct %lf wall_ms %lf", &step, &pct, &ms) == 3) out.push_back(ms);
  }
  return out;
}

// Findings above info that the ground truth does not explain. A loaded test machine preempts the
// live loop's host thread now and then, and the GPU really drains: a per-step finding on a step
// whose model GPU was busy < 95% of it is true, and so are the trend detectors (step_variance,
// epoch_boundary_stall) once any step was. individual_score (this rank's step time against its own
// best recent, the 10th percentile of recent steps) is true on a step whose measured wall time
// really was >= 1.3x the 10th percentile of the run's.
// The rest — on steps the GPU kept busy and that ran at the loop's speed — would be false.
size_t unexplained_findings(const RunResult& r, std::string* which = nullptr) {
  const std::map<int, double> truth = truth_busy(r);
  std::vector<double> wall = truth_wall_ms(r);
  std::vector<double> sorted = wall;
  std::sort(sorted.begin(), sorted.end());
  const double best_wall = sorted.empty() ? 0.0 : sorted[sorted.size() / 10];
  bool any_stall = false;
  for (const auto& [step, pct] : truth) any_stall |= pct < 95.0;
  size_t n = 0;
  for (const auto& f : r.findings) {
    if (f.value("type", "") != "finding" || f.value("severity", "") == "info") continue;
    const std::string detector = f.value("detector", "");
    const int step = f.value("step", -1);
    const auto t = truth.find(step);
    const bool stalled = t != truth.end() && t->second < 95.0;
    const bool trend = detector == "step_variance" || detector == "epoch_boundary_stall";
    const bool slow_step = detector == "individual_score" && step >= 0 && static_cast<size_t>(step) < wall.size() &&
                           wall[static_cast<size_t>(step)] >= 1.3 * best_wall;
    if (stalled || slow_step || (trend && any_stall)) continue;
    ++n;
    if (which != nullptr) {
      *which += detector + "@" + std::to_string(step) + " (wall ms around it:";
      for (int k = std::max(step - 2, 0); k <= step + 2 && static_cast<size_t>(k) < wall.size(); ++k) {
        *which += " " + std::to_string(wall[static_cast<size_t>(k)]);
      }
      *which += "; p10 " + std::to_string(best_wall) + ") " + f.dump().substr(0, 300) + "\n";
    }
  }
  return n;
}

// Per step, stepwatch's GPU busy against the model GPU's: the records were all there when judged.
void expect_busy_matches_truth(const RunResult& r, int from_step = 0) {
  const std::map<int, double> truth = truth_busy(r);
  ASSERT_FALSE(truth.empty()) << r.out;
  int compared = 0;
  for (const auto& s : r.steps) {
    if (s.value("type", "") != "step" || s.value("step", -1) < from_step) continue;
    const auto t = truth.find(s.value("step", -1));
    if (t == truth.end()) continue;
    ++compared;
    EXPECT_NEAR(s.value("gpu_busy_pct", -100.0), t->second, 2.0)
        << "step " << t->first << ": judged before its GPU records arrived, or on a mixed clock";
  }
  EXPECT_GT(compared, 0);
}

struct Judgement {
  int judged = -1, traced = -1, incomplete = -1;
  double lag_median_ms = -1, lag_p90_ms = -1, lag_max_ms = -1;
};

// "judgement: 198 of 198 traced steps judged complete (100.0%), 0 incomplete (...) ...; lag from
// step end to judged: median 397 ms, p90 529 ms, max 617 ms"
Judgement judgement_of(const std::string& log) {
  Judgement j;
  std::smatch m;
  const std::regex line(
      "judgement: ([0-9]+) of ([0-9]+) traced steps judged complete \\([0-9.]+%\\), ([0-9]+) incomplete.*"
      "median ([0-9.]+) ms, p90 ([0-9.]+) ms, max ([0-9.]+) ms");
  if (std::regex_search(log, m, line)) {
    j.judged = std::stoi(m[1]);
    j.traced = std::stoi(m[2]);
    j.incomplete = std::stoi(m[3]);
    j.lag_median_ms = std::stod(m[4]);
    j.lag_p90_ms = std::stod(m[5]);
    j.lag_max_ms = std::stod(m[6]);
  }
  return j;
}

double kernels_per_second(const std::string& out) {
  double rate = -1;
  const size_t at = out.find("sim: ");
  if (at != std::string::npos) {
    unsigned long long kernels = 0;
    double seconds = 0;
    if (std::sscanf(out.c_str() + at, "sim: %llu kernels in %lf s (%lf", &kernels, &seconds, &rate) != 3) rate = -1;
  }
  return rate;
}

DriverOptions production(const std::string& mode = "normal", const std::string& env = "") {
  DriverOptions o;
  o.mode = mode;
  o.extra_env = env;
  o.fast_flush = false;  // STEPWATCH_FLUSH_MS unset: 200 ms, 4 MiB buffers, per-thread buffers on
  o.watchdog_s = 120;
  return o;
}

// Problem 1, and the acceptance line: with production defaults a healthy GPU-bound loop (host one
// step ahead, >= 5,000 kernels/s, no per-step sync) over 200 steps has no finding above info, >= 95%
// of its traced steps judged complete, and the judgement lag reported. Before the completeness
// watermark, the steps were judged before CUPTI handed back the buffers holding their kernels: the
// GPU read as idle (false input_starvation / launch_bound / host findings).
TEST(FaithfulHealthy, TwoHundredStepsWithProductionDefaultsAreJudgedCompleteAndSilent) {
  RunResult r = run_driver("sim:healthy", 200, production());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
  EXPECT_FALSE(has_crash_report(r.log)) << r.log;
  double rate = kernels_per_second(r.out);
  if (rate < 5000.0) {
    // The loop could not issue its rate: the machine is loaded (the host thread waits for a core
    // whole scheduler slices at a time), which is not the loop this test is about. Once more.
    r = run_driver("sim:healthy", 200, production());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
    rate = kernels_per_second(r.out);
    if (rate < 5000.0) {
      GTEST_SKIP() << "the machine is too loaded for the healthy live loop: " << rate
                   << " kernels/s, twice, of the >= 5,000 the test needs";
    }
  }
  std::string which;
  EXPECT_EQ(unexplained_findings(r, &which), 0u) << which << "\n" << r.log;
  // Judged from their records: every step's GPU busy is the model GPU's (~100%: the host keeps a
  // step queued). Before the fix the same loop read 15% busy and 49 input_starvation findings.
  expect_busy_matches_truth(r);
  const Judgement j = judgement_of(r.log);
  ASSERT_GT(j.traced, 0) << r.log;
  EXPECT_GE(double(j.judged), 0.95 * double(j.traced)) << r.log;
  EXPECT_GE(j.lag_median_ms, 0.0) << r.log;
  // Within the bound (10 flush periods = 2 s): a healthy loop is never given up on.
  EXPECT_LT(j.lag_max_ms, 2000.0) << r.log;
  ::testing::Test::RecordProperty("kernels_per_s", std::to_string(static_cast<int>(rate)));
  ::testing::Test::RecordProperty("judged", std::to_string(j.judged) + "/" + std::to_string(j.traced));
  ::testing::Test::RecordProperty("lag_ms", std::to_string(j.lag_median_ms) + " median, " +
                                                std::to_string(j.lag_p90_ms) + " p90, " +
                                                std::to_string(j.lag_max_ms) + " max");
  std::printf("healthy loop: %.0f kernels/s, %d of %d traced steps judged, lag median %.0f ms p90 %.0f ms max %.0f ms\n",
              rate, j.judged, j.traced, j.lag_median_ms, j.lag_p90_ms, j.lag_max_ms);
}

// The exit comes with the last step's kernels still queued (nothing syncs at the end of the loop;
// the host is a step ahead). The final forced flush would hand their records back incomplete, lost
// (the fake's forced flush, as cupti_activity.h:7728-7731 documents; FlushAll itself does not
// synchronize, 7715-7721, and a tracer adds no sync); the exit lets them finish first, within two
// flush periods. Every launched kernel reaches the summary.
TEST(FaithfulExit, TheLastStepsQueuedKernelsAreNotLostAtExit) {
  const RunResult r = run_driver("sim:healthy", 12, production("exit_at_once"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
  unsigned long long launched = 0;
  const size_t at = r.out.find("sim: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "sim: %llu kernels", &launched), 1) << r.out;
  ASSERT_FALSE(r.run_dir.empty()) << r.log;
  const auto summary = nlohmann::json::parse(slurp(r.run_dir / "summary.json"));
  unsigned long long traced = 0;
  for (const auto& k : summary["kern_sum"]) traced += k["count"].get<unsigned long long>();
  EXPECT_EQ(summary["data_loss"].value("incomplete_record", 0ull), 0ull) << summary["data_loss"].dump();
  EXPECT_EQ(traced, launched) << r.log;
}

// A program in C/C++ (the driver: no Python in it) gets its native call site: the return address
// of the blocking call in the driver's item_sync(), named "stepwatch_e2e_driver+0x<offset>" (the
// function is local: no exported symbol to name it by) — the offset checked against the driver's
// own symbol table, as `addr2line -e stepwatch_e2e_driver 0x<offset>` would read it.
TEST(FaithfulCallSites, AProgramInCNamesItsNativeCallSite) {
  const RunResult r = run_driver("sim:item_sync", 10, production());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
  ASSERT_FALSE(r.run_dir.empty()) << r.log;
  // item_sync's address range from the symbol table (nm: "<addr> <size> t <name>").
  FILE* nm = popen((std::string("nm -C -S --defined-only ") + STEPWATCH_E2E_DRIVER).c_str(), "r");
  ASSERT_NE(nm, nullptr);
  unsigned long long lo = 0, hi = 0;
  char line[4096];
  while (fgets(line, sizeof line, nm) != nullptr) {
    unsigned long long addr = 0, size = 0;
    char type = 0;
    char name[3000] = {0};
    if (std::sscanf(line, "%llx %llx %c %2999[^\n]", &addr, &size, &type, name) == 4 &&
        std::string(name).find("e2e::(anonymous namespace)::item_sync(") != std::string::npos) {
      lo = addr;
      hi = addr + size;
    }
  }
  pclose(nm);
  ASSERT_LT(lo, hi) << "item_sync not in the driver's symbol table (nm)";
  std::istringstream findings(slurp(r.run_dir / "findings.jsonl"));
  size_t sited = 0;
  for (std::string l; std::getline(findings, l);) {
    if (l.empty()) continue;
    const auto f = nlohmann::json::parse(l);
    if (f.value("detector", "") != "hidden_sync") continue;
    ASSERT_TRUE(f["evidence"].contains("sites")) << l;
    const std::string site = f["evidence"]["sites"][0]["site"];
    const std::string prefix = "stepwatch_e2e_driver+0x";
    ASSERT_EQ(site.rfind(prefix, 0), 0u) << site;
    const unsigned long long offset = std::stoull(site.substr(prefix.size()), nullptr, 16);
    EXPECT_GE(offset, lo) << site;
    EXPECT_LT(offset, hi) << site;
    ++sited;
  }
  EXPECT_GE(sited, 5u) << r.log;
  EXPECT_NE(r.log.find("at stepwatch_e2e_driver+0x"), std::string::npos) << r.log;
}

struct FaultCase {
  const char* program;
  const char* detector;
};

class FaithfulFault : public ::testing::TestWithParam<FaultCase> {};

// The same loop with each fault produces its finding, with production defaults.
TEST_P(FaithfulFault, TheLoopWithTheFaultProducesItsFinding) {
  const FaultCase c = GetParam();
  const RunResult r = run_driver(std::string("sim:") + c.program, 14, production());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.log;
  if (std::string(c.program) == "launch_bound" && kernels_per_second(r.out) < 14'000) {
    // A live loop of 8 µs kernels 30 µs apart needs its thread on a core: on a machine this loaded
    // the host stalls for whole scheduler slices, gaps exceed 1 ms and are (rightly) host work, not
    // launch overhead. The replayed launch_bound trace (LiveFault) covers the detector.
    GTEST_SKIP() << "the machine is too loaded for a µs-scale live loop: " << kernels_per_second(r.out)
                 << " kernels/s of the ~16,000 the loop issues";
  }
  if (std::string(c.program) == "launch_bound") {
    // µs-scale: a step in which the loaded machine took the loop's core for a scheduler slice is
    // (rightly) host-bound, not launch-bound. Every judged step that ran at the loop's own speed
    // (wall within 1.25x the median step's) has the finding, but one.
    const std::vector<double> wall = truth_wall_ms(r);
    std::vector<double> sorted = wall;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_FALSE(sorted.empty()) << r.out;
    const double median = sorted[sorted.size() / 2];
    size_t at_speed = 0;
    for (size_t i = 2; i < wall.size(); ++i) at_speed += wall[i] <= 1.25 * median ? 1 : 0;
    if (at_speed < 4) GTEST_SKIP() << "the machine is too loaded: " << at_speed << " steps at the loop's speed";
    EXPECT_GE(count_detector(r, c.detector) + 1, at_speed) << r.out << r.log;
  } else {
    // 12 judged steps after the warm-up; a loaded 2-core test machine stalls the host loop now
    // and then (the replay is real time), so most, not all.
    EXPECT_GE(count_detector(r, c.detector), 7u) << r.log;
  }
  const Judgement j = judgement_of(r.log);
  EXPECT_EQ(j.incomplete, 0) << r.log;
}

INSTANTIATE_TEST_SUITE_P(Faults, FaithfulFault,
                         ::testing::Values(FaultCase{"starvation", "input_starvation"},
                                           FaultCase{"item_sync", "hidden_sync"},
                                           FaultCase{"pageable", "pageable_memcpy"},
                                           FaultCase{"exposed_comm", "exposed_collective"},
                                           FaultCase{"launch_bound", "launch_bound"},
                                           FaultCase{"allocator_churn", "allocator_churn"}),
                         [](const ::testing::TestParamInfo<FaultCase>& p) { return std::string(p.param.program); });

// Problem 2: one thread-id space. API records carry gettid() (cuptiSetThreadIdType(SYSTEM)), like
// the `nccl:all_to_all` range around the SendRecv launch: the all-to-all is recognised as one. With
// CUPTI's default (pthread_self) the two never met and the layers went unreported.
TEST(FaithfulThreads, AllToAllRangesMeetTheirLaunchesOnOneThreadId) {
  const RunResult r = run_driver("sim:exposed_a2a", 10, production());
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.out.find("thread id type 1"), std::string::npos) << r.out;
  // Every exposed all-to-all is read as layers (a thread-id mismatch leaves none). How many steps
  // fire depends on how the loop ran: on a loaded machine the host is preempted, the GPU runs
  // behind and queued compute overlaps some steps' all-to-all (exposed comm 0 there, truly).
  size_t with_layers = 0, without_layers = 0;
  for (const auto& f : r.findings) {
    if (f.value("detector", "") != "exposed_collective") continue;
    ++(f["evidence"].value("a2a_layers", 0) > 0 ? with_layers : without_layers);
  }
  EXPECT_GE(with_layers, 1u) << r.log;
  EXPECT_EQ(without_layers, 0u) << r.log;
}

// Problem 6a: completed cudaEventQuery polls (the NCCL watchdog) leave SYNCHRONIZATION records
// whatever cuptiActivityEnableAllSyncRecords(0) says; paired with their API record they are not
// waits. Before: a host-side pause with a polling thread read as 14 steps of hidden_sync.
TEST(FaithfulSync, CompletedQueriesPolledByAWatchdogAreNotHostWaits) {
  const RunResult r = run_driver("sim:host_pause", 14, production("watchdog"));
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_EQ(count_detector(r, "hidden_sync"), 0u) << r.log;
}

// Problem 6b: a memset's record carries only its driver call's id (cupti_activity.h:2455-2457);
// the GPU resuming with one after a data wait is still input starvation, and the completeness
// watermark waits for it through the driver call (not the runtime one: that would never complete).
TEST(FaithfulMemset, AMemsetJoinsItsDriverCallAndCompletesItsStep) {
  const RunResult r = run_driver("sim:memset_starvation", 14, production());
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_GE(count_detector(r, "input_starvation"), 9u) << r.log;
  EXPECT_EQ(judgement_of(r.log).incomplete, 0) << r.log;
}

// Problem 3: torch.profiler in the middle of the run (stepwatch.torch.watch pauses stepwatch
// around it). Kineto keeps its subscription without TEARDOWN_CUPTI=1: one line names the holder and
// what to do, the steps from there are timed and not judged (no GPU-idle finding from missing
// records), and stepwatch sets no TEARDOWN_CUPTI for the user.
TEST(FaithfulProfiler, WithoutTeardownOneLineNamesTheHolderAndLaterStepsAreNotJudged) {
  const RunResult r = run_driver("sim:healthy", 30, production("profiler"));
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.out.find("kineto: subscribe -> 0"), std::string::npos) << r.out;
  EXPECT_NE(r.log.find("could not resume GPU tracing: another CUPTI client holds the subscription (the client that "
                       "took CUPTI during the pause — torch.profiler's Kineto"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("TEARDOWN_CUPTI=1"), std::string::npos) << "says what the user can do";
  EXPECT_NE(r.out.find("TEARDOWN_CUPTI unset"), std::string::npos) << r.out;
  std::string which;
  EXPECT_EQ(unexplained_findings(r, &which), 0u) << which << "\n" << r.log;
  EXPECT_EQ(count_detector(r, "data_loss"), 0u) << "pause drains in-flight records before its forced flush\n" << r.log;
  for (const auto& f : r.findings) {
    if (f.value("type", "") != "finding" || f.value("severity", "") == "info") continue;
    EXPECT_LT(f.value("step", -1), 10) << "a step without GPU tracing was judged: " << f.dump();
  }
  EXPECT_NE(r.log.find("20 without GPU tracing"), std::string::npos) << r.log;
  EXPECT_NE(r.out.find("timestamp callbacks registered 1"), std::string::npos) << "Kineto's, none of ours";
}

// Problems 3 and 4: with TEARDOWN_CUPTI=1 Kineto lets go at the next API exit after it stopped;
// stepwatch's retry takes CUPTI back, finds Kineto's TSC clock still registered, converts onto the
// host clock, and the steps from there are judged, aligned with the host's step marks.
TEST(FaithfulProfiler, WithTeardownTracingResumesOnTheConvertedClock) {
  // 40 steps: the profiler over steps 13-16, then ~0.5 s for Kineto's teardown and the retry.
  const RunResult r = run_driver("sim:healthy", 40, production("profiler", "TEARDOWN_CUPTI=1"));
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.log.find("resumed: the other CUPTI client let go"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("converts its timestamps to the host clock"), std::string::npos) << r.log;
  std::string which;
  EXPECT_EQ(unexplained_findings(r, &which), 0u) << which << "\n" << r.log;
  int judged_after = 0;
  for (const auto& s : r.steps) judged_after += s.value("type", "") == "step" && s.value("step", -1) >= 17 ? 1 : 0;
  EXPECT_GE(judged_after, 8) << r.log;
  expect_busy_matches_truth(r, 17);  // misaligned clocks would read as GPU idle
}

// Problem 5: the libcupti the process has loaded (the fake, soname libcupti.so.13, loaded first as
// torch's is) is used and named; STEPWATCH_CUPTI_PATH to another file does not load a second CUPTI.
TEST(FaithfulLoading, TheLoadedLibcuptiIsUsedAndASecondCopyIsRefused) {
  const RunResult r =
      run_driver("sim:healthy", 6, production("normal", "STEPWATCH_CUPTI_PATH=" STEPWATCH_DEFAULT_CUPTI_DIR "/libcupti.so.13"));
  ASSERT_EQ(r.exit_code, 0) << r.log;
  // The job log names the CUPTI in use: the real parser's version behind the fake (the toolkit's
  // 13.0, or the release of a per-version run: live_cupti_<version>).
  void* fake = dlopen(STEPWATCH_FAKE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr);
  auto get_version = reinterpret_cast<int (*)(uint32_t*)>(dlsym(fake, "cuptiGetVersion"));
  uint32_t version = 0;
  ASSERT_TRUE(get_version != nullptr && get_version(&version) == 0);
  EXPECT_NE(r.log.find("active: stepwatch "), std::string::npos) << r.log;
  EXPECT_NE(r.log.find(std::string("; CUPTI ") + (version >= 130000 ? "13." : "12.")), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("(API " + std::to_string(version) + ") at " STEPWATCH_FAKE_CUPTI_SO
                       " (already loaded by the process): tracing"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("STEPWATCH_CUPTI_PATH=" STEPWATCH_DEFAULT_CUPTI_DIR "/libcupti.so.13 not loaded: this process "
                       "already has libcupti at " STEPWATCH_FAKE_CUPTI_SO),
            std::string::npos)
      << r.log;
}

TEST(FaithfulLoading, ALibcuptiOutsideTheTableOfKnownLayoutsIsRefusedWithOneLine) {
  const RunResult r = run_driver("sim:healthy", 4, production("cupti_13_6"));
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.log.find("not active: CUPTI 13.6 (API 130600) at " STEPWATCH_FAKE_CUPTI_SO
                       " (already loaded by the process): its record layouts are not ones stepwatch reads (known: CUPTI "
                       "12.6, 12.8-12.9, 13.0, 13.1, 13.2, 13.3, 13.4-13.5)"),
            std::string::npos)
      << r.log;
}

// Problem 6c: InitializeInjection runs inside the application's first cuInit and does CUPTI
// set-up only: the run directory and the metrics listener come later, from the analysis thread.
TEST(FaithfulInit, InitializeInjectionCreatesNoFileAndOpensNoSocket) {
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  const RunResult r = run_driver("sim:healthy", 6, production("normal", "STEPWATCH_METRICS_PORT=" + std::to_string(port)));
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_NE(r.out.find("after init: output dir absent"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("after init: metrics port closed"), std::string::npos) << r.out;
  EXPECT_NE(r.log.find("metrics: Prometheus endpoint at http://127.0.0.1:" + std::to_string(port)), std::string::npos)
      << "created later, by the analysis thread\n" << r.log;
  EXPECT_FALSE(r.run_dir.empty());
  EXPECT_GE(r.steps.size(), 2u);
}

}  // namespace
