// Multi-rank merge, part 2: each rank's clock offset against a reference rank.
//
// The end of a collective is nearly simultaneous on all its ranks (each leaves when the last
// one's data has arrived), whatever each rank's arrival time: the ends of matched collectives
// measure the offset between two ranks' clocks. The offset is the median of
// (end_other − end_ref) over the matched pairs, robust to a few wrong pairs.
//
// Matching, in order: by step and position (complete traces); if fewer than 3/4 of those pairs
// agree with their median within the tolerance, or there are none, by a vote — the offset on
// which most pairs of same-key collectives agree (a densest window over all their end
// differences; among windows with nearly as many votes, the one nearest the prior from the
// traces' clock bases) — then in-order nearest-end matching with it. A rank with fewer than
// kMinMatched agreeing collectives is not aligned and gets no verdict.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepwatch/ranks/collective_match.h"

namespace stepwatch {

enum class MatchMethod : uint8_t { kNone, kReference, kStepOrdinal, kNearestEnd };
std::string_view to_string(MatchMethod);

struct RankClock {
  int rank = 0;
  bool aligned = false;
  MatchMethod method = MatchMethod::kNone;
  int64_t offset_ns = 0;    // this rank's clock minus the reference's: subtract to get reference time
  int64_t residual_ns = 0;  // median |end − matched reference end| after alignment
  std::vector<CollectivePair> pairs;  // with the reference rank, agreeing with the offset
  std::string why_not;      // !aligned: one sentence for the report
};

struct ClockAlignment {
  int reference = -1;            // index (into the input ranks) of the reference rank; -1: none
  std::vector<RankClock> ranks;  // one per input rank, in input order
};

inline constexpr int64_t kEndToleranceNs = 500'000;  // how simultaneous "simultaneous" ends are
inline constexpr size_t kMinMatched = 2;

// The reference is the first rank (in input order) that has collectives.
ClockAlignment align_clocks(const std::vector<RankCollectives>& ranks);

// The offset estimate for one pair of ranks (exposed for tests).
RankClock align_rank(const RankCollectives& ref, const RankCollectives& other);

}  // namespace stepwatch
