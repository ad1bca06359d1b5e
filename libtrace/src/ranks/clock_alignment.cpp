#include "stepwatch/ranks/clock_alignment.h"
#include "stepwatch/core/stats.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

namespace stepwatch {
namespace {

constexpr double kMinAgreement = 0.75;  // share of step/position pairs that must agree with their median
// The vote compares every same-key pair of ends: bounded by the first instances of each key.
constexpr size_t kMaxVotersPerKey = 1024;
// With a prior, windows with this share of the best vote count are as good as the best.
constexpr double kNearBestVotes = 0.8;

int64_t end_difference(const RankCollectives& ref, const RankCollectives& other, const CollectivePair& p) {
  return other.collectives[p.other].end_ns - ref.collectives[p.ref].end_ns;
}

// Keeps the pairs whose end difference is within the tolerance of `offset`: a pair whose ends
// are not simultaneous is not one collective.
std::vector<CollectivePair> agreeing(const RankCollectives& ref, const RankCollectives& other,
                                     const std::vector<CollectivePair>& pairs, int64_t offset) {
  std::vector<CollectivePair> kept;
  for (const CollectivePair& p : pairs) {
    if (std::llabs(end_difference(ref, other, p) - offset) <= kEndToleranceNs) kept.push_back(p);
  }
  return kept;
}

// The offset most same-key end pairs agree on; `prior` breaks near-ties. Returns false when no
// two pairs agree.
bool vote_offset(const RankCollectives& ref, const RankCollectives& other, const MatchKeyPolicy& policy,
                 std::optional<int64_t> prior, int64_t& offset) {
  auto key_of = [&](const CollectiveInstance& c) {
    return std::tuple{policy.use_stream ? c.stream : 0u, policy.refined ? c.type : c.kernel_type,
                      policy.refined ? c.bytes : 0};
  };
  std::map<std::tuple<uint32_t, CollectiveType, uint64_t>, std::pair<std::vector<int64_t>, std::vector<int64_t>>> ends;
  for (const CollectiveInstance& c : ref.collectives) {
    auto& v = ends[key_of(c)].first;
    if (v.size() < kMaxVotersPerKey) v.push_back(c.end_ns);
  }
  for (const CollectiveInstance& c : other.collectives) {
    auto it = ends.find(key_of(c));
    if (it != ends.end() && it->second.second.size() < kMaxVotersPerKey) it->second.second.push_back(c.end_ns);
  }
  std::vector<int64_t> d;
  for (const auto& [key, sides] : ends) {
    for (int64_t a : sides.first) {
      for (int64_t b : sides.second) d.push_back(b - a);
    }
  }
  if (d.size() < kMinMatched) return false;
  std::sort(d.begin(), d.end());
  // Densest windows of width 2 × tolerance (two pointers over the sorted differences).
  struct Window {
    size_t lo = 0, hi = 0;  // [lo, hi)
    size_t votes() const { return hi - lo; }
  };
  std::vector<Window> windows;
  size_t best = 0;
  for (size_t lo = 0, hi = 0; lo < d.size(); ++lo) {
    while (hi < d.size() && d[hi] - d[lo] <= 2 * kEndToleranceNs) ++hi;
    windows.push_back({lo, hi});
    best = std::max(best, hi - lo);
  }
  if (best < kMinMatched) return false;
  // Without a prior the most votes win; a periodic loop makes windows one step apart nearly as
  // good, so only a prior from the clock bases may prefer a near-best one.
  const Window* chosen = nullptr;
  int64_t chosen_distance = 0;
  for (const Window& w : windows) {
    if (!prior) {
      if (chosen == nullptr || w.votes() > chosen->votes()) chosen = &w;
      continue;
    }
    if (double(w.votes()) < kNearBestVotes * double(best)) continue;
    const int64_t distance = std::llabs(d[w.lo] + (d[w.hi - 1] - d[w.lo]) / 2 - *prior);
    if (chosen == nullptr || distance < chosen_distance) {
      chosen = &w;
      chosen_distance = distance;
    }
  }
  offset = median_of(std::vector<int64_t>(d.begin() + static_cast<std::ptrdiff_t>(chosen->lo),
                                          d.begin() + static_cast<std::ptrdiff_t>(chosen->hi)));
  return true;
}

void finish(RankClock& clock, const RankCollectives& ref, const RankCollectives& other,
            std::vector<CollectivePair> pairs, MatchMethod method) {
  std::vector<int64_t> d;
  for (const CollectivePair& p : pairs) d.push_back(end_difference(ref, other, p));
  clock.offset_ns = median_of(d);
  clock.pairs = agreeing(ref, other, pairs, clock.offset_ns);
  std::vector<int64_t> residual;
  for (const CollectivePair& p : clock.pairs) residual.push_back(std::llabs(end_difference(ref, other, p) - clock.offset_ns));
  clock.residual_ns = median_of(residual);
  clock.method = method;
  clock.aligned = clock.pairs.size() >= kMinMatched;
}

}  // namespace

std::string_view to_string(MatchMethod m) {
  switch (m) {
    case MatchMethod::kReference: return "reference";
    case MatchMethod::kStepOrdinal: return "step_ordinal";
    case MatchMethod::kNearestEnd: return "nearest_end";
    default: return "none";
  }
}

RankClock align_rank(const RankCollectives& ref, const RankCollectives& other) {
  RankClock clock;
  clock.rank = other.rank;
  if (other.collectives.empty()) {
    clock.why_not = "no NCCL kernels in its trace";
    return clock;
  }
  const MatchKeyPolicy policy = match_key_policy(ref, other);

  const std::vector<CollectivePair> by_step = match_by_step_ordinal(ref, other, policy);
  if (by_step.size() >= kMinMatched) {
    std::vector<int64_t> d;
    for (const CollectivePair& p : by_step) d.push_back(end_difference(ref, other, p));
    const size_t agree = agreeing(ref, other, by_step, median_of(d)).size();
    if (double(agree) >= kMinAgreement * double(by_step.size())) {
      finish(clock, ref, other, by_step, MatchMethod::kStepOrdinal);
      if (clock.aligned) return clock;
    }
  }

  // The traces' clock bases, when both have one, say roughly where the offset lies.
  std::optional<int64_t> prior;
  if (ref.clock_base_ns != 0 && other.clock_base_ns != 0) prior = ref.clock_base_ns - other.clock_base_ns;
  int64_t voted = 0;
  if (vote_offset(ref, other, policy, prior, voted)) {
    finish(clock, ref, other, match_by_nearest_end(ref, other, policy, voted, kEndToleranceNs), MatchMethod::kNearestEnd);
    if (clock.aligned) return clock;
  }
  clock = RankClock{};
  clock.rank = other.rank;
  clock.why_not = "its collectives could not be matched with rank " + std::to_string(ref.rank) +
                  "'s (fewer than " + std::to_string(kMinMatched) + " with simultaneous ends)";
  return clock;
}

ClockAlignment align_clocks(const std::vector<RankCollectives>& ranks) {
  ClockAlignment out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].collectives.empty()) {
      out.reference = static_cast<int>(i);
      break;
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (out.reference < 0) {
      RankClock none;
      none.rank = ranks[i].rank;
      none.why_not = "no NCCL kernels in its trace";
      out.ranks.push_back(std::move(none));
    } else if (static_cast<int>(i) == out.reference) {
      RankClock self;
      self.rank = ranks[i].rank;
      self.aligned = true;
      self.method = MatchMethod::kReference;
      for (size_t k = 0; k < ranks[i].collectives.size(); ++k) self.pairs.push_back({k, k});
      out.ranks.push_back(std::move(self));
    } else {
      out.ranks.push_back(align_rank(ranks[static_cast<size_t>(out.reference)], ranks[i]));
    }
  }
  return out;
}

}  // namespace stepwatch
