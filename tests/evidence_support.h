// Reading a finding's evidence in tests: a typed value by key; a missing key is a test failure
// (and a default value), not an exception.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "stepwatch/core/finding.h"

namespace stepwatch {

inline bool has_evidence(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.evidence) {
    if (k == key) return true;
  }
  return false;
}

template <typename T>
T evidence(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.evidence) {
    if (k == key) return std::get<T>(v);
  }
  ADD_FAILURE() << f.detector << " has no evidence '" << key << "'";
  return T{};
}

}  // namespace stepwatch
