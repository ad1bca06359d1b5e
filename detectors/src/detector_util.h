// Small helpers shared by detector implementations (private to detectors/).
#pragma once

#include <cstdint>
#include <string>

#include "stepwatch/core/stats.h"

namespace stepwatch::detail {

// Units come from stepwatch/core/stats.h (ms_of, ms3_of, round3): one home for every output.

}  // namespace stepwatch::detail
