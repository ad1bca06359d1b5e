// The detector registry: every detector id, its one-line description, and its factory.
// Detector ids are stable API (they appear in logs, JSONL and configuration).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

struct DetectorInfo {
  std::string_view id;
  std::string_view description;
  std::unique_ptr<Detector> (*make)(const AnalysisConfig& config);
  // Judged by a cost against thresholds (AnalysisConfig::per_detector). The detectors that report
  // what the data lacks (no_step_marks, data_loss) have no cost and no thresholds.
  bool has_thresholds = true;
};

std::span<const DetectorInfo> registered_detectors();

// Every finding kind a user can see: the per-rank detectors, then the multi-rank merge's
// `late_rank` (make == nullptr: not a per-rank detector).
std::span<const DetectorInfo> finding_kinds();

// All enabled detectors (AnalysisConfig::enabled), in registry order.
std::vector<std::unique_ptr<Detector>> make_detectors(const AnalysisConfig& config);

}  // namespace stepwatch
