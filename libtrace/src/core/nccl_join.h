// NCCL's NVTX ranges joined to the NCCL kernels they launched, so that findings on collectives
// can say which operation and how many bytes (kernel names do not: several collectives share one
// kernel, ncclDevKernel_Generic names none, and no kernel record carries a size).
//
// NCCL pushes one range per API call in domain "NCCL" (ncclAllReduce, ...) whose payload carries
// the message size; the NVTX injection turns it into a kRange event with `collective` and `bytes`
// (nvtx/nvtx_registry.h). The kernel that call launched is found through its launch API call: the
// kernel's correlation id names the call, and the call ran on a host thread inside the range.
// Limits: collectives inside ncclGroupStart/End launch at ncclGroupEnd, outside their ranges, and
// stay without a size (their evidence then omits bytes); NCCL_NVTX_DISABLE=1 leaves every size out.
#pragma once

#include <span>

#include "stepwatch/core/event.h"
#include "stepwatch/core/name_table.h"

namespace stepwatch {

// For each NCCL kernel without a size or a type whose launch call lies inside an NCCL operation
// range on the same thread (the innermost one): sets the kernel's `bytes` to the range's message
// size when it carries one, and its `collective` from the range when the kernel name did not tell
// (kOther: RCCL's and NCCL's ncclDevKernel_Generic). With `names`, PyTorch's `nccl:<op>` profiler
// ops and NCCL/RCCL call ranges (`ncclAllReduce`) count as operation ranges too (offline traces:
// their ranges carry no decoded payload). Returns the number of kernels joined. Events in any order.
size_t attach_nccl_ranges(std::span<Event> events, const NameTable* names = nullptr);

}  // namespace stepwatch
