// The bytes of one activity record of a kind in a CUPTI version's layout (record_layouts.h): where
// the converter locates what follows the last record read, and what the record builder appends.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>

#include "cupti/record_layouts.h"

namespace stepwatch::live {

// 0 for the kinds stepwatch does not read.
inline size_t record_size(const RecordLayout& layout, uint32_t kind) noexcept {
  switch (static_cast<CUpti_ActivityKind>(kind)) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return layout.kernel.bytes;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return layout.memcpy.bytes;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return layout.peer_copy.bytes;
    case CUPTI_ACTIVITY_KIND_MEMSET: return layout.memset.bytes;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return layout.sync.bytes;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return layout.api.bytes;
    case CUPTI_ACTIVITY_KIND_MEMORY2: return layout.memory.bytes;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return layout.overhead.bytes;
    default: return 0;
  }
}

}  // namespace stepwatch::live
