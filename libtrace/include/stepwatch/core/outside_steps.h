// The time outside the steps — before the first, after the last — and one-off initialization.
//
// A capture often holds more than its steps: CUDA context creation (the first CUDA call of the
// process can take seconds), lazy module loading (the first launch of a kernel loads its module),
// cuDNN/allocator set-up, autotuning, the profiler's own start. None of it is a fault of the loop,
// and judged as a step it reads as a giant hidden sync. The step pipeline hands this time to the
// run-level detectors (RunView::before_first / after_last, the `initialization` detector) and the
// run summary accounts for it (RunSummary::time), live and offline alike: live keeps only these
// bounded summaries, never the events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch {

class Timeline;

// What kind of one-off initialization a long CUDA call is (classify.h's init_kind).
enum class InitKind : uint8_t {
  kNone,        // not initialization (a wait, a copy, or short)
  kContext,     // the data's first CUDA call, or a device/context call: creates the CUDA context
  kModuleLoad,  // a module load, a launch this long, or one the tracer saw loading its kernel's module
  kAllocator,   // a long cudaMalloc/cudaFree: the allocator's (or cuDNN's workspace) set-up
  kSetup,       // another long CUDA call (stream creation, device properties, ...)
};
std::string_view to_string(InitKind);

// A CUDA call this long is initialization, not per-step work, when it is of an initialization kind.
inline constexpr int64_t kMinInitCallNs = 10'000'000;

struct InitCall {
  std::string name;       // display name
  InitKind kind = InitKind::kNone;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int64_t gpu_idle_ns = 0;  // the part of the call with the GPU idle
};

// One stretch of the data outside the steps (before the first or after the last).
struct OutsideView {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t busy_ns = 0;  // GPU busy (C ∪ N ∪ M) in it
  int kernels = 0;
  std::vector<InitCall> init_calls;             // longest first, at most kMaxInitCalls
  int64_t init_idle_ns = 0;                     // GPU idle while an init call ran (union)
  std::vector<HostActivityStat> host_activity;  // what the host did while the GPU was idle
  static constexpr size_t kMaxInitCalls = 8;
  int64_t duration_ns() const { return end_ns - start_ns; }
  bool empty() const { return end_ns <= start_ns; }
};

// The one-off initialization calls starting in [s, e) (`first_call_ns`: the start of the data's
// first CUDA call), longest first, at most OutsideView::kMaxInitCalls; `idle_ns` gets the GPU idle
// while any of them ran.
std::vector<InitCall> init_calls_in(const Timeline& tl, int64_t s, int64_t e, int64_t first_call_ns, int64_t& idle_ns);

// The summary of [s, e) for the run-level detectors.
OutsideView describe_outside(const Timeline& tl, int64_t s, int64_t e, int64_t first_call_ns, int rank);

}  // namespace stepwatch
