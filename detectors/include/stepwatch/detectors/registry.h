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
};

std::span<const DetectorInfo> registered_detectors();

// All enabled detectors (AnalysisConfig::enabled), in registry order.
std::vector<std::unique_ptr<Detector>> make_detectors(const AnalysisConfig& config);

}  // namespace stepwatch
