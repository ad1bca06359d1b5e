// What the host was doing while the GPU sat idle: rule 2 amended (data-wait evidence inside a
// drained gap is input), the host part's innermost activity (HostActivityIndex), and the launch
// lag — on hand-built timelines whose answer is known exactly.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

#include "core/host_activity.h"

#include "stepwatch/core/timeline.h"
#include "trace_builder.h"

namespace stepwatch {
namespace {

using testing::TraceBuilder;
using testing::us;

StepView analyze(Trace& t, double start_us, double end_us) {
  static const AnalysisConfig config;
  const Timeline tl(t.events, t.names, config);
  return analyze_step(StepWindow{us(start_us), us(end_us), 1, StepSource::kRange}, tl, 0);
}

void expect_partition(const StepView& v) {
  EXPECT_EQ(v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total(), v.duration_ns());
}

TEST(Rule2Amended, DataWaitInsideADrainedGapIsInput) {
  // A tiny DtoH copy (.cpu()) ends the iteration and drains the queue; then the single-process
  // DataLoader runs for 140 ms before the next iteration launches.
  TraceBuilder b;
  b.kernel(0, 1'000);
  b.api(500, 1'010, "cudaMemcpy", 5).copy(1'000, 1'002, 5, "Memcpy DtoH (Device -> Pageable)", 4);
  b.range(1'100, 141'100, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  b.launch(141'200, 141'210, 6).kernel(141'220, 142'000, 6);
  const StepView v = analyze(b.trace, 0, 142'000);
  EXPECT_EQ(v.idle[IdleCause::kInput], us(140'000));
  EXPECT_EQ(v.idle[IdleCause::kSync], us(141'220 - 1'002 - 140'000));  // the drain and the host around the wait
  ASSERT_EQ(v.gaps.size(), 1u);
  EXPECT_EQ(v.gaps[0].rule, GapRule::kHostBlocked);
  expect_partition(v);
}

TEST(Rule2Amended, AnItemFollowedByLoggingStaysSync) {
  TraceBuilder b;
  b.kernel(0, 100).api(60, 110, "cudaStreamSynchronize").launch(1'600, 1'610, 2).kernel(1'620, 1'700, 2);
  const StepView v = analyze(b.trace, 0, 1'700);
  EXPECT_EQ(v.idle[IdleCause::kSync], us(1'520));
  EXPECT_EQ(v.idle[IdleCause::kInput], 0);
}

TEST(Rule2Amended, AnOsWaitInsideTheBlockingCallItselfIsNotInput) {
  // A blocking sync sleeps in the driver (nsys osrt shows a poll): the host waits on the GPU.
  TraceBuilder b;
  b.kernel(0, 100).api(60, 300, "cudaStreamSynchronize");
  b.range(70, 290, "osrt:poll");
  b.launch(400, 410, 2).kernel(420, 500, 2);
  const StepView v = analyze(b.trace, 0, 500);
  EXPECT_EQ(v.idle[IdleCause::kInput], 0);
  EXPECT_EQ(v.idle[IdleCause::kSync], us(320));
}

TEST(HostActivity, TheInnermostRangeNamesTheHostPartOfALongGap) {
  TraceBuilder b;
  b.launch(0, 5, 1).kernel(10, 100, 1);
  b.range(100, 20'100, "ProfilerStep#1");  // a step range never names the activity
  b.range(200, 15'200, "DistributedDataParallel.forward");
  b.range(1'200, 11'200, "unflatten_dense_tensors");
  b.api(11'300, 11'400, "cudaGetDevice_v3020");
  b.launch(20'000, 20'010, 2).kernel(20'020, 20'100, 2);
  const StepView v = analyze(b.trace, 0, 20'100);
  ASSERT_GE(v.host_activity.size(), 4u);
  EXPECT_EQ(v.host_activity[0].name, "unflatten_dense_tensors");
  EXPECT_EQ(v.host_activity[0].ns, us(10'000));
  EXPECT_EQ(v.host_activity[1].name, "");  // no range: [100,200), [15200,20000), [20010,20020)
  EXPECT_EQ(v.host_activity[1].ns, us(100 + 4'800 + 10));
  EXPECT_EQ(v.host_activity[2].name, "DistributedDataParallel.forward");
  EXPECT_EQ(v.host_activity[2].ns, us(5'000 - 100));
  EXPECT_EQ(v.host_activity[3].name, "cudaGetDevice");  // shown without its version suffix
  EXPECT_EQ(v.host_activity[3].ns, us(100));
  expect_partition(v);
}

TEST(HostActivity, ShortGapsAreDispatchActivity) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const double t = 100.0 * i;
    b.range(t, t + 80, "aten::add").launch(t + 80, t + 86, 10 + uint64_t(i)).kernel(t + 90, t + 100, 10 + uint64_t(i));
  }
  const StepView v = analyze(b.trace, 0, 1'000);
  EXPECT_TRUE(v.host_activity.empty());
  ASSERT_FALSE(v.dispatch_activity.empty());
  EXPECT_EQ(v.dispatch_activity[0].name, "aten::add");
  EXPECT_EQ(v.launched_kernels, 10);
  EXPECT_EQ(v.prompt_kernels, 10);  // each started 4 µs after its launch returned
}

TEST(HostActivity, KernelsQueuedFarAheadAreNotPrompt) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) b.launch(i, i + 0.5, 10 + uint64_t(i));
  for (int i = 0; i < 10; ++i) b.kernel(1'000 + 100.0 * i, 1'100 + 100.0 * i, 10 + uint64_t(i));
  const StepView v = analyze(b.trace, 0, 2'000);
  EXPECT_EQ(v.launched_kernels, 10);
  EXPECT_EQ(v.prompt_kernels, 0);
}

// The index against its definition, unit by unit: with properly nested ranges, a moment's activity
// is the innermost range holding it (the later of two of equal extent in (start, longer first,
// name) order), and kNoName where none does. Random trees on three threads, added in start order
// with the threads interleaved (as a trace gives them) and in reverse; measured over random
// interval sets, including time before the first and after the last range.
TEST(HostActivityIndex, MeasuresTheInnermostRangeOfEveryMoment) {
  struct Range {
    uint32_t thread;
    int64_t start, end;
    NameId name;
  };
  std::mt19937 rng(7);  // fixed: the same trees every run
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<Range> ranges;
    for (uint32_t thread = 1; thread <= 3; ++thread) {
      // A random forest over [10, 210): each range's children split part of it.
      std::vector<Range> todo{{thread, 10, 210, 0}};
      while (!todo.empty()) {
        const Range r = todo.back();
        todo.pop_back();
        if (r.name != 0) ranges.push_back(r);
        int64_t at = r.start;
        while (at < r.end && ranges.size() < 400) {
          const int64_t from = at + static_cast<int64_t>(rng() % 6);
          const int64_t to = std::min(r.end, from + 1 + static_cast<int64_t>(rng() % 40));
          if (from >= to) break;
          todo.push_back({thread, from, to, static_cast<NameId>(1 + rng() % 5)});  // repeated names too
          at = to + static_cast<int64_t>(rng() % 2);  // adjacent siblings, or a gap
        }
        if (rng() % 4 == 0 && r.name != 0) ranges.push_back({thread, r.start, r.end, static_cast<NameId>(6 + rng() % 2)});
      }
    }
    auto before = [](const Range& a, const Range& b) {
      if (a.start != b.start) return a.start < b.start;
      return a.end != b.end ? a.end > b.end : a.name < b.name;
    };
    std::sort(ranges.begin(), ranges.end(), before);
    std::vector<Range> added = ranges;
    if (trial % 2 == 1) std::reverse(added.begin(), added.end());
    HostActivityIndex index;
    for (const Range& r : added) index.add(r.thread, r.start, r.end, r.name);
    index.build();

    auto activity_at = [&](uint32_t thread, int64_t t) {
      NameId name = kNoName;
      for (const Range& r : ranges) {  // sorted: the last one holding t is the innermost
        if (r.thread == thread && r.start <= t && t < r.end) name = r.name;
      }
      return name;
    };
    for (uint32_t thread = 1; thread <= 4; ++thread) {  // thread 4 has no ranges at all
      std::vector<Interval> set;
      for (int64_t at = static_cast<int64_t>(rng() % 10); at < 230;) {
        const int64_t end = at + 1 + static_cast<int64_t>(rng() % 30);
        set.push_back({at, end});
        at = end + 1 + static_cast<int64_t>(rng() % 10);
      }
      std::unordered_map<NameId, int64_t> want;
      for (const Interval& iv : set) {
        for (int64_t t = iv.start; t < iv.end; ++t) ++want[activity_at(thread, t)];
      }
      std::unordered_map<NameId, int64_t> got;
      index.measure(thread, IntervalSet::from_sorted(set), got);
      EXPECT_EQ(got, want) << "trial " << trial << ", thread " << thread;
    }
  }
}

// Ranges that overlap without nesting: the later one is clipped to its parent, so after the parent
// ends the time is the grandparent's (or nobody's), not the clipped range's.
TEST(HostActivityIndex, ARangeOverlappingItsParentIsClippedToIt) {
  HostActivityIndex index;
  index.add(1, 0, 100, 1);    // outer
  index.add(1, 10, 50, 2);    // parent
  index.add(1, 40, 80, 3);    // overlaps the parent's end: counts as 3 only over [40, 50)
  index.add(1, 120, 130, 4);  // after a stretch of nothing
  index.build();
  std::unordered_map<NameId, int64_t> got;
  index.measure(1, IntervalSet::from_sorted(std::vector<Interval>{{0, 140}}), got);
  const std::unordered_map<NameId, int64_t> want{{1, 10 + 50}, {2, 30}, {3, 10}, {4, 10}, {kNoName, 20 + 10}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace stepwatch
