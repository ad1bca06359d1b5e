// Trace transforms: inject a fault into an already generated SyntheticRun (typically
// `make_scenario("gpu_bound")`) with known truth, for the faults the step program itself does
// not model — recompilation, GC pauses, checkpoints, epoch boundaries, step-time jitter.
//
// Two ways of delaying the rest of the run, both keeping every record's duration:
//
//  - a **host stall** at host time t for d: the launching thread stops. Host events at or after
//    t move by d (a step range that contains t stretches by d). GPU records launched at or after
//    t move, in start order, by a non-decreasing amount of at least d − slack, where a record's
//    slack is how long after its launch call ended it started: the work queued before t keeps
//    the GPU busy for as long as it lasts, so a stall shorter than the launch queue's lead leaves
//    no GPU idle (the first moved record moves by max(0, d − its slack)), and a longer one leaves
//    a gap that ends when the host launches again. The host keeps its original pace afterwards
//    (the queue does not refill, so a later stall finds less queued work: the stalls of one run
//    add up against the queue's lead): where a later record had less slack than the first, the GPU
//    catches up with the host and waits a little (small rule-1 gaps, well under a millisecond a
//    step in the gpu_bound runs). Every record still starts after its launch call, in stream
//    order, after what it depended on.
//  - a **GPU delay** at a GPU record boundary t for d: everything at or after t moves by d and
//    whatever spans t stretches — the GPU waited with work queued (rule 1, "other").
//
// After each transform the step windows (ProfilerStep ranges and `run.truth`) and the ground-truth
// timeline are rebuilt: GPU spans from the records themselves, host spans (data waits, blocking
// calls, dispatch, copy transfers, allocator calls) moved with the host, slowed copies with their
// records. The truth of a step is then `run.truth_for_window`, as for a run
// the model generated.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "synthetic/workload.h"

namespace stepwatch::synthetic {

// What one injection did, in the data's clock.
struct InjectedStall {
  int64_t step = 0;           // the step whose window holds it
  int64_t host_start_ns = 0;  // where the host stopped (or the GPU delay began)
  int64_t host_ns = 0;        // how long the host was held (the step's window grew by this)
  int64_t gpu_delay_ns = 0;   // how much later the first work launched after it ran on the GPU
};

// The primitives. `t` must not fall inside an API call of the launching thread (it is moved to
// that call's end if it does).
InjectedStall insert_host_stall(SyntheticRun& run, int64_t t, int64_t d);
InjectedStall insert_gpu_delay(SyntheticRun& run, int64_t t, int64_t d);

// recompilation: at each listed step, the host stops for `factor` × the run's median step time
// right after issuing the step's first CUDA call (the input copy: dynamo recompiles when the
// new batch's shape misses its guards, before the forward's first kernel). No range marks it:
// compiler frames are plain host time.
std::vector<InjectedStall> inject_recompilation(SyntheticRun& run, const std::vector<int64_t>& steps, double factor);

// gc_pause: at each listed step, a host stall of `pause_ns` at the first moment between CUDA
// calls after 40% of the window (mid-backward). With `gc_ranges`, a host range named "gc" covers
// it, as the Python shim's GC phase would.
std::vector<InjectedStall> inject_gc_pauses(SyntheticRun& run, const std::vector<int64_t>& steps, int64_t pause_ns,
                                            bool gc_ranges);

// The N-th, 2N-th, … captured steps of a run.
std::vector<int64_t> every_nth_step(const SyntheticRun& run, int n);

// checkpoint_stall: at each listed step, after its optimizer: `copies` blocking `cudaMemcpyAsync` device-to-pageable copies of `bytes_per_copy`
// each at `gb_per_s` (torch.save of CUDA tensors: each waits for the stream to drain, then
// copies), 20 µs of host between them, then `write_ns` of host time writing the file (not
// traced, as Kineto does not trace file writes). The truth's blocking spans include the copy
// calls, its pageable-copy transfers the copies' [GPU start, return), and its drained-queue idle
// the gap each call leaves when it returns.
struct CheckpointSpec {
  int copies = 8;
  uint64_t bytes_per_copy = 128ull << 20;
  double gb_per_s = 6.0;
  int64_t write_ns = 100'000'000;
};
std::vector<InjectedStall> inject_checkpoints(SyntheticRun& run, const std::vector<int64_t>& steps,
                                              const CheckpointSpec& spec = {});

// epoch_boundary_stall: at each listed step, at the loop head (the step window's
// start, before its DataLoader wait), the host waits `respawn_ns` inside a DataLoader range:
// `iter(loader)` re-creating the worker processes (persistent_workers=False).
std::vector<InjectedStall> inject_epoch_boundaries(SyntheticRun& run, const std::vector<int64_t>& steps,
                                                   int64_t respawn_ns);

// step_variance: per listed (step, delay), a GPU delay at the first GPU record boundary after the
// middle of the step's window — the GPU waits with work queued (another process, preemption).
std::vector<InjectedStall> inject_gpu_jitter(SyntheticRun& run, const std::vector<std::pair<int64_t, int64_t>>& delays);

// The median captured step time of a run, from its truth.
int64_t median_step_ns(const SyntheticRun& run);

}  // namespace stepwatch::synthetic
