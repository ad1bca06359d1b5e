#include "stepwatch/report/finding_groups.h"

#include <cstdio>
#include <map>
#include <unordered_map>

namespace stepwatch {

std::vector<FindingGroup> group_findings(const RankResult& r) {
  std::unordered_map<int64_t, int> index_of;  // step number -> position among the analyzed steps
  for (size_t i = 0; i < r.steps.size(); ++i) index_of.emplace(r.steps[i].step, static_cast<int>(i));
  std::vector<FindingGroup> groups;
  std::map<std::string, size_t> open;          // detector -> its group still accepting findings
  std::map<std::string, int> open_first_index;  // detector -> that group's first step position
  for (const Finding& f : r.findings) {
    const auto at = index_of.find(f.step);
    const bool per_step = at != index_of.end() && !f.established;
    if (per_step) {
      const auto it = open.find(f.detector);
      if (it != open.end()) {
        FindingGroup& g = groups[it->second];
        const int span = at->second - open_first_index[f.detector] + 1;
        if (at->second > index_of[g.last_step] && 2 * (g.fired + 1) >= span) {
          ++g.fired;
          g.last_step = f.step;
          g.span_steps = span;
          g.cost_ms += f.cost_ms;
          g.max_pct = std::max(g.max_pct, f.cost_pct);
          if (f.cost_ms > g.costliest->cost_ms) g.costliest = &f;
          continue;
        }
      }
    }
    FindingGroup g;
    g.costliest = &f;
    g.first_step = g.last_step = f.step;
    g.fired = 1;
    g.span_steps = 1;
    g.cost_ms = f.cost_ms;
    g.max_pct = f.cost_pct;
    groups.push_back(g);
    if (per_step) {
      open[f.detector] = groups.size() - 1;
      open_first_index[f.detector] = at->second;
    }
  }
  return groups;
}

std::string format_group_line(const FindingGroup& g) {
  const Finding& f = *g.costliest;
  if (g.fired == 1) return format_log_line(f);
  char cost[48];
  std::snprintf(cost, sizeof cost, "%.1f ms in all", g.cost_ms);
  return "[stepwatch][rank " + std::to_string(f.rank) + "][steps " + std::to_string(g.first_step) + "–" +
         std::to_string(g.last_step) + "] " + f.detector + " on " + std::to_string(g.fired) + " of " +
         std::to_string(g.span_steps) + " steps, " + cost + "; costliest, step " + std::to_string(f.step) + ": " +
         f.message;
}

}  // namespace stepwatch
