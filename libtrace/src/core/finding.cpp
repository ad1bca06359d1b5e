#include "stepwatch/core/finding.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "stepwatch/core/detector.h"

namespace stepwatch {

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kCritical: return "critical";
    default: return "warning";
  }
}

std::string format_log_line(const Finding& f) {
  std::string line = "[stepwatch][rank " + std::to_string(f.rank) + "][step " + std::to_string(f.step) + "] ";
  line += f.detector;
  line += ": ";
  line += f.message;
  return line;
}

void link_refinements(std::vector<Finding>& findings) {
  // A refinement whose umbrella did not fire on this step claims a part of the step nothing else
  // claims (a synchronous copy that kept the copy engine busy left no idle for hidden_sync): its
  // cost is the step's own.
  for (Finding& f : findings) {
    if (f.tax_share != TaxShare::kRefinement) continue;
    const bool umbrella = std::any_of(findings.begin(), findings.end(), [&](const Finding& u) {
      return u.tax_share == TaxShare::kOwn && u.detector == f.refines;
    });
    if (!umbrella) f.tax_share = TaxShare::kOwn;
  }
  for (Finding& umbrella : findings) {
    if (umbrella.tax_share != TaxShare::kOwn) continue;
    std::vector<std::string> refined_by;
    for (const Finding& f : findings) {
      if (f.tax_share == TaxShare::kRefinement && f.refines == umbrella.detector) refined_by.push_back(f.detector);
    }
    if (refined_by.empty()) continue;
    std::string see = " (see ";
    for (size_t i = 0; i < refined_by.size(); ++i) see += (i ? ", " : "") + refined_by[i];
    see += ")";
    const size_t fix_at = umbrella.message.find(". Fix: ");
    umbrella.message.insert(fix_at == std::string::npos ? umbrella.message.size() : fix_at, see);
    umbrella.with("refined_by", std::move(refined_by));
  }
}

std::string format_ms(int64_t ns) {
  char buf[48];
  const double ms = double(ns) / 1e6;
  if (std::fabs(ms) < 1.0) {
    std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  }
  return buf;
}

std::string format_pct(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", pct);
  return buf;
}

bool judge_cost(std::string_view detector_id, const StepView& step, int64_t cost_ns,
                const DetectorThresholds& t, Finding& out) {
  const int64_t dur = step.duration_ns();
  if (dur <= 0 || cost_ns <= 0) return false;
  const double cost_ms = double(cost_ns) / 1e6;
  const double cost_pct = 100.0 * double(cost_ns) / double(dur);
  if (cost_pct < t.min_pct || cost_ms < t.min_ms) return false;
  out.detector = std::string(detector_id);
  out.rank = step.rank;
  out.step = step.step;
  out.cost_ms = cost_ms;
  out.cost_pct = cost_pct;
  out.severity = cost_pct >= t.critical_pct ? Severity::kCritical : Severity::kWarning;
  return true;
}

}  // namespace stepwatch
