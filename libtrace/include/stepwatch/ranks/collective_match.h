// Multi-rank merge, part 1: one rank's NCCL collectives, and which of them are the same
// collective on another rank.
//
// A collective instance is one NCCL kernel. Its communicator is not in a Kineto trace; the
// stream stands in for it (NCCL runs each communicator on its own stream, and ranks of one job
// create them in the same order). NCCL's own NVTX ranges (domain "NCCL", with the message size
// in their payload) or PyTorch's `nccl:<op>` annotations around the launch, when every
// collective of a rank has one, name the operation exactly (an all-to-all runs as SendRecv
// kernels) and, for NVTX, the size: they sharpen the match key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stepwatch/core/analysis.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/trace.h"

namespace stepwatch {

struct CollectiveInstance {
  CollectiveType kernel_type = CollectiveType::kNone;  // from the kernel name
  CollectiveType type = CollectiveType::kNone;         // from the enclosing NCCL range, else kernel_type
  uint64_t bytes = 0;       // message size from NCCL's NVTX range; 0 when unknown
  uint32_t stream = 0;      // communicator proxy
  int64_t start_ns = 0;     // the kernel, on the rank's own clock
  int64_t end_ns = 0;
  int step_index = -1;      // the rank's step (RankResult::steps) whose window holds the launch; -1: none
  int64_t step = -1;        // that step's number
};

struct RankCollectives {
  int rank = 0;
  std::string source;
  int64_t clock_base_ns = 0;      // Trace::clock_base_ns
  bool refined_by_ranges = false; // every collective had an NCCL range: `type`/`bytes` are exact
  std::vector<CollectiveInstance> collectives;  // in kernel start order
};

// The NCCL kernels of `trace`, each placed in the step of `result` whose window holds its launch
// call (joined by correlation id; the kernel's own start when the trace has no correlation).
// Kernels launched before the capture began have no step. `trace.events` must be sorted by
// start (analyze_rank sorts them).
RankCollectives collect_collectives(const Trace& trace, const RankResult& result);

// The collective type PyTorch's c10d annotation names ("nccl:all_reduce", "nccl:_all_gather_base",
// "nccl:all_to_all", ...); kNone for any other name.
CollectiveType collective_from_annotation(std::string_view range_name);

// A matched pair: index into the reference rank's collectives, index into the other rank's.
struct CollectivePair {
  size_t ref = 0;
  size_t other = 0;
};

// How two ranks' instances are compared: refined types and sizes only when both ranks have them;
// the stream only when the ranks share at least one collective stream.
struct MatchKeyPolicy {
  bool refined = false;
  bool use_stream = true;
};
MatchKeyPolicy match_key_policy(const RankCollectives& ref, const RankCollectives& other);

// Same (step number, stream, type, size) and same position among those: the match for complete
// traces with numbered steps. Instances without a step are not matched.
std::vector<CollectivePair> match_by_step_ordinal(const RankCollectives& ref, const RankCollectives& other,
                                                  const MatchKeyPolicy& policy);

// Same (stream, type, size), ends within `tolerance_ns` once `offset_ns` (other − ref) is
// removed, in order: the match for traces that miss collectives (sampled or truncated captures).
std::vector<CollectivePair> match_by_nearest_end(const RankCollectives& ref, const RankCollectives& other,
                                                 const MatchKeyPolicy& policy, int64_t offset_ns,
                                                 int64_t tolerance_ns);

}  // namespace stepwatch
