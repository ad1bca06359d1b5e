// Multi-rank merge: collecting collectives, matching them across ranks, estimating clock offsets.
#include <gtest/gtest.h>

#include "stepwatch/core/analysis.h"
#include "stepwatch/import/kineto_importer.h"
#include "stepwatch/ranks/clock_alignment.h"
#include "stepwatch/ranks/collective_match.h"
#include "trace_builder.h"

namespace stepwatch {
namespace {

using testing::us;

constexpr int64_t kMs = 1'000'000;

// A rank whose collectives end at `ends_ms` (+ offset), each 2 ms long, one per step of 10 ms.
RankCollectives rank_with(int rank, const std::vector<double>& ends_ms, int64_t offset_ns,
                          CollectiveType type = CollectiveType::kAllReduce, uint32_t stream = 21) {
  RankCollectives r;
  r.rank = rank;
  for (size_t i = 0; i < ends_ms.size(); ++i) {
    CollectiveInstance c;
    c.kernel_type = c.type = type;
    c.stream = stream;
    c.end_ns = static_cast<int64_t>(ends_ms[i] * 1e6) + offset_ns;
    c.start_ns = c.end_ns - 2 * kMs;
    c.step_index = static_cast<int>(i);
    c.step = 100 + static_cast<int64_t>(i);
    r.collectives.push_back(c);
  }
  return r;
}

TEST(RankClockAlignment, OffsetIsTheMedianEndDifferenceOfStepOrdinalMatches) {
  const RankCollectives ref = rank_with(0, {10, 20, 30, 40, 50}, 0);
  const RankCollectives other = rank_with(1, {10, 20, 30, 40, 50}, 50 * kMs);
  const RankClock c = align_rank(ref, other);
  EXPECT_TRUE(c.aligned);
  EXPECT_EQ(c.method, MatchMethod::kStepOrdinal);
  EXPECT_EQ(c.offset_ns, 50 * kMs);
  EXPECT_EQ(c.pairs.size(), 5u);
  const RankClock back = align_rank(other, ref);
  EXPECT_EQ(back.offset_ns, -50 * kMs);
}

TEST(RankClockAlignment, OneMismatchedCollectiveDoesNotMoveTheOffset) {
  const RankCollectives ref = rank_with(0, {10, 20, 30, 40, 50, 60, 70, 80}, 0);
  RankCollectives other = rank_with(1, {10, 20, 30, 40, 50, 60, 70, 80}, -37 * kMs);
  other.collectives[3].end_ns += 4 * kMs;  // a wrong pair: its ends are not simultaneous
  const RankClock c = align_rank(ref, other);
  EXPECT_TRUE(c.aligned);
  EXPECT_EQ(c.offset_ns, -37 * kMs);
  EXPECT_EQ(c.pairs.size(), 7u);  // the disagreeing pair is dropped
}

// Two collectives per step; `drop` removes some of rank 1's (a sampled capture).
std::pair<RankCollectives, RankCollectives> sampled_pair(const std::vector<size_t>& drop, int64_t offset_ns) {
  const std::vector<double> ends = {10, 13, 20, 23, 30, 33, 40, 43};
  RankCollectives ref = rank_with(0, ends, 0);
  RankCollectives other = rank_with(1, ends, offset_ns);
  for (RankCollectives* r : {&ref, &other}) {
    for (size_t i = 0; i < r->collectives.size(); ++i) r->collectives[i].step = 100 + static_cast<int64_t>(i / 2);
  }
  for (auto it = drop.rbegin(); it != drop.rend(); ++it) {
    other.collectives.erase(other.collectives.begin() + static_cast<std::ptrdiff_t>(*it));
  }
  return {ref, other};
}

TEST(RankClockAlignment, AFewMissingCollectivesKeepTheStepOrdinalMatch) {
  const auto [ref, other] = sampled_pair({2}, 3 * kMs);  // step 101 misses its first collective
  const RankClock c = align_rank(ref, other);
  EXPECT_TRUE(c.aligned);
  EXPECT_EQ(c.method, MatchMethod::kStepOrdinal);
  EXPECT_EQ(c.offset_ns, 3 * kMs);
  EXPECT_EQ(c.pairs.size(), 6u);  // step 101's shifted pair disagrees and is dropped
}

TEST(RankClockAlignment, SampledTracesFallBackToTheVoteAndNearestEnds) {
  // Three of four steps miss their first collective: positions within steps mostly disagree.
  const auto [ref, other] = sampled_pair({0, 2, 4}, 3 * kMs);
  const RankClock c = align_rank(ref, other);
  EXPECT_TRUE(c.aligned);
  EXPECT_EQ(c.method, MatchMethod::kNearestEnd);
  EXPECT_EQ(c.offset_ns, 3 * kMs);
  EXPECT_EQ(c.pairs.size(), 5u);  // every collective rank 1 has
}

TEST(RankClockAlignment, StreamsThatDifferAcrossRanksAreIgnored) {
  const RankCollectives ref = rank_with(0, {10, 20, 30}, 0, CollectiveType::kAllReduce, 21);
  const RankCollectives other = rank_with(1, {10, 20, 30}, kMs, CollectiveType::kAllReduce, 35);
  EXPECT_FALSE(match_key_policy(ref, other).use_stream);
  const RankClock c = align_rank(ref, other);
  EXPECT_TRUE(c.aligned);
  EXPECT_EQ(c.offset_ns, kMs);
}

TEST(RankClockAlignment, DifferentCollectivesDoNotMatch) {
  const RankCollectives ref = rank_with(0, {10, 20, 30}, 0, CollectiveType::kAllReduce);
  const RankCollectives other = rank_with(1, {10, 20, 30}, 0, CollectiveType::kAllGather);
  const RankClock c = align_rank(ref, other);
  EXPECT_FALSE(c.aligned);
  EXPECT_FALSE(c.why_not.empty());
}

TEST(RankClockAlignment, RankWithoutCollectivesIsNotAlignedAndSaysWhy) {
  const std::vector<RankCollectives> ranks = {rank_with(0, {}, 0), rank_with(1, {10, 20}, 0),
                                              rank_with(2, {10, 20}, 5 * kMs)};
  const ClockAlignment a = align_clocks(ranks);
  EXPECT_EQ(a.reference, 1);  // the first rank that has collectives
  ASSERT_EQ(a.ranks.size(), 3u);
  EXPECT_FALSE(a.ranks[0].aligned);
  EXPECT_NE(a.ranks[0].why_not.find("no NCCL kernels"), std::string::npos);
  EXPECT_TRUE(a.ranks[1].aligned);
  EXPECT_EQ(a.ranks[1].method, MatchMethod::kReference);
  EXPECT_TRUE(a.ranks[2].aligned);
  EXPECT_EQ(a.ranks[2].offset_ns, 5 * kMs);
}

TEST(RankClockAlignment, ClockBasesChooseAmongNearlyAsGoodVotes) {
  // A periodic loop whose rank 1 collectives have no step (launched before its capture): only the
  // vote can match them. The true offset (2 ms) has 6 votes, one period off (-8 ms) has 5.
  const RankCollectives ref = rank_with(0, {10, 20, 30, 40, 50, 60}, 0);
  RankCollectives other = rank_with(1, {10, 20, 30, 40, 50, 60}, 2 * kMs);
  for (CollectiveInstance& c : other.collectives) c.step_index = -1;
  RankClock c = align_rank(ref, other);
  EXPECT_EQ(c.method, MatchMethod::kNearestEnd);
  EXPECT_EQ(c.offset_ns, 2 * kMs);  // no prior: the most votes

  RankCollectives ref_based = ref;
  ref_based.clock_base_ns = 1'000'000'000;
  other.clock_base_ns = 1'000'000'000 + 8 * kMs;  // bases that put rank 1 a period earlier
  c = align_rank(ref_based, other);
  EXPECT_EQ(c.offset_ns, -8 * kMs);  // a near-best window nearest the prior
  other.clock_base_ns = 1'000'000'000 - 2 * kMs;
  c = align_rank(ref_based, other);
  EXPECT_EQ(c.offset_ns, 2 * kMs);
}

// collect_collectives: launches place kernels in steps; NCCL ranges refine type and size.
TEST(CollectCollectives, PlacesKernelsInTheStepOfTheirLaunchAndRefinesByRanges) {
  testing::TraceBuilder b;
  b.range(0, 1000, "ProfilerStep#7").range(1000, 2000, "ProfilerStep#8");
  // Step 7 launches a collective that runs in step 8 (the host runs ahead): it is step 7's.
  b.range(100, 200, "nccl:all_to_all").launch(150, 160, 11).nccl(1200, 1500, 11, "ncclDevKernel_SendRecv");
  b.range(1100, 1200, "nccl:all_reduce").launch(1150, 1160, 12).nccl(1600, 1800, 12);
  b.nccl(10, 50, 99);  // launched before the capture: no step
  Trace& trace = b.trace;
  std::sort(trace.events.begin(), trace.events.end(), [](const Event& x, const Event& y) { return x.start_ns < y.start_ns; });
  RankResult result;
  result.rank = 3;
  for (int k = 0; k < 2; ++k) {
    StepView v;
    v.step = 7 + k;
    v.start_ns = us(1000.0 * k);
    v.end_ns = us(1000.0 * (k + 1));
    result.steps.push_back(v);
  }
  const RankCollectives r = collect_collectives(trace, result);
  ASSERT_EQ(r.collectives.size(), 3u);
  EXPECT_EQ(r.collectives[0].step_index, -1);
  EXPECT_EQ(r.collectives[1].step, 7);
  EXPECT_EQ(r.collectives[2].step, 8);
  // 2 of 3 kernels have a range: below the coverage needed to trust ranges for every collective.
  EXPECT_FALSE(r.refined_by_ranges);
  EXPECT_EQ(r.collectives[1].type, CollectiveType::kSendRecv);

  trace.events.erase(std::remove_if(trace.events.begin(), trace.events.end(),
                                    [](const Event& e) { return e.correlation == 99; }),
                     trace.events.end());
  const RankCollectives refined = collect_collectives(trace, result);
  ASSERT_TRUE(refined.refined_by_ranges);
  EXPECT_EQ(refined.collectives[0].kernel_type, CollectiveType::kSendRecv);
  EXPECT_EQ(refined.collectives[0].type, CollectiveType::kAllToAll);  // NCCL runs all-to-all as send/recv
  EXPECT_EQ(refined.collectives[1].type, CollectiveType::kAllReduce);
}

TEST(CollectCollectives, NvtxNcclRangesGiveTheMessageSize) {
  testing::TraceBuilder b;
  b.range(0, 1000, "step");
  b.range(100, 200, "NCCL:ncclAllReduce");
  b.trace.events.back().collective = CollectiveType::kAllReduce;  // as the NVTX injection marks it
  b.trace.events.back().bytes = 1 << 20;
  b.launch(150, 160, 5).nccl(300, 400, 5, "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  RankResult result;
  StepView v;
  v.start_ns = 0;
  v.end_ns = us(1000);
  result.steps.push_back(v);
  const RankCollectives r = collect_collectives(b.trace, result);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_TRUE(r.refined_by_ranges);
  EXPECT_EQ(r.collectives[0].bytes, 1u << 20);
}

TEST(CollectCollectives, AnnotationNames) {
  EXPECT_EQ(collective_from_annotation("nccl:all_reduce"), CollectiveType::kAllReduce);
  EXPECT_EQ(collective_from_annotation("nccl:_all_gather_base"), CollectiveType::kAllGather);
  EXPECT_EQ(collective_from_annotation("nccl:_reduce_scatter_base"), CollectiveType::kReduceScatter);
  EXPECT_EQ(collective_from_annotation("nccl:all_to_all"), CollectiveType::kAllToAll);
  EXPECT_EQ(collective_from_annotation("nccl:recv 0<-1"), CollectiveType::kSendRecv);
  EXPECT_EQ(collective_from_annotation("nccl:broadcast"), CollectiveType::kBroadcast);
  EXPECT_EQ(collective_from_annotation("aten::all_reduce"), CollectiveType::kNone);
  EXPECT_EQ(collective_from_annotation("ProfilerStep#3"), CollectiveType::kNone);
}

}  // namespace
}  // namespace stepwatch

namespace stepwatch {
namespace {

// Kineto's baseTimeNanoseconds is kept beside the events, never added to them (trace.h says why).
TEST(KinetoClockBase, IsReadButDoesNotMoveEvents) {
  const std::string json =
      R"({"baseTimeNanoseconds": 1711964646000000000, "traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 100.5, "dur": 2, "pid": 0, "tid": 7}]})";
  const Trace with_base = import_kineto_json(json, "with_base.json");
  EXPECT_EQ(with_base.clock_base_ns, 1711964646000000000);
  ASSERT_EQ(with_base.events.size(), 1u);
  EXPECT_EQ(with_base.events[0].start_ns, 100'500);
  const Trace without = import_kineto_json(R"({"traceEvents": []})", "without.json");
  EXPECT_EQ(without.clock_base_ns, 0);
}

}  // namespace
}  // namespace stepwatch
