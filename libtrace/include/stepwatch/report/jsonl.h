// The JSONL output contract (ARCHITECTURE.md "Output contracts"): `meta` first, then per rank
// its `step` and `finding` records and a closing `summary`. Used by `stepwatch analyze --json`
// and by the live library's steps.jsonl / findings.jsonl, so both stay one schema.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "stepwatch/core/analysis.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch {

inline constexpr int kJsonlSchema = 1;

std::string jsonl_meta();
std::string jsonl_step(const StepView& step);
std::string jsonl_finding(const Finding& finding);
std::string jsonl_summary(const RunSummary& summary);
// The summary as a JSON object (the live summary.json adds its live-only tables to it).
nlohmann::ordered_json summary_json(const RunSummary& summary);

// Steps, then findings, then the summary of one rank (one object per line).
void write_jsonl(const RankResult& result, std::ostream& out);

}  // namespace stepwatch
