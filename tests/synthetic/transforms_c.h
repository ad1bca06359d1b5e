// Trace transforms for the catalog's kernel-duration faults (throttle, overlap_slowdown,
// straggler) and for step inference (ranges removed), injected into a generated SyntheticRun
// with known truth. See transforms.h for the host-stall and GPU-delay primitives.
//
// The primitive here is a **stretch**: a GPU record runs `extra` longer. It is applied as a
// monotone time warp of the whole run: every timestamp x (GPU records, host events, step windows
// and every span of the ground-truth timeline) moves to x + Σ extra_i over the stretches whose
// anchor lies before x. Whatever spans an anchor stretches, whatever starts after it moves, so
// every order of the run (a record after its launch call, stream order, dependencies) holds.
// The anchor of a kernel's own slowdown is just after its start; for an NCCL kernel waiting for a late peer
// it is the first compute-stream boundary inside it (the compute kernel running then keeps its
// duration; the work after it waits for the collective, as the optimizer does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synthetic/workload.h"

namespace stepwatch::synthetic {

struct Stretch {
  int64_t anchor_ns = 0;  // in the data's clock before this transform
  int64_t extra_ns = 0;
};

// What one kernel-duration injection did.
struct InjectedSlowdown {
  int64_t step = 0;        // the step whose window the stretched record starts in (after the transform)
  std::string kernel;      // name
  int64_t extra_ns = 0;    // added GPU time
  bool collective = false;
};

// Applies the stretches (any order) and recomputes the truth of every step.
void apply_stretches(SyntheticRun& run, std::vector<Stretch> stretches);

// throttle: every compute kernel starting (on the GPU) in the windows of steps >= `from_step`
// runs `factor` times longer (uniform DVFS / thermal slowdown: same kernels, same count).
std::vector<InjectedSlowdown> inject_throttle(SyntheticRun& run, int64_t from_step, double factor);

// overlap_slowdown: every compute kernel that overlaps an NCCL kernel runs `factor` times longer
// (stream-priority inversion: NCCL's SMs and memory bandwidth taken from compute), in every step.
std::vector<InjectedSlowdown> inject_overlap_slowdown(SyntheticRun& run, double factor);

// straggler: the NCCL kernels starting in the windows of the listed steps run `factor` times
// longer (this rank waits inside the collective for a late peer).
std::vector<InjectedSlowdown> inject_straggler(SyntheticRun& run, const std::vector<int64_t>& steps, double factor);

// Removes the host ranges with the given name (e.g. the optimizer's, to make step inference
// find the period of the kernel sequence instead).
void remove_ranges(SyntheticRun& run, std::string_view name);

}  // namespace stepwatch::synthetic
