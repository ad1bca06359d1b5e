// Where in the program a finding's time went (core/call_sites.h): the job-log phrase for the top
// site and the `sites` evidence rows.
#pragma once

#include <string>
#include <vector>

#include "stepwatch/core/finding.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch {

// "from `Tensor.item()` in log_metrics() defined at train.py:40 (5 blocking calls, 4.1 ms)",
// "at train.py:142 in train_step (1 blocking call, 2.0 ms)". `.item()` is a read-back copy and, with
// pinned memory, a stream sync: one call of the user's can be two blocking calls.
std::string site_phrase_of(const CallSiteStat& site);
std::vector<SiteEvidence> site_evidence(const std::vector<CallSiteStat>& sites);

}  // namespace stepwatch
