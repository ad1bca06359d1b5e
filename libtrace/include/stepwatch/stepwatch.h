/*
 * stepwatch C API — mark training steps and phases for the injected stepwatch library.
 *
 * The library is loaded into a training job through CUDA_INJECTION64_PATH (or by the Python
 * shim). These functions are exported by libstepwatch.so; every one of them:
 *   - is callable from any thread, before or after cuInit (marks made before CUDA starts are kept);
 *   - never throws, never blocks on the GPU, never makes a CUDA call;
 *   - returns an int status (STEPWATCH_OK, or a negative STEPWATCH_ERROR_* code) and is a cheap
 *     no-op returning STEPWATCH_ERROR_DISABLED when stepwatch is disabled or has stood down.
 *
 * Structs passed by pointer start with their own size (`struct_size`), so that old callers keep
 * working when fields are added: set it to sizeof(the struct) before the call.
 */
#ifndef STEPWATCH_STEPWATCH_H_
#define STEPWATCH_STEPWATCH_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define STEPWATCH_API __attribute__((visibility("default")))
#else
#define STEPWATCH_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define STEPWATCH_OK 0
#define STEPWATCH_ERROR_DISABLED (-1)      /* stepwatch is off (STEPWATCH_ENABLE=0, stood down, or child after fork) */
#define STEPWATCH_ERROR_INVALID_ARG (-2)   /* NULL pointer, struct_size too small, ... */
#define STEPWATCH_ERROR_NO_STEP (-3)       /* stepwatch_step_end without a step, or no step analyzed yet */
#define STEPWATCH_ERROR_INTERNAL (-4)      /* an internal failure was caught; stepwatch keeps the job running */

/*
 * stepwatch_step_begin — a training step starts now.
 *
 * `step` is the step number shown in findings (pass a negative number to let stepwatch count
 * from 0). A begin without an end ends the previous step: calling only stepwatch_step_begin once
 * per iteration is enough. Explicit steps take priority over NVTX and profiler step ranges.
 *
 *   for (int64_t i = 0; i < iters; ++i) {
 *     stepwatch_step_begin(i);
 *     train_one_step();
 *     stepwatch_step_end();
 *   }
 */
STEPWATCH_API int stepwatch_step_begin(int64_t step);

/*
 * stepwatch_step_end — the current step ends now. Returns STEPWATCH_ERROR_NO_STEP when no step
 * is open.
 *
 *   stepwatch_step_begin(12); forward_backward(); optimizer_step(); stepwatch_step_end();
 */
STEPWATCH_API int stepwatch_step_end(void);

/*
 * stepwatch_phase_push / stepwatch_phase_pop — a named host phase on the calling thread, e.g.
 * "data" while waiting for the next batch. Phases whose name matches the data pattern
 * (STEPWATCH_DATA_PATTERN, default `DataLoader|dataloader|^data$`) are direct input-starvation
 * evidence; others annotate gaps. Phases nest per thread. The name is copied.
 *
 *   stepwatch_phase_push("data");
 *   batch = next(loader);
 *   stepwatch_phase_pop();
 */
STEPWATCH_API int stepwatch_phase_push(const char* name);
STEPWATCH_API int stepwatch_phase_pop(void);

/*
 * stepwatch_enabled — 1 when stepwatch is loaded and active in this process, else 0.
 *
 *   if (stepwatch_enabled()) printf("stepwatch is watching\n");
 */
STEPWATCH_API int stepwatch_enabled(void);

/*
 * stepwatch_flush — deliver buffered records now and judge every complete step (e.g. before a
 * planned exit or a checkpoint). Bounded: returns within about one flush period.
 *
 *   stepwatch_flush();
 */
STEPWATCH_API int stepwatch_flush(void);

/*
 * stepwatch_pause / stepwatch_resume — release CUPTI so that another tool can take it mid-run
 * (torch.profiler: CUPTI has a single subscriber) and take it back afterwards. Steps while
 * paused are not traced. Under Nsight Systems, which owns CUPTI from the start, stepwatch has
 * already stood down and these return STEPWATCH_ERROR_DISABLED.
 *
 *   stepwatch_pause();
 *   with_torch_profiler();
 *   stepwatch_resume();
 */
STEPWATCH_API int stepwatch_pause(void);
STEPWATCH_API int stepwatch_resume(void);

/* The last analyzed step, as a summary. */
typedef struct stepwatch_step_summary {
  size_t struct_size;       /* set to sizeof(stepwatch_step_summary) by the caller */
  int64_t step;             /* step number */
  int32_t rank;
  int32_t findings;         /* findings on this step */
  double duration_ms;
  double gpu_busy_pct;
  double compute_ms;
  double exposed_comm_ms;
  double copy_only_ms;
  double idle_input_ms;
  double idle_sync_ms;
  double idle_launch_ms;
  double idle_host_ms;
  double idle_other_ms;
} stepwatch_step_summary;

/*
 * stepwatch_last_step — copies the summary of the last analyzed step into `out`. Returns
 * STEPWATCH_ERROR_NO_STEP when no step has been analyzed yet.
 *
 *   stepwatch_step_summary s = {sizeof s};
 *   if (stepwatch_last_step(&s) == STEPWATCH_OK) printf("step %lld: %.1f ms\n", (long long)s.step, s.duration_ms);
 */
STEPWATCH_API int stepwatch_last_step(stepwatch_step_summary* out);

/*
 * stepwatch_version — the library version, e.g. "0.1.0". Never NULL; valid for the process's life.
 *
 *   puts(stepwatch_version());
 */
STEPWATCH_API const char* stepwatch_version(void);

#ifdef __cplusplus
}
#endif

#endif /* STEPWATCH_STEPWATCH_H_ */
