#include "core/nccl_join.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "stepwatch/core/classify.h"

namespace stepwatch {
namespace {

// The collective a host range names: its own (NCCL's NVTX ranges, decoded live), or — with the
// names at hand — PyTorch's `nccl:all_reduce`-style ops and NCCL/RCCL call names (`ncclAllReduce`).
// Only a definite type counts: `ncclGroupEnd` names none.
CollectiveType range_collective(const Event& e, const NameTable* names, std::unordered_map<NameId, CollectiveType>& cache) {
  if (e.collective != CollectiveType::kNone) return e.collective;
  if (names == nullptr) return CollectiveType::kNone;
  auto [it, inserted] = cache.try_emplace(e.name, CollectiveType::kNone);
  if (inserted) {
    const std::string_view n = names->view(e.name);
    const CollectiveType t = n.substr(0, 4) == "nccl" || n.substr(0, 4) == "rccl" ? classify_collective(n)
                                                                                     : CollectiveType::kNone;
    it->second = t == CollectiveType::kOther ? CollectiveType::kNone : t;
  }
  return it->second;
}

}  // namespace

size_t attach_nccl_ranges(std::span<Event> events, const NameTable* names) {
  // Cheap exits first: most steps of most jobs have no NCCL range, or no kernel to learn from one.
  std::unordered_set<uint64_t> wanted;  // correlation ids of NCCL kernels without a size or a type
  std::unordered_map<NameId, CollectiveType> cache;
  struct OpRange {
    const Event* range;
    CollectiveType type;
  };
  std::unordered_map<uint32_t, std::vector<OpRange>> ranges_by_thread;
  for (const Event& e : events) {
    if (e.is_comm_kernel() && e.correlation != 0 && (e.bytes == 0 || e.collective == CollectiveType::kOther)) {
      wanted.insert(e.correlation);
    }
    if (e.kind != EventKind::kRange || e.has_flag(event_flags::kOnDevice)) continue;
    const CollectiveType t = range_collective(e, names, cache);
    if (t != CollectiveType::kNone) ranges_by_thread[e.thread].push_back({&e, t});
  }
  if (wanted.empty() || ranges_by_thread.empty()) return 0;

  std::unordered_map<uint64_t, const Event*> launch_by_correlation;
  for (const Event& e : events) {
    if (e.kind == EventKind::kApiCall && e.correlation != 0 && wanted.count(e.correlation) != 0) {
      launch_by_correlation.emplace(e.correlation, &e);
    }
  }
  for (auto& [thread, list] : ranges_by_thread) {
    std::sort(list.begin(), list.end(),
              [](const OpRange& a, const OpRange& b) { return a.range->start_ns < b.range->start_ns; });
  }

  size_t joined = 0;
  for (Event& kernel : events) {
    const bool unsized = kernel.bytes == 0;
    const bool unnamed = kernel.collective == CollectiveType::kOther;
    if (!kernel.is_comm_kernel() || (!unsized && !unnamed) || kernel.correlation == 0) continue;
    const auto call = launch_by_correlation.find(kernel.correlation);
    if (call == launch_by_correlation.end()) continue;
    const auto thread = ranges_by_thread.find(call->second->thread);
    if (thread == ranges_by_thread.end()) continue;
    const std::vector<OpRange>& list = thread->second;
    const int64_t at = call->second->start_ns;
    // The innermost enclosing range: the latest-starting one that started before the call and
    // ends after it (NCCL ranges on one thread nest or follow each other).
    auto it = std::upper_bound(list.begin(), list.end(), at,
                               [](int64_t t, const OpRange& r) { return t < r.range->start_ns; });
    // Bounded look-back: an enclosing range is among the last few that started before the call.
    for (int looked = 0; it != list.begin() && looked < 16; ++looked) {
      const OpRange& op = *--it;
      if (op.range->end_ns < at) continue;
      // ncclDevKernel_Generic (RCCL, NCCL's symmetric kernels) names no operation: the range does.
      if (unnamed) kernel.collective = op.type;
      if (unsized && op.range->bytes != 0) kernel.bytes = op.range->bytes;
      joined += (unnamed || (unsized && op.range->bytes != 0)) ? 1 : 0;
      break;
    }
  }
  return joined;
}

}  // namespace stepwatch
