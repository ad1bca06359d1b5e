// Multi-rank synthetic runs: N ranks of one data-parallel job, coupled through their
// all-reduces, each with its own clock — for the merged (straggler) analysis.
//
// Each rank runs the same step program (same collectives in the same order, type and size), with
// its own kernel-duration draw. An all-reduce starts on a rank when that rank arrives (its
// compute stream reached the gradients) and ends on every rank at the same moment: the last
// arrival plus the collective's own time. The early ranks therefore wait inside their NCCL
// kernels, which run longer — the catalog's signature. The coupling is solved by running the
// ranks' models repeatedly, each time with the collective ends of the previous round, until no
// end moves (the ends only grow, so this converges; one round settles at least one collective).
//
// A straggler rank is slower in one way: `kCompute` (its kernels take 1 + 0.5 × magnitude as
// long: a throttled or overloaded GPU), `kInput` (its DataLoader waits 40 ms × magnitude per
// step: a slow input pipeline). Every rank's data is finally shifted by its clock offset
// (hosts' clocks disagree; the merged analysis must not care).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synthetic/workload.h"

namespace stepwatch::synthetic {

enum class StragglerKind : uint8_t { kNone, kCompute, kInput };

struct MultiRankOptions {
  int ranks = 4;
  std::string scenario = "ddp_overlap";  // the per-rank step program; it must have all-reduces
  int steps = 8;
  uint64_t seed = 1;
  int straggler_rank = -1;
  StragglerKind straggler = StragglerKind::kNone;
  double magnitude = 1.0;
  std::vector<int64_t> clock_offsets_ns;  // per rank, added to all its times (missing ranks: 0)
  NcclNaming nccl_naming = NcclNaming::kDevKernel;
  int64_t end_skew_ns = 4'000;  // rank r's collective ends r × this after rank 0's (not exactly simultaneous)
  // Per rank, a factor on its kernel durations (missing ranks: 1): several ranks slow by different
  // amounts, so that the less slow ones arrive late against the median yet wait inside the
  // collective for the slowest. (Each step starts after the previous all-reduce, so the lateness
  // repeats every step; a host-side delay would be absorbed by the launch queue.)
  std::vector<double> kernel_scale;
};

// One SyntheticRun per rank (trace.rank = r). Throws std::invalid_argument when the scenario has
// no all-reduce or the options are out of range.
std::vector<SyntheticRun> generate_ranks(const MultiRankOptions& options);

// Moves every time of the run (events, truth, ground-truth timeline) by `offset_ns`.
void shift_clock(SyntheticRun& run, int64_t offset_ns);

}  // namespace stepwatch::synthetic
