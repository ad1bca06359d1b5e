// Offline reports group a detector's findings on consecutive steps into one line ("launch_bound on
// steps 3–19, 17 of 17 …") instead of repeating it per step; the JSONL keeps one record per step,
// and the live log has its own sustained rule. Used by the text and the HTML report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepwatch/core/analysis.h"

namespace stepwatch {

struct FindingGroup {
  const Finding* costliest = nullptr;  // its message stands for the group
  int64_t first_step = 0, last_step = 0;
  int fired = 0;       // findings in the group
  int span_steps = 0;  // analyzed steps from the first to the last
  double cost_ms = 0;  // summed over the group
  double max_pct = 0;
};

// Per detector, a run of its findings where at least half of the analyzed steps of the span fired
// is one group; a finding on a step that is not an analyzed step (a run-level finding) is a group
// of its own. Groups come in the order of their first finding.
std::vector<FindingGroup> group_findings(const RankResult& result);

// One line: a single finding's own log line, else
// "[stepwatch][rank R][steps A–B] ID on N of M steps, X ms in all; costliest, step S: <message>".
std::string format_group_line(const FindingGroup& group);

}  // namespace stepwatch
