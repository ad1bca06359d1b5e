// Evidence helpers of the copy and memory detectors (private to detectors/): the blocking copy
// calls of a step summed over the names in its BlockingCallStat list (sync_memcpy,
// pageable_memcpy), and byte / rate formatting for messages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "stepwatch/core/step_view.h"

namespace stepwatch::detail {

struct BlockingCopySummary {
  int calls = 0;
  uint64_t bytes = 0;
  int64_t copy_gpu_ns = 0;
  int64_t host_ns = 0;
  int64_t cost_ns = 0;  // the copies' own cost: BlockingCallStat::transfer_no_compute_ns
  std::vector<std::string> names;
  std::vector<std::string> directions;     // "HtoD", "DtoH", … in order of appearance
  std::vector<std::string> host_memories;  // "pageable", "pinned", …

  double gb_per_s() const { return copy_gpu_ns > 0 ? double(bytes) / double(copy_gpu_ns) : 0.0; }
};

template <typename Pred>
BlockingCopySummary summarize_blocking_copies(const StepView& step, Pred is_selected) {
  auto add_unique = [](std::vector<std::string>& list, std::string_view value) {
    for (const std::string& v : list) {
      if (v == value) return;
    }
    list.emplace_back(value);
  };
  BlockingCopySummary s;
  for (const BlockingCallStat& c : step.blocking) {
    if (!is_selected(c)) continue;
    s.calls += c.count;
    s.bytes += c.bytes;
    s.copy_gpu_ns += c.copy_gpu_ns;
    s.host_ns += c.host_ns;
    s.cost_ns += c.transfer_no_compute_ns;
    s.names.push_back(c.name);
    add_unique(s.directions, to_string(c.copy_kind));
    add_unique(s.host_memories, to_string(c.host_memory));
  }
  return s;
}

inline std::string join(const std::vector<std::string>& list, std::string_view separator) {
  std::string out;
  for (const std::string& s : list) out += (out.empty() ? "" : std::string(separator)) + s;
  return out;
}

// "64.0 MiB", "512 KiB", "4 B".
inline std::string format_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1ull << 30));
  else if (bytes >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1ull << 20));
  else if (bytes >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.0f KiB", double(bytes) / double(1ull << 10));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

// "6.0 GB/s" (bytes per ns == GB/s).
inline std::string format_gb_per_s(double gb_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", gb_per_s);
  return buf;
}

}  // namespace stepwatch::detail
