// Multi-rank merge, part 3: the straggler verdict across ranks (`stepwatch analyze` over several
// ranks). Diffing per-rank reports, as the reference's capture recipe says, done for the user.
//
// With the clocks aligned (clock_alignment.h), each step's dominant collective — the matched
// collective with the most time spent in it over all ranks (the one where waiting shows) — gives
// each rank's arrival (its kernel's start: when that rank's GPU reached the collective). A rank
// whose arrival is later than the median of the other ranks' by >= min_pct of the step time and
// >= min_ms (the `late_rank` thresholds: by default twice the common min_pct — 10% — and the common
// min_ms, as ranks of a balanced job arrive a few % apart; HTA normalizes the late start by the
// iteration time too) is late; the others wait inside the collective (their kernel runs longer
// than the shortest instance). The cause is what differs on the late rank: its step breakdown
// (compute, input, host, sync, copy-only) against the median of the others in the same step.
// A set of ranks late on at least half of the steps (and >= 3) gives one run-level finding;
// otherwise one finding per late step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepwatch/core/analysis.h"
#include "stepwatch/core/config.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/ranks/clock_alignment.h"
#include "stepwatch/ranks/collective_match.h"

namespace stepwatch {

// The merged finding's id: the rank the others wait for. (The per-rank `straggler` detector is
// one rank's view: its collectives took longer than they need.)
inline constexpr std::string_view kLateRankId = "late_rank";
inline constexpr std::string_view kLateRankDescription =
    "Multi-rank: the rank the others wait for at the collectives, by how much, and why (stepwatch analyze over "
    "several ranks)";
// late_rank's thresholds: an explicit `late_rank` entry, else twice the common min_pct.
DetectorThresholds late_rank_thresholds(const AnalysisConfig& config);

struct RankArrival {
  int rank = 0;
  int64_t step = 0;        // the rank's own step number for this collective
  int64_t arrival_ns = 0;  // kernel start on the reference clock
  int64_t delay_ns = 0;    // arrival − median arrival of the other ranks
  int64_t wait_ns = 0;     // kernel time beyond the shortest instance: waited inside for a late peer
  int64_t step_ns = 0;     // the rank's step duration
};

struct MergedStep {
  int64_t step = 0;  // the reference rank's step number
  CollectiveType collective = CollectiveType::kNone;
  uint64_t collective_bytes = 0;      // its size (NCCL ranges, PyTorch's record_param_comms); 0: unknown
  std::vector<RankArrival> arrivals;  // aligned ranks, in input order
  int64_t spread_ns = 0;              // latest − earliest arrival
  int64_t step_ns = 0;                // median step duration over the ranks
  std::vector<int> late_ranks;        // the stragglers of this step, ascending
  int64_t delay_ns = 0;               // the largest late delay
  std::string cause;                  // compute, input, host, sync, copy, unexplained ("" if none late)
  int64_t cause_excess_ns = 0;        // how much more of it the (first) late rank had
};

struct MergedAnalysis {
  std::vector<int> ranks;       // every input rank, in input order
  ClockAlignment clocks;
  std::vector<MergedStep> steps;
  std::vector<Finding> findings;
  std::vector<std::string> notes;  // why a rank, or the whole merge, has no verdict
};

// `collectives[i]` and `results[i]` describe the same input rank. Findings honour
// config.is_enabled("late_rank") and late_rank_thresholds(config).
MergedAnalysis merge_ranks(const std::vector<RankCollectives>& collectives,
                           const std::vector<const RankResult*>& results, const AnalysisConfig& config);

}  // namespace stepwatch
