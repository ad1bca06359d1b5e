// libstepwatch.so's exported entry points: InitializeInjection (CUDA_INJECTION64_PATH) and the
// C API of stepwatch.h. InitializeInjectionNvtx2 lives in nvtx/ (NVTX internals stay there).
//
// Every function catches everything: nothing may throw into the host process.
#include "live/activation.h"
#include "live/live_session.h"
#include "stepwatch/stepwatch.h"

using stepwatch::live::LiveSession;

// The CUDA driver calls this once, during the process's first cuInit, on the thread running it.
// No CUDA call is allowed here; the CUPTI callback/activity setup is.
extern "C" STEPWATCH_API int InitializeInjection(void) {
  try {
    stepwatch::live::note_injected();
    if (LiveSession* s = LiveSession::get()) s->start_gpu_tracing();
  } catch (...) {
  }
  return 1;  // even when stepwatch stands down: never fail the host's cuInit
}

#define STEPWATCH_GUARDED(expr)            \
  try {                                    \
    LiveSession* s = LiveSession::get();   \
    if (s == nullptr) return STEPWATCH_ERROR_DISABLED; \
    return (expr);                         \
  } catch (...) {                          \
    return STEPWATCH_ERROR_INTERNAL;       \
  }

extern "C" {

STEPWATCH_API int stepwatch_step_begin(int64_t step) { STEPWATCH_GUARDED(s->step_begin(step)) }
STEPWATCH_API int stepwatch_step_end(void) { STEPWATCH_GUARDED(s->step_end()) }
STEPWATCH_API int stepwatch_phase_push(const char* name) { STEPWATCH_GUARDED(s->phase_push(name)) }
STEPWATCH_API int stepwatch_phase_pop(void) { STEPWATCH_GUARDED(s->phase_pop()) }
STEPWATCH_API int stepwatch_flush(void) { STEPWATCH_GUARDED(s->flush()) }
STEPWATCH_API int stepwatch_pause(void) { STEPWATCH_GUARDED(s->pause()) }
STEPWATCH_API int stepwatch_resume(void) { STEPWATCH_GUARDED(s->resume()) }
STEPWATCH_API int stepwatch_last_step(stepwatch_step_summary* out) { STEPWATCH_GUARDED(s->last_step(out)) }

STEPWATCH_API int stepwatch_enabled(void) {
  try {
    LiveSession* s = LiveSession::get();
    return s != nullptr && s->enabled() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

STEPWATCH_API const char* stepwatch_version(void) { return STEPWATCH_VERSION; }

}  // extern "C"
