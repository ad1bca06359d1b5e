#include "site_evidence.h"

#include "stepwatch/core/detector.h"
#include "stepwatch/core/stats.h"

namespace stepwatch {

std::string site_phrase_of(const CallSiteStat& site) {
  std::string s;
  if (!site.call.empty()) s = "from `" + site.call + "` ";
  // Kineto's frames give the function's definition line ("f() defined at x.py:40"); live frames
  // the line executing ("x.py:142 in f").
  s += site.where.find(" defined at ") != std::string::npos ? "in " : "at ";
  s += site.where;
  s += " (" + std::to_string(site.calls) + (site.calls == 1 ? " blocking call, " : " blocking calls, ") + format_ms(site.gpu_idle_ns) + ")";
  return s;
}

std::vector<SiteEvidence> site_evidence(const std::vector<CallSiteStat>& sites) {
  std::vector<SiteEvidence> rows;
  rows.reserve(sites.size());
  for (const CallSiteStat& s : sites) rows.push_back({s.where, s.call, s.calls, ms3_of(s.gpu_idle_ns)});
  return rows;
}

}  // namespace stepwatch
