// Per-detector thresholds for users: `stepwatch analyze --threshold ID:PCT:MS[:CRITICAL_PCT]` and
// STEPWATCH_THRESHOLDS=ID:PCT:MS[:CRITICAL_PCT],... (docs/detectors.md "Thresholds").
//
// A detector's finding needs its cost >= PCT % of the step and >= MS ms; it is critical from
// CRITICAL_PCT % (default 25). Trend detectors (step_variance, throttle) apply the same rule to
// their cost; `late_rank` (multi-rank) uses PCT/MS as "late by at least"; no_step_marks and
// data_loss have no cost and refuse thresholds (turn them off with --disable / STEPWATCH_DISABLE).
#pragma once

#include <string>
#include <string_view>

#include "stepwatch/core/config.h"

namespace stepwatch {

// Parses one "ID:PCT:MS[:CRITICAL_PCT]" into config.per_detector. Returns "" on success, else one
// line saying what is wrong (unknown id, a detector without thresholds, a bad number).
std::string apply_threshold(std::string_view spec, AnalysisConfig& config);

}  // namespace stepwatch
