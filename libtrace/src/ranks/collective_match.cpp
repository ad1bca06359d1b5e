#include "stepwatch/ranks/collective_match.h"
#include "stepwatch/core/classify.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace stepwatch {
namespace {

// A share of a rank's collectives may lack a range (a capture that began inside one); below
// this coverage the ranges are not trusted to name every collective.
constexpr double kMinRangeCoverage = 0.95;
constexpr int kMaxEnclosingScan = 16;  // ranges looked back at for one launch (nesting depth)

struct NcclRange {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  CollectiveType type = CollectiveType::kNone;
  uint64_t bytes = 0;
};

// The innermost NCCL range of `thread` holding `t`.
const NcclRange* enclosing(const std::vector<NcclRange>& ranges, int64_t t) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), t,
                             [](int64_t v, const NcclRange& r) { return v < r.start_ns; });
  for (int scanned = 0; it != ranges.begin() && scanned < kMaxEnclosingScan; ++scanned) {
    --it;
    if (it->end_ns >= t) return &*it;
  }
  return nullptr;
}

int step_holding(const std::vector<StepView>& steps, int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](int64_t v, const StepView& s) { return v < s.start_ns; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->end_ns ? static_cast<int>(it - steps.begin()) : -1;
}

using OrdinalKey = std::tuple<int64_t, uint32_t, CollectiveType, uint64_t, int>;
using StreamKey = std::tuple<uint32_t, CollectiveType, uint64_t>;

StreamKey stream_key(const CollectiveInstance& c, const MatchKeyPolicy& p) {
  return {p.use_stream ? c.stream : 0u, p.refined ? c.type : c.kernel_type, p.refined ? c.bytes : 0};
}

// Every instance with a step under its (step, stream, type, size, position) key.
std::map<OrdinalKey, size_t> ordinal_index(const RankCollectives& r, const MatchKeyPolicy& p) {
  std::map<OrdinalKey, size_t> index;
  std::map<std::tuple<int64_t, StreamKey>, int> seen;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveInstance& c = r.collectives[i];
    if (c.step_index < 0) continue;
    const StreamKey k = stream_key(c, p);
    const int position = seen[{c.step, k}]++;
    index.emplace(OrdinalKey{c.step, std::get<0>(k), std::get<1>(k), std::get<2>(k), position}, i);
  }
  return index;
}

}  // namespace

CollectiveType collective_from_annotation(std::string_view name) {
  // The same reading of the operation as the Timeline's (classify_collective), for PyTorch's
  // "nccl:<op>" annotations only.
  return name.starts_with("nccl:") ? classify_collective(name) : CollectiveType::kNone;
}

RankCollectives collect_collectives(const Trace& trace, const RankResult& result) {
  RankCollectives out;
  out.rank = result.rank;
  out.source = trace.source;
  out.clock_base_ns = trace.clock_base_ns;

  struct Launch {
    int64_t start_ns = 0;
    uint32_t thread = 0;
  };
  std::unordered_map<uint64_t, Launch> launches;  // correlation -> launching call
  std::unordered_map<uint32_t, std::vector<NcclRange>> ranges;  // thread -> NCCL ranges by start
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::kApiCall && e.correlation != 0) {
      launches.emplace(e.correlation, Launch{e.start_ns, e.thread});
    } else if (e.kind == EventKind::kRange && !e.has_flag(event_flags::kOnDevice)) {
      // NVTX ranges of the NCCL domain carry their collective; PyTorch's annotations a name.
      CollectiveType type = e.collective;
      if (type == CollectiveType::kNone) type = collective_from_annotation(trace.names.view(e.name));
      if (type != CollectiveType::kNone) ranges[e.thread].push_back(NcclRange{e.start_ns, e.end_ns, type, e.bytes});
    }
  }
  // Events are sorted by start, so each thread's ranges already are.

  size_t with_range = 0;
  std::vector<const NcclRange*> range_of;
  for (const Event& e : trace.events) {
    if (!e.is_comm_kernel()) continue;
    CollectiveInstance c;
    c.kernel_type = e.collective;
    c.type = e.collective;
    c.bytes = e.bytes;  // joined from its range by the step pipeline (core/nccl_join.h), when one sized it
    c.stream = e.stream;
    c.start_ns = e.start_ns;
    c.end_ns = e.end_ns;
    int64_t placed_at = e.start_ns;
    const NcclRange* range = nullptr;
    if (e.correlation != 0) {
      auto launch = launches.find(e.correlation);
      if (launch == launches.end()) {
        placed_at = -1;  // launched before the capture began: its step is not in the data
      } else {
        placed_at = launch->second.start_ns;
        auto thread_ranges = ranges.find(launch->second.thread);
        if (thread_ranges != ranges.end()) range = enclosing(thread_ranges->second, placed_at);
      }
    }
    if (placed_at >= 0) {
      c.step_index = step_holding(result.steps, placed_at);
      if (c.step_index >= 0) c.step = result.steps[static_cast<size_t>(c.step_index)].step;
    }
    if (range != nullptr) ++with_range;
    range_of.push_back(range);
    out.collectives.push_back(c);
  }
  out.refined_by_ranges =
      !out.collectives.empty() && double(with_range) >= kMinRangeCoverage * double(out.collectives.size());
  if (out.refined_by_ranges) {
    for (size_t i = 0; i < out.collectives.size(); ++i) {
      const NcclRange* range = range_of[i];
      if (range == nullptr) continue;
      if (range->type != CollectiveType::kOther) out.collectives[i].type = range->type;
      if (range->bytes != 0) out.collectives[i].bytes = range->bytes;
    }
  }
  return out;
}

MatchKeyPolicy match_key_policy(const RankCollectives& ref, const RankCollectives& other) {
  MatchKeyPolicy p;
  p.refined = ref.refined_by_ranges && other.refined_by_ranges;
  std::set<uint32_t> ref_streams;
  for (const CollectiveInstance& c : ref.collectives) ref_streams.insert(c.stream);
  p.use_stream = std::any_of(other.collectives.begin(), other.collectives.end(),
                             [&](const CollectiveInstance& c) { return ref_streams.count(c.stream) != 0; });
  return p;
}

std::vector<CollectivePair> match_by_step_ordinal(const RankCollectives& ref, const RankCollectives& other,
                                                  const MatchKeyPolicy& policy) {
  const std::map<OrdinalKey, size_t> ref_index = ordinal_index(ref, policy);
  const std::map<OrdinalKey, size_t> other_index = ordinal_index(other, policy);
  std::vector<CollectivePair> pairs;
  for (const auto& [key, i] : ref_index) {
    auto it = other_index.find(key);
    if (it != other_index.end()) pairs.push_back({i, it->second});
  }
  std::sort(pairs.begin(), pairs.end(), [](const CollectivePair& a, const CollectivePair& b) { return a.ref < b.ref; });
  return pairs;
}

std::vector<CollectivePair> match_by_nearest_end(const RankCollectives& ref, const RankCollectives& other,
                                                 const MatchKeyPolicy& policy, int64_t offset_ns,
                                                 int64_t tolerance_ns) {
  std::map<StreamKey, std::vector<size_t>> ref_by_key, other_by_key;
  for (size_t i = 0; i < ref.collectives.size(); ++i) ref_by_key[stream_key(ref.collectives[i], policy)].push_back(i);
  for (size_t i = 0; i < other.collectives.size(); ++i) {
    other_by_key[stream_key(other.collectives[i], policy)].push_back(i);
  }
  std::vector<CollectivePair> pairs;
  for (auto& [key, refs] : ref_by_key) {
    auto found = other_by_key.find(key);
    if (found == other_by_key.end()) continue;
    std::vector<size_t>& others = found->second;
    auto ref_end = [&](size_t i) { return ref.collectives[i].end_ns; };
    auto other_end = [&](size_t i) { return other.collectives[i].end_ns - offset_ns; };
    std::sort(refs.begin(), refs.end(), [&](size_t a, size_t b) { return ref_end(a) < ref_end(b); });
    std::sort(others.begin(), others.end(), [&](size_t a, size_t b) { return other_end(a) < other_end(b); });
    // In order, each end pairs with the other side's end within the tolerance; an end without
    // one (the collective is missing on the other side) is skipped.
    for (size_t a = 0, b = 0; a < refs.size() && b < others.size();) {
      const int64_t d = other_end(others[b]) - ref_end(refs[a]);
      if (d > tolerance_ns) {
        ++a;
      } else if (d < -tolerance_ns) {
        ++b;
      } else {
        pairs.push_back({refs[a++], others[b++]});
      }
    }
  }
  std::sort(pairs.begin(), pairs.end(), [](const CollectivePair& a, const CollectivePair& b) { return a.ref < b.ref; });
  return pairs;
}

}  // namespace stepwatch
