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

// One row of a finding's `sites` evidence: where in the program the time went (call_sites.h).
struct SiteEvidence {
  std::string site;  // "train.py:142 in train_step"
  std::string call;  // "Tensor.item()"; empty when not known
  int64_t calls = 0;
  double blocked_ms = 0.0;  // GPU idle while the host was blocked in them
  bool operator==(const SiteEvidence&) const = default;
};

using EvidenceValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<std::string>,
                                   std::vector<SiteEvidence>>;

// How a finding's cost counts in the run's total goodput tax (RunSummary::tax_ms), so that each
// idle interval is counted once (ARCHITECTURE.md: "a refinement's cost overlaps its umbrella's").
enum class TaxShare : uint8_t {
  kOwn,          // its own part of the step: umbrellas, and costs no other finding claims
  kRefinement,   // a part of its umbrella's cost (`refines`): nested under it, never added
  kOverlapping,  // a view across causes (trends, scores, time outside steps): never added
};

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
  TaxShare tax_share = TaxShare::kOwn;
  std::string refines;  // kRefinement: the umbrella detector's id (e.g. "hidden_sync")
  std::vector<std::pair<std::string, EvidenceValue>> evidence;  // in insertion order

  Finding& with(std::string key, EvidenceValue value) {
    evidence.emplace_back(std::move(key), std::move(value));
    return *this;
  }
};

// The log-line form: "[stepwatch][rank 0][step 105] input_starvation: <message>".
std::string format_log_line(const Finding& finding);

// One step's findings, in order: each umbrella that a refinement of the same step refines names it
// (evidence `refined_by`, and "see <id>" before the message's fix), so the general message points to
// the specific one. A refinement whose umbrella is not among them becomes kOwn: nothing else
// counts its cost.
void link_refinements(std::vector<Finding>& step_findings);

}  // namespace stepwatch
