// A training loop played live against the fake libcupti's faithful model (fake_cupti.h, "the
// faithful model"): the host program of each step makes its CUDA calls through the model (which
// fires CUPTI's callbacks and writes the activity records CUPTI would, into buffers it hands back
// only as CUPTI does), marks steps and data phases through the C API, and sleeps or spins for its
// Python time. Nothing is pre-timed: the records' times are the model GPU's, the marks' the host's.
//
//   sim:<name>   healthy (GPU-bound, host one step ahead, >= 5,000 kernels/s, no per-step sync,
//                a 3 ms DataLoader fetch per step hidden by the host running ahead),
//                starvation, item_sync, pageable, exposed_comm, exposed_a2a, launch_bound,
//                allocator_churn, host_pause (a host-side pause per step: GPU idle, no fault of
//                the kinds above), memset_starvation (the GPU resumes each step with a memset)
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fake_cupti/fake_cupti.h"

namespace stepwatch::e2e {

// The C API of the loaded libstepwatch.so.
struct CApi {
  int (*step_begin)(int64_t) = nullptr;
  int (*step_end)() = nullptr;
  int (*phase_push)(const char*) = nullptr;
  int (*phase_pop)() = nullptr;
  int (*pause)() = nullptr;
  int (*resume)() = nullptr;
};

struct SimProgram {
  int kernels_per_step = 160;   // 1/3 forward, 2/3 backward-and-optimizer
  int64_t kernel_ns = 150'000;  // 160 x 150 us = 24 ms of GPU per step: 6,667 kernels/s
  int64_t host_gap_ns = 10'000;  // Python between two launches
  int64_t data_wait_ns = 200'000;
  bool input_copy = true;       // 16 MiB pinned async HtoD (0.8 ms)
  bool pageable_input = false;  // 64 MiB from pageable memory (blocks) + 4 ms of batch preparation
  int item_syncs = 0;           // .item(): a synchronous 4-byte DtoH copy, then post_sync_host_ns
  int64_t post_sync_host_ns = 0;
  int64_t allreduce_ns = 0;     // one all-reduce after backward, the optimizer waits for it
  int a2a_layers = 0;           // forward layers waiting on an all-to-all of a2a_ns (in nccl:all_to_all)
  int64_t a2a_ns = 600'000;
  int allocator_misses = 0;     // per step: cudaFree (synchronizes) + cudaMalloc
  int64_t host_pause_ns = 0;    // host-only time at the end of each step (the GPU drains)
  bool memset_first = false;    // each step's GPU work starts with a memset (after the data wait)
  int queue_depth = 0;          // launches in flight before a launch blocks; 0 = one step's worth
};

// The program of `name` (without "sim:"); false for an unknown name.
bool sim_program(const std::string& name, SimProgram& out);

// Runs `steps` steps. `before_step(step)` runs at the start of each (modes: a torch.profiler
// session, ...). Returns the kernels launched; `windows` gets each step's [begin, end) as the host
// marked it (CLOCK_REALTIME), for the ground truth (FakeCuptiSim::busy_ns).
uint64_t run_sim_loop(const SimProgram& p, int steps, const CApi& c, const FakeCuptiSim& sim,
                      void (*before_step)(int step, void* ctx), void* ctx,
                      std::vector<std::pair<int64_t, int64_t>>* windows = nullptr);

// A thread polling cudaEventQuery on an idle stream every `period_ns` (the NCCL watchdog, the
// caching allocator): completed queries, each of which leaves a sync record. Stops when `stop`.
void poll_event_queries(const FakeCuptiSim& sim, int64_t period_ns, const std::atomic<bool>& stop);

}  // namespace stepwatch::e2e
