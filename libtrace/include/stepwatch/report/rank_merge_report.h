// The merged (multi-rank) analysis in the two output forms: a text section after the per-rank
// reports, and JSONL `finding` records after the last rank's summary. A merged finding's `rank`
// is its first straggler rank (all of them are in evidence.straggler_ranks).
#pragma once

#include <ostream>

#include "stepwatch/ranks/rank_merge.h"

namespace stepwatch {

void write_merged_text(const MergedAnalysis& merged, std::ostream& out, size_t max_table_rows = 50);
void write_merged_jsonl(const MergedAnalysis& merged, std::ostream& out);

}  // namespace stepwatch
