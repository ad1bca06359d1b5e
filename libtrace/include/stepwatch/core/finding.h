// A finding: one detector's verdict on one faulty step (or on the run, for trend detectors).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace stepwatch {

enum class Severity : uint8_t { kInfo, kWarning, kCritical };
std::string_view to_string(Severity);

using EvidenceValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<std::string>>;

struct Finding {
  std::string detector;
  int rank = 0;
  int64_t step = 0;
  Severity severity = Severity::kWarning;
  double cost_ms = 0.0;   // the goodput tax of this step
  double cost_pct = 0.0;  // of the step's wall time
  std::string message;    // signature + fix direction, one line
  // The finding states a pattern already established from history (a trend, a periodic or
  // irregular stall): the live log reports it at once instead of waiting for it to recur on
  // most recent steps (the sustained rule is for per-step costs).
  bool established = false;
  std::vector<std::pair<std::string, EvidenceValue>> evidence;  // in insertion order

  Finding& with(std::string key, EvidenceValue value) {
    evidence.emplace_back(std::move(key), std::move(value));
    return *this;
  }
};

// The log-line form: "[stepwatch][rank 0][step 105] input_starvation: <message>".
std::string format_log_line(const Finding& finding);

}  // namespace stepwatch
