// Shared by the detector unit tests: a sink that keeps findings, and a detector by id.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <vector>

#include "stepwatch/core/detector.h"
#include "stepwatch/detectors/registry.h"

namespace stepwatch::testing {


inline std::unique_ptr<Detector> make(std::string_view id, const AnalysisConfig& config = {}) {
  for (const DetectorInfo& d : registered_detectors()) {
    if (d.id == id) return d.make(config);
  }
  ADD_FAILURE() << "not registered: " << id;
  return nullptr;
}

}  // namespace stepwatch::testing
