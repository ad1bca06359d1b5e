// hta-sampled-2ranks: two ranks (0 and 1 of 128) of one job, sampled captures. Its README says
// 2 steps x ~610 ms per rank with 170–210 ms of NCCL per step; HTA publishes no straggler figures
// for it. What the files themselves show: the ranks' clocks agree (several NCCL kernels of the two
// ranks end within 0.1 ms of each other, one to the µs), and some collectives of each rank are
// missing from the sample, so they can only be matched by their ends.
#include <gtest/gtest.h>

#include "corpus_support.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/import/kineto_importer.h"
#include "stepwatch/ranks/rank_merge.h"

namespace stepwatch {
namespace {

TEST(CorpusMultiRank, SampledTwoRanksAlignAndJudgeBothSteps) {
  STEPWATCH_REQUIRE_CORPUS();
  const auto dir = testing::corpus_dir() / "kineto" / "hta-sampled-2ranks";
  std::vector<RankResult> results;
  std::vector<RankCollectives> collectives;
  for (const char* name : {"sampled_rank-0.json.gz", "sampled_rank-1.json.gz"}) {
    Trace trace = import_kineto_file((dir / name).string());
    auto detectors = make_detectors({});
    results.push_back(analyze_rank(trace, trace.rank, {}, std::move(detectors)));
    collectives.push_back(collect_collectives(trace, results.back()));
  }
  EXPECT_EQ(collectives[0].rank, 0);
  EXPECT_EQ(collectives[1].rank, 1);
  EXPECT_EQ(collectives[0].collectives.size(), 10u);
  EXPECT_EQ(collectives[1].collectives.size(), 10u);
  // Every NCCL kernel sits under PyTorch's nccl:<op> annotation: SendRecv kernels become the
  // all-to-all / all-reduce / all-gather they implement.
  EXPECT_TRUE(collectives[0].refined_by_ranges);
  EXPECT_TRUE(collectives[1].refined_by_ranges);

  const MergedAnalysis m = merge_ranks(collectives, {&results[0], &results[1]}, {});
  const RankClock& c = m.clocks.ranks[1];
  ASSERT_TRUE(c.aligned) << c.why_not;
  EXPECT_EQ(c.method, MatchMethod::kNearestEnd);  // the sample dropped collectives
  EXPECT_LT(std::llabs(c.offset_ns), 100'000);     // clocks already agree
  EXPECT_GE(c.pairs.size(), 4u);
  EXPECT_LT(c.residual_ns, 200'000);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].step, 551);
  EXPECT_EQ(m.steps[1].step, 552);
  // Both ranks reach the matched collectives within a few ms of each other in ~610 ms steps:
  // no straggler between these two ranks.
  for (const MergedStep& s : m.steps) EXPECT_LT(s.spread_ns, 10'000'000) << "step " << s.step;
  EXPECT_TRUE(m.findings.empty());
}

}  // namespace
}  // namespace stepwatch
