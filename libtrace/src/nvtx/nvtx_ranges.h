// Internal to libtrace/src/nvtx/: what the entry points (nvtx_injection.cpp) need from the range
// bookkeeping (nvtx_ranges.cpp).
#pragma once

#include "core/event_sink.h"

namespace stepwatch::live::nvtx {

// The test override when set, else nvtx_event_sink(). Null: stepwatch is disabled.
EventSink* current_sink() noexcept;

// One more shared object's NVTX instance now calls our hooks.
void count_module_initialized() noexcept;

// Registers the pthread_atfork child handler (once per process): a forked child must not inherit
// a held spinlock or the parent's thread id.
void install_fork_handler_once() noexcept;

}  // namespace stepwatch::live::nvtx
