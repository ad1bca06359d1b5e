// NVTX injection: the only code that touches NVTX export tables. `InitializeInjectionNvtx2`
// (exported by libstepwatch.so, defined in nvtx_injection.cpp) hooks the CORE/CORE2 callback
// slots so that every shared object's NVTX calls (the app, libtorch, libnccl) reach us.
//
// Ranges become complete kRange events (start at push/start, end at pop/end, host thread id),
// submitted to the sink returned by `nvtx_event_sink()`. Whether a range is a step, a data
// phase or an annotation is decided downstream by name (the step and data patterns). Ranges in
// NCCL's "NCCL" domain are submitted too, with the domain's name as prefix ("NCCL:ncclAllReduce").
#pragma once

#include "core/event_sink.h"

namespace stepwatch::live {

// Provided by the live session (production) or by a test: the sink NVTX events go to. May be
// called on any thread, before or after CUDA initializes; returns nullptr when stepwatch is
// disabled (NVTX hooks then stay no-ops).
//
// NOTE: called on every NVTX push/pop/start/end, so it must stay cheap (an atomic load).
EventSink* nvtx_event_sink() noexcept;

// Provided like nvtx_event_sink(): NVTX called our InitializeInjectionNvtx2 (NVTX_INJECTION64_PATH
// names us), so stepwatch was asked for (production: live/activation.h). Called before the sink.
void nvtx_injection_started() noexcept;

struct NvtxStats {
  uint64_t ranges = 0;
  uint64_t unpaired = 0;
  uint64_t modules = 0;  // shared objects whose NVTX initialized through us
  uint64_t marks = 0;     // nvtxMark* calls: counted, not submitted
  uint64_t too_deep = 0;  // pushes past the per-thread depth cap: ignored together with their pops
};
// `ranges`, `marks` and `too_deep` are counted per thread and published every few hundred
// events, at thread exit and when the calling thread asks: exact for the calling thread and for
// threads that have exited, at most a few hundred behind for other live threads.
NvtxStats nvtx_stats() noexcept;

// Tests and benchmarks only: route the hooks to `sink` instead of `nvtx_event_sink()` (nullptr
// goes back to it). Also forgets every cached name id (ids belong to the sink that interned
// them) and the calling thread's open pushes, so each test starts clean.
void nvtx_set_sink_for_testing(EventSink* sink) noexcept;

}  // namespace stepwatch::live
