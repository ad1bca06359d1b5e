// The offline analysis of a trace as its report lines (every step record with its gaps, every
// finding, the summary) at a given batch size (step_batches.h) and number of threads, for the
// batch- and thread-parity tests of the scenario and corpus suites.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/report/jsonl.h"

namespace stepwatch::testing {

struct BatchLines {
  std::vector<std::string> steps, findings;
  std::string summary;
  size_t windows = 0;
  int timelines = 0;  // how many Timelines the final pass built
};

inline BatchLines analyze_in_batches(const Trace& input, size_t batch_events, unsigned threads = 1) {
  Trace trace = input;
  const AnalysisConfig config;
  const RankResult r =
      analyze_rank(trace, std::max(trace.rank, 0), config, make_detectors(config), StepDetail::kFull, batch_events, threads);
  BatchLines out;
  for (const StepView& v : r.steps) out.steps.push_back(jsonl_step(v));
  for (const Finding& f : r.findings) out.findings.push_back(jsonl_finding(f));
  out.summary = jsonl_summary(r.summary);
  out.windows = r.segmentation.steps.size();
  out.timelines = r.segmentation.timelines;
  return out;
}

// Every step record, finding and the summary of `b` equal `a`'s.
inline void expect_same_lines(const BatchLines& a, const BatchLines& b, const std::string& what) {
  ASSERT_EQ(a.steps.size(), b.steps.size()) << what;
  for (size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i], b.steps[i]) << what << " step " << i;
  ASSERT_EQ(a.findings.size(), b.findings.size()) << what;
  for (size_t i = 0; i < a.findings.size(); ++i) EXPECT_EQ(a.findings[i], b.findings[i]) << what;
  EXPECT_EQ(a.summary, b.summary) << what;
}

}  // namespace stepwatch::testing
