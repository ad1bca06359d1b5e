// One self-contained HTML page for one or more ranks: where the step time goes (a stacked bar
// per step and for the whole run), step time over steps, the findings with their fix directions,
// top kernels, and the nsys-style summaries (blocking calls; copies by direction with GB/s).
//
// Contract: no network and no script. Styles and charts are inline (CSS, SVG; tooltips are SVG
// <title>s), and a Content-Security-Policy meta tag forbids any fetch. Every name from the trace is
// HTML-escaped; every number written is finite. Long runs aggregate consecutive steps into at most
// `max_step_bars` bars, so the page stays small for any number of steps.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "stepwatch/core/analysis.h"
#include "stepwatch/ranks/rank_merge.h"

namespace stepwatch {

struct HtmlReportOptions {
  std::string title = "stepwatch report";
  size_t max_step_bars = 300;      // more steps: each bar is the mean of consecutive steps
  size_t max_finding_rows = 100;   // the costliest findings; the per-detector totals count all
  size_t max_table_rows = 20;      // top kernels, blocking calls
};

// One section per rank, in the order given; an overview of all ranks first when there are several,
// then (`merged` not null: several ranks analyzed together) the multi-rank verdict — the clock
// offsets, the late ranks per step, and the late_rank findings with their cause — since this page
// is what people share.
void write_html_report(const std::vector<RankResult>& ranks, std::ostream& out, const HtmlReportOptions& options = {},
                       const MergedAnalysis* merged = nullptr);

}  // namespace stepwatch
