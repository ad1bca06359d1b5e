// The start-up record-layout check: before any of its records is read, the loaded libcupti must
// iterate one record of each kind the adapter reads at the sizes its version's layout says
// (record_layouts.h). cuptiActivityGetNextRecord steps by the library's own size for a
// kind, so a library whose layout for a kind differs returns the next record at another offset —
// and is refused, instead of having its records read with the wrong structs.
#pragma once

#include <string>

#include "cupti/cupti_api.h"
#include "cupti/record_layouts.h"

namespace stepwatch::live {

// Empty when the layouts agree; else one human line naming the first kind that differs.
std::string check_record_layouts(const CuptiApi& api, const RecordLayout& layout) noexcept;

}  // namespace stepwatch::live
