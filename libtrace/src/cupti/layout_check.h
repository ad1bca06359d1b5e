// The start-up record-layout check: before any of its records is read, the loaded libcupti must
// iterate one record of each kind the adapter reads at the sizes of the structs the adapter reads
// them with (cupti_records.cpp). cuptiActivityGetNextRecord steps by the library's own size for a
// kind, so a library whose layout for a kind differs returns the next record at another offset —
// and is refused, instead of having its records read with the wrong structs.
#pragma once

#include <string>

#include "cupti/cupti_api.h"

namespace stepwatch::live {

// Empty when the layouts agree; else one human line naming the first kind that differs.
std::string check_record_layouts(const CuptiApi& api) noexcept;

}  // namespace stepwatch::live
