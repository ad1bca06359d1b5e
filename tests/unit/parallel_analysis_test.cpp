// The offline analysis's threads (core/parallel.h): every share done once, a share's exception
// rethrown on the caller's thread after the others joined, and sort_by_start giving the same
// stable order on two threads as on one. The verdicts at two threads against one are compared on
// every scenario (tests/scenario/step_batches_test.cpp) and corpus trace (corpus_batches_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <sstream>
#include <string>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/parallel.h"
#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/export/kineto_writer.h"
#include "stepwatch/import/kineto_importer.h"
#include "stepwatch/report/jsonl.h"
#include "synthetic/workload.h"

namespace stepwatch {
namespace {

TEST(Parallel, EveryIndexRunsExactlyOnceAtAnyThreadCount) {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{1000}}) {
      std::vector<std::atomic<int>> runs(n);
      parallel::for_each_index(n, threads, [&](size_t i) { ++runs[i]; });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "threads " << threads << " n " << n << " i " << i;
    }
  }
}

TEST(Parallel, AShareThatThrowsIsRethrownAfterTheOthersJoined) {
  std::atomic<int> finished{0};
  EXPECT_THROW(parallel::for_each_index(64, 2,
                                        [&](size_t i) {
                                          if (i == 3) throw std::runtime_error("share 3");
                                          ++finished;
                                        }),
               std::runtime_error);
  // Whatever ran before the failure was stopped finished; nothing runs after the call returned.
  const int seen = finished.load();
  EXPECT_LE(seen, 63);
  EXPECT_EQ(finished.load(), seen);
}

TEST(Parallel, BothRunsEachOnce) {
  int a = 0, b = 0;
  parallel::both(2, [&] { ++a; }, [&] { ++b; });
  parallel::both(1, [&] { ++a; }, [&] { ++b; });
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 2);
}

// Many ties (starts drawn from a small range): the order of equal starts must be the input's.
std::vector<Event> tied_events(size_t n) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> start(0, static_cast<int64_t>(n / 8));
  std::vector<Event> events(n);
  for (size_t i = 0; i < n; ++i) {
    events[i].start_ns = start(rng);
    events[i].end_ns = events[i].start_ns + 1;
    events[i].correlation = i;  // the input position, to see the order of ties
  }
  return events;
}

TEST(SortByStart, TwoThreadsGiveTheStableOrderOfOne) {
  // Above the two-thread minimum (32Ki keys), and below it.
  for (size_t n : {size_t{200000}, size_t{5000}}) {
    const std::vector<Event> input = tied_events(n);
    std::vector<Event> expected = input;
    std::stable_sort(expected.begin(), expected.end(),
                     [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
    for (unsigned threads : {1u, 2u}) {
      std::vector<Event> events = input;
      sort_by_start(events, threads);
      ASSERT_EQ(events.size(), expected.size());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(events[i].start_ns, expected[i].start_ns) << "n " << n << " threads " << threads << " at " << i;
        ASSERT_EQ(events[i].correlation, expected[i].correlation) << "n " << n << " threads " << threads << " at " << i;
      }
    }
  }
}

// The radix order and the compared one agree where they meet: starts that fit the 64-bit key with
// their positions, starts spread over the whole int64 range (compared), negative starts, ties.
TEST(SortByStart, EveryKeyRangeGivesTheStableOrder) {
  const auto check = [](std::vector<Event> events, const char* what) {
    std::vector<Event> expected = events;
    std::stable_sort(expected.begin(), expected.end(),
                     [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
    sort_by_start(events);
    for (size_t i = 0; i < events.size(); ++i) {
      ASSERT_EQ(events[i].start_ns, expected[i].start_ns) << what << " at " << i;
      ASSERT_EQ(events[i].correlation, expected[i].correlation) << what << " at " << i;
    }
  };
  const auto make = [](size_t n, auto start_of) {
    std::vector<Event> events(n);
    for (size_t i = 0; i < n; ++i) {
      events[i].start_ns = start_of(i);
      events[i].end_ns = events[i].start_ns;
      events[i].correlation = i;
    }
    return events;
  };
  uint64_t x = 88172645463325252ull;  // xorshift: a fixed, scrambled order
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  check(make(100000, [&](size_t) { return int64_t{1712195495519689047} + static_cast<int64_t>(next() % 20'000'000'000ull); }),
        "seconds of epoch ns");
  check(make(100000, [&](size_t) { return static_cast<int64_t>(next() % 64); }), "many ties");
  check(make(50000, [&](size_t) { return static_cast<int64_t>(next()); }), "the whole int64 range (compared)");
  check(make(50000, [&](size_t) { return -static_cast<int64_t>(next() % 1'000'000'000ull); }), "negative starts");
  check(make(3, [](size_t i) { return int64_t{2} - static_cast<int64_t>(i); }), "three");
  // Span and positions at the edge of 64 bits: 2^47 ns with 2^17 positions fits exactly.
  check(make(size_t{1} << 17, [&](size_t i) {
          return i == 0 ? (int64_t{1} << 47) - 1 : static_cast<int64_t>(next() % (uint64_t{1} << 47));
        }),
        "exactly 64 bits of key");
}

std::vector<std::string> report_lines(const Trace& input, unsigned threads) {
  Trace trace = input;
  const AnalysisConfig config;
  const RankResult r = analyze_rank(trace, 0, config, make_detectors(config), StepDetail::kFull, kOfflineBatchEvents,
                                    threads);
  std::vector<std::string> lines;
  for (const StepView& v : r.steps) lines.push_back(jsonl_step(v));
  for (const Finding& f : r.findings) lines.push_back(jsonl_finding(f));
  lines.push_back(jsonl_summary(r.summary));
  return lines;
}

// The whole offline analysis on two threads (under ThreadSanitizer too: tests/tsan/run_tsan.sh)
// reports what it reports on one.
TEST(ParallelAnalysis, TwoThreadsReportWhatOneDoes) {
  for (const char* scenario : {"item_sync", "slow_dataloader", "ddp_overlap+no_marks"}) {
    synthetic::ScenarioOptions opts;
    opts.steps = 12;
    const synthetic::SyntheticRun run = synthetic::make_scenario(scenario, opts);
    EXPECT_EQ(report_lines(run.trace, 1), report_lines(run.trace, 2)) << scenario;
  }
}

// A file is imported with the reader thread indexing each chunk, and walking it too when this
// thread is behind: whichever thread walked, the events are those of the one-thread import of the
// same text (which never walks ahead), in the same order.
TEST(ParallelAnalysis, AFileImportedOnTwoThreadsHasTheEventsOfTheInlineImport) {
  synthetic::ScenarioOptions opts;
  opts.steps = 60;  // several MB of JSON: more chunks than are in flight at once
  const synthetic::SyntheticRun run = synthetic::make_scenario("launch_bound", opts);
  std::ostringstream json;
  write_kineto_json(run.trace, json);
  const std::string text = json.str();
  ASSERT_GT(text.size(), size_t{3} << 20) << "too few chunks to overlap";
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "stepwatch_parallel_import.json";
  write_kineto_file(run.trace, path.string());
  const Trace from_file = import_kineto_file(path.string());
  const Trace inline_import = import_kineto_json(text, "memory");
  std::filesystem::remove(path);
  ASSERT_EQ(from_file.events.size(), inline_import.events.size());
  for (size_t i = 0; i < from_file.events.size(); ++i) {
    const Event& a = from_file.events[i];
    const Event& b = inline_import.events[i];
    ASSERT_EQ(a.start_ns, b.start_ns) << i;
    ASSERT_EQ(a.end_ns, b.end_ns) << i;
    ASSERT_EQ(a.kind, b.kind) << i;
    ASSERT_EQ(from_file.names.view(a.name), inline_import.names.view(b.name)) << i;
    ASSERT_EQ(a.correlation, b.correlation) << i;
    ASSERT_EQ(a.thread, b.thread) << i;
    ASSERT_EQ(a.stream, b.stream) << i;
  }
}

}  // namespace
}  // namespace stepwatch
