#include "stepwatch/detectors/thresholds.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "stepwatch/detectors/registry.h"

namespace stepwatch {
namespace {

std::optional<double> number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

}  // namespace

std::string apply_threshold(std::string_view spec, AnalysisConfig& config) {
  const std::string quoted = "'" + std::string(spec) + "'";
  const std::vector<std::string_view> parts = split(spec, ':');
  if (parts.size() < 3 || parts.size() > 4) return quoted + ": expected ID:PCT:MS or ID:PCT:MS:CRITICAL_PCT";
  const DetectorInfo* info = nullptr;
  for (const DetectorInfo& d : finding_kinds()) {
    if (d.id == parts[0]) info = &d;
  }
  if (info == nullptr) return quoted + ": unknown detector id '" + std::string(parts[0]) + "' (see `stepwatch detectors`)";
  if (!info->has_thresholds) {
    return quoted + ": " + std::string(info->id) +
           " has no cost to judge (it reports what the data lacks); turn it off instead (--disable / "
           "STEPWATCH_DISABLE)";
  }
  DetectorThresholds t = config.default_thresholds;
  const auto pct = number(parts[1]);
  const auto ms = number(parts[2]);
  if (!pct || *pct < 0 || *pct > 100) return quoted + ": PCT must be a number from 0 to 100";
  if (!ms || *ms < 0) return quoted + ": MS must be a number >= 0";
  t.min_pct = *pct;
  t.min_ms = *ms;
  if (parts.size() == 4) {
    const auto crit = number(parts[3]);
    if (!crit || *crit < *pct || *crit > 100) return quoted + ": CRITICAL_PCT must be a number from PCT to 100";
    t.critical_pct = *crit;
  }
  config.per_detector[std::string(info->id)] = t;
  return "";
}

}  // namespace stepwatch
