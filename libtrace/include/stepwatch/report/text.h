// Human-readable report of one rank: the per-step table ("where did the step time go"),
// findings as log lines, and the summary with the goodput tax per detector.
#pragma once

#include <ostream>

#include "stepwatch/core/analysis.h"

namespace stepwatch {

struct TextReportOptions {
  size_t max_table_rows = 50;  // longer runs show the first and last rows
};

void write_text_report(const RankResult& result, std::ostream& out, const TextReportOptions& options = {});

}  // namespace stepwatch
