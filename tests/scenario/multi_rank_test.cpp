// Merged multi-rank analysis on synthetic jobs with a known straggler (tests/synthetic/multi_rank.h):
// the injected rank is named with its cause, balanced ranks stay silent, and clock offsets between
// the ranks' files change nothing.
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "scenario_support.h"
#include "stepwatch/ranks/rank_merge.h"
#include "synthetic/multi_rank.h"
#include "evidence_support.h"

namespace stepwatch::scenario {
namespace {

using synthetic::MultiRankOptions;
using synthetic::StragglerKind;

constexpr int64_t kMs = 1'000'000;

struct MergedRun {
  std::vector<RankResult> results;
  MergedAnalysis merged;
};

// PyTorch's record_param_comms op around each NCCL launch, as a Kineto trace has it: the
// collective and its size (`bucket_bytes`), on the launching thread, spanning the launch call.
void add_comms_ops(Trace& trace, uint64_t bucket_bytes) {
  std::unordered_map<uint64_t, const Event*> launch;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::kApiCall && e.correlation != 0) launch.emplace(e.correlation, &e);
  }
  std::vector<Event> ops;
  for (const Event& k : trace.events) {
    if (!k.is_comm_kernel()) continue;
    const auto it = launch.find(k.correlation);
    if (it == launch.end()) continue;
    Event op;
    op.kind = EventKind::kRange;
    op.start_ns = it->second->start_ns - 1'000;
    op.end_ns = it->second->end_ns + 1'000;
    op.thread = it->second->thread;
    op.collective = k.collective;
    op.bytes = bucket_bytes;
    ops.push_back(op);
  }
  const NameId name = trace.names.intern("record_param_comms");
  for (Event& op : ops) {
    op.name = name;
    trace.events.push_back(op);
  }
}

MergedRun analyze_ranks(const MultiRankOptions& options, const AnalysisConfig& config = {},
                        uint64_t comms_op_bytes = 0) {
  const std::vector<synthetic::SyntheticRun> runs = synthetic::generate_ranks(options);
  MergedRun out;
  std::vector<RankCollectives> collectives;
  for (const synthetic::SyntheticRun& run : runs) {
    Trace trace = run.trace;
    if (comms_op_bytes > 0) add_comms_ops(trace, comms_op_bytes);
    auto detectors = make_detectors(config);
    out.results.push_back(analyze_rank(trace, trace.rank, config, std::move(detectors)));
    collectives.push_back(collect_collectives(trace, out.results.back()));
  }
  std::vector<const RankResult*> results;
  for (const RankResult& r : out.results) results.push_back(&r);
  out.merged = merge_ranks(collectives, results, config);
  return out;
}

std::string describe(const MergedAnalysis& m) {
  std::string s;
  for (const std::string& n : m.notes) s += "  note: " + n + "\n";
  for (const MergedStep& st : m.steps) {
    s += "  step " + std::to_string(st.step) + " spread " + std::to_string(double(st.spread_ns) / 1e6) + " ms late";
    for (int r : st.late_ranks) s += " " + std::to_string(r);
    s += " " + st.cause + "\n";
  }
  for (const Finding& f : m.findings) s += "  " + format_log_line(f) + "\n";
  return s;
}

// The verdict a user reads: which ranks, which cause, on how many steps.
struct Verdict {
  std::vector<int64_t> ranks;
  std::string cause;
  int64_t steps = 0;
  bool operator==(const Verdict&) const = default;
};
std::vector<Verdict> verdicts(const MergedAnalysis& m) {
  std::vector<Verdict> out;
  for (const Finding& f : m.findings) {
    out.push_back({evidence<std::vector<int64_t>>(f, "straggler_ranks"), evidence<std::string>(f, "cause"),
                   evidence<int64_t>(f, "steps")});
  }
  return out;
}

MultiRankOptions job(StragglerKind kind, int straggler_rank, std::vector<int64_t> offsets = {}) {
  MultiRankOptions o;
  o.ranks = 4;
  o.steps = 8;
  o.straggler = kind;
  o.straggler_rank = straggler_rank;
  o.clock_offsets_ns = std::move(offsets);
  return o;
}

const std::vector<std::vector<int64_t>> kOffsets = {
    {0, 50 * kMs, -50 * kMs, 37 * kMs}, {-50 * kMs, 37 * kMs, 0, 50 * kMs}, {37 * kMs, -50 * kMs, 50 * kMs, 0}};

TEST(MultiRankScenario, ComputeSlowRankIsNamedWithComputeAsCause) {
  const MergedRun r = analyze_ranks(job(StragglerKind::kCompute, 2));
  SCOPED_TRACE(describe(r.merged));
  ASSERT_EQ(r.merged.findings.size(), 1u);  // one run-level finding, not one per step
  const Finding& f = r.merged.findings.front();
  EXPECT_EQ(f.rank, 2);
  EXPECT_TRUE(f.established);
  EXPECT_EQ(evidence<std::vector<int64_t>>(f, "straggler_ranks"), std::vector<int64_t>{2});
  EXPECT_EQ(evidence<std::string>(f, "cause"), "compute");
  EXPECT_EQ(evidence<std::string>(f, "collective"), "AllReduce");
  EXPECT_EQ(evidence<int64_t>(f, "steps"), 8);
  // The late arrival the model injected: kernels 1.5x slower make rank 2 reach the first buckets
  // several ms late; the others wait about that long inside them.
  EXPECT_GT(evidence<double>(f, "delay_ms"), 5.0);
  EXPECT_LT(evidence<double>(f, "delay_ms"), 20.0);
  EXPECT_NEAR(evidence<double>(f, "waited_ms"), evidence<double>(f, "delay_ms"), 2.0);
  EXPECT_NE(f.message.find("Fix:"), std::string::npos);
  for (const MergedStep& s : r.merged.steps) EXPECT_EQ(s.late_ranks, std::vector<int>{2});
}

// With the collectives' sizes in the trace (PyTorch's record_param_comms, NCCL's NVTX ranges),
// the verdict says which collective by its size too; without them it names no size.
TEST(MultiRankScenario, TheStragglerEvidenceCarriesTheCollectivesSize) {
  const MergedRun sized = analyze_ranks(job(StragglerKind::kCompute, 2), {}, 25u << 20);
  SCOPED_TRACE(describe(sized.merged));
  ASSERT_EQ(sized.merged.findings.size(), 1u);
  EXPECT_EQ(evidence<std::vector<int64_t>>(sized.merged.findings.front(), "straggler_ranks"), std::vector<int64_t>{2});
  EXPECT_EQ(evidence<int64_t>(sized.merged.findings.front(), "collective_bytes"), int64_t{25} << 20);
  const MergedRun unsized = analyze_ranks(job(StragglerKind::kCompute, 2));
  ASSERT_EQ(unsized.merged.findings.size(), 1u);
  for (const auto& [key, value] : unsized.merged.findings.front().evidence) EXPECT_NE(key, "collective_bytes");
}

TEST(MultiRankScenario, InputSlowRankIsNamedWithInputAsCause) {
  const MergedRun r = analyze_ranks(job(StragglerKind::kInput, 1));
  SCOPED_TRACE(describe(r.merged));
  ASSERT_EQ(r.merged.findings.size(), 1u);
  const Finding& f = r.merged.findings.front();
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(evidence<std::vector<int64_t>>(f, "straggler_ranks"), std::vector<int64_t>{1});
  EXPECT_EQ(evidence<std::string>(f, "cause"), "input");
  EXPECT_GT(evidence<double>(f, "delay_ms"), 5.0);
}

// Ranks reach the all-reduce over a spread (issue 14, item 8): rank 3 the latest, rank 2 late
// against the median but waiting inside the collective for rank 3. Only rank 3 is the one the
// others wait for.
TEST(MultiRankScenario, ARankThatWaitsInsideTheCollectiveIsNoStraggler) {
  MultiRankOptions o;
  o.ranks = 4;
  o.steps = 8;
  o.kernel_scale = {1.0, 1.0, 1.4, 1.8};
  const MergedRun m = analyze_ranks(o);
  ASSERT_FALSE(m.merged.steps.empty()) << describe(m.merged);
  int named = 0;
  for (const MergedStep& st : m.merged.steps) {
    if (st.late_ranks.empty()) continue;
    ++named;
    EXPECT_EQ(st.late_ranks, std::vector<int>{3}) << describe(m.merged);
  }
  EXPECT_GE(named, 6) << describe(m.merged);
  for (const Finding& f : m.merged.findings) {
    EXPECT_EQ(evidence<std::vector<int64_t>>(f, "straggler_ranks"), std::vector<int64_t>{3}) << f.message;
  }
  // Without the later rank, rank 2 is the straggler.
  o.kernel_scale = {1.0, 1.0, 1.4, 1.0};
  const MergedRun alone = analyze_ranks(o);
  bool rank2 = false;
  for (const MergedStep& st : alone.merged.steps) rank2 |= st.late_ranks == std::vector<int>{2};
  EXPECT_TRUE(rank2) << describe(alone.merged);
}

TEST(MultiRankScenario, BalancedRanksAreSilent) {
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    MultiRankOptions o = job(StragglerKind::kNone, -1);
    o.seed = seed;
    const MergedRun r = analyze_ranks(o);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + describe(r.merged));
    EXPECT_EQ(r.merged.steps.size(), 8u);  // judged, not skipped
    EXPECT_TRUE(r.merged.findings.empty());
    EXPECT_TRUE(r.merged.notes.empty());
  }
}

TEST(MultiRankScenario, VerdictDoesNotChangeUnderClockOffsets) {
  for (const auto& [kind, rank] : {std::pair{StragglerKind::kCompute, 2}, std::pair{StragglerKind::kInput, 1},
                                   std::pair{StragglerKind::kNone, -1}}) {
    const MergedRun base = analyze_ranks(job(kind, rank));
    for (const std::vector<int64_t>& offsets : kOffsets) {
      const MergedRun shifted = analyze_ranks(job(kind, rank, offsets));
      SCOPED_TRACE(describe(shifted.merged));
      EXPECT_EQ(verdicts(shifted.merged), verdicts(base.merged));
      // The offsets are measured (relative to rank 0), to the collective ends' skew.
      for (size_t i = 0; i < offsets.size(); ++i) {
        const RankClock& c = shifted.merged.clocks.ranks[i];
        ASSERT_TRUE(c.aligned);
        EXPECT_NEAR(double(c.offset_ns), double(offsets[i] - offsets[0]), 50'000.0) << "rank " << i;
      }
      ASSERT_EQ(shifted.merged.steps.size(), base.merged.steps.size());
      for (size_t s = 0; s < base.merged.steps.size(); ++s) {
        EXPECT_NEAR(double(shifted.merged.steps[s].spread_ns), double(base.merged.steps[s].spread_ns), 50'000.0);
      }
    }
  }
}

TEST(MultiRankScenario, EveryNcclNamingWorks) {
  for (const synthetic::NcclNaming naming : {synthetic::NcclNaming::kDevKernel,
                                             synthetic::NcclNaming::kDevKernelMangled,
                                             synthetic::NcclNaming::kLegacy}) {
    MultiRankOptions o = job(StragglerKind::kCompute, 3, kOffsets[0]);
    o.nccl_naming = naming;
    const MergedRun r = analyze_ranks(o);
    SCOPED_TRACE(describe(r.merged));
    ASSERT_EQ(r.merged.findings.size(), 1u);
    EXPECT_EQ(evidence<std::vector<int64_t>>(r.merged.findings.front(), "straggler_ranks"), std::vector<int64_t>{3});
  }
}

TEST(MultiRankScenario, DisabledLateRankSilencesTheMerge) {
  AnalysisConfig config;
  config.enabled["late_rank"] = false;
  const MergedRun r = analyze_ranks(job(StragglerKind::kCompute, 2), config);
  EXPECT_FALSE(r.merged.steps.empty());
  EXPECT_TRUE(r.merged.findings.empty());
}

TEST(MultiRankScenario, RankWithoutCollectivesIsReportedAndExcluded) {
  const std::vector<synthetic::SyntheticRun> runs = synthetic::generate_ranks(job(StragglerKind::kCompute, 2));
  std::vector<RankResult> results;
  std::vector<RankCollectives> collectives;
  for (size_t i = 0; i < runs.size(); ++i) {
    Trace trace = runs[i].trace;
    if (i == 3) {  // a trace captured without its NCCL kernels
      std::erase_if(trace.events, [](const Event& e) { return e.is_comm_kernel(); });
    }
    auto detectors = make_detectors({});
    results.push_back(analyze_rank(trace, trace.rank, {}, std::move(detectors)));
    collectives.push_back(collect_collectives(trace, results.back()));
  }
  std::vector<const RankResult*> ptrs;
  for (const RankResult& r : results) ptrs.push_back(&r);
  const MergedAnalysis m = merge_ranks(collectives, ptrs, {});
  SCOPED_TRACE(describe(m));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("rank 3"), std::string::npos);
  EXPECT_NE(m.notes[0].find("no NCCL kernels"), std::string::npos);
  ASSERT_EQ(m.findings.size(), 1u);  // the other three still have a verdict
  EXPECT_EQ(evidence<std::vector<int64_t>>(m.findings.front(), "straggler_ranks"), std::vector<int64_t>{2});
}

TEST(MultiRankScenario, OneRankGivesNoMergedVerdict) {
  const std::vector<synthetic::SyntheticRun> runs = synthetic::generate_ranks(job(StragglerKind::kNone, -1));
  Trace trace = runs[0].trace;
  auto detectors = make_detectors({});
  const RankResult result = analyze_rank(trace, 0, {}, std::move(detectors));
  const MergedAnalysis m = merge_ranks({collect_collectives(trace, result)}, {&result}, {});
  EXPECT_TRUE(m.steps.empty());
  EXPECT_TRUE(m.findings.empty());
}

}  // namespace
}  // namespace stepwatch::scenario
