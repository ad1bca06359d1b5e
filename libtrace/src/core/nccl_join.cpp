#include "core/nccl_join.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace stepwatch {

size_t attach_nccl_ranges(std::span<Event> events) {
  // Cheap exits first: most steps of most jobs have no NCCL range or no unsized NCCL kernel.
  std::unordered_set<uint64_t> wanted;  // correlation ids of NCCL kernels still without a size
  std::unordered_map<uint32_t, std::vector<const Event*>> ranges_by_thread;
  for (const Event& e : events) {
    if (e.is_comm_kernel() && e.bytes == 0 && e.correlation != 0) wanted.insert(e.correlation);
    if (e.kind == EventKind::kRange && e.collective != CollectiveType::kNone && !e.has_flag(event_flags::kOnDevice)) {
      ranges_by_thread[e.thread].push_back(&e);
    }
  }
  if (wanted.empty() || ranges_by_thread.empty()) return 0;

  std::unordered_map<uint64_t, const Event*> launch_by_correlation;
  for (const Event& e : events) {
    if (e.kind == EventKind::kApiCall && e.correlation != 0 && wanted.count(e.correlation) != 0) {
      launch_by_correlation.emplace(e.correlation, &e);
    }
  }
  for (auto& [thread, list] : ranges_by_thread) {
    std::sort(list.begin(), list.end(), [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  }

  size_t joined = 0;
  for (Event& kernel : events) {
    if (!kernel.is_comm_kernel() || kernel.bytes != 0 || kernel.correlation == 0) continue;
    const auto call = launch_by_correlation.find(kernel.correlation);
    if (call == launch_by_correlation.end()) continue;
    const auto thread = ranges_by_thread.find(call->second->thread);
    if (thread == ranges_by_thread.end()) continue;
    const std::vector<const Event*>& list = thread->second;
    const int64_t at = call->second->start_ns;
    // The innermost enclosing range: the latest-starting one that started before the call and
    // ends after it (NCCL ranges on one thread nest or follow each other).
    auto it = std::upper_bound(list.begin(), list.end(), at, [](int64_t t, const Event* r) { return t < r->start_ns; });
    // Bounded look-back: an enclosing range is among the last few that started before the call.
    for (int looked = 0; it != list.begin() && looked < 16; ++looked) {
      const Event* range = *--it;
      if (range->end_ns < at) continue;
      if (range->bytes == 0) break;  // the operation's size is unknown (foreign or missing payload)
      kernel.bytes = range->bytes;
      if (kernel.collective == CollectiveType::kOther) kernel.collective = range->collective;
      ++joined;
      break;
    }
  }
  return joined;
}

}  // namespace stepwatch
