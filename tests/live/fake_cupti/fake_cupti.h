/* A fake libcupti for tests: libstepwatch_fake_cupti.so (built by tests/live/fake_cupti.cmake into
 * the build's lib/ directory).
 *
 * What it is
 *   - It exports the cupti* control functions the adapter dlsyms (cuptiSubscribe_v2,
 *     cuptiEnableCallback, cuptiActivityEnable, cuptiActivityRegisterCallbacks,
 *     cuptiActivityFlushAll, cuptiActivityGetNumDroppedRecords, ...) with behaviour the test controls
 *     and records.
 *   - It forwards cuptiActivityGetNextRecord, cuptiGetResultString, cuptiGetCallbackName and
 *     cuptiGetVersion to the REAL libcupti.so.13 (dlopen'ed inside the fake), so record parsing is
 *     always the real one. No GPU and no driver are needed.
 *   - Two ways to drive the adapter. By hand: buffer requests/completions and callbacks are made
 *     from the calling test thread; buffers queued with fake_cupti_complete_on_next_flush are
 *     completed inside the next cuptiActivityFlushAll, on the flushing thread. Faithfully: the
 *     model below (fake_cupti_sim_*) plays CUDA calls against a model GPU and behaves as the CUDA
 *     13.0 headers document (each behaviour cited there), production defaults on, each switchable
 *     (FakeCuptiModel); and fake_cupti_kineto_* plays torch.profiler's Kineto in the same process.
 *   - Its soname is libcupti.so.13 (fake_cupti.cmake): loaded first, it is "the already-loaded
 *     libcupti" that stepwatch must prefer, as torch's copy is in a real job.
 *
 * How to use it
 *   Linked or dlopen'ed. The adapter must load the same file (load_cupti_api(path) /
 *   STEPWATCH_CUPTI_PATH=path): the dynamic loader then returns the same instance.
 *   From another module, dlsym only "fake_cupti_control" and use the table:
 *
 *     void* h = dlopen(STEPWATCH_FAKE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
 *     auto get = (const FakeCuptiControl* (*)(void))dlsym(h, "fake_cupti_control");
 *     const FakeCuptiControl* fake = get();
 *     fake->reset();
 *     setenv("STEPWATCH_CUPTI_PATH", STEPWATCH_FAKE_CUPTI_SO, 1);  // then load libstepwatch.so
 *     uint8_t* buf; size_t size;
 *     fake->request_buffer(&buf, &size);                  // the adapter's pool hands one out
 *     size_t used = fake->append_kernel(buf, size, 0, "_Z6kernelv", t0, t0 + 1000, 1, 0, 7);
 *     fake->complete_buffer(buf, used);                   // parsed by the adapter, on this thread
 *
 * Values are CUPTI's own: `result` a CUptiResult (0 = CUPTI_SUCCESS, 39 =
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), `kind` a CUpti_ActivityKind, `domain` a
 * CUpti_CallbackDomain (1 driver, 2 runtime, 3 resource, 6 state), `site` 0 enter / 1 exit.
 * This header does not include cupti.h, so code outside the CUPTI folder can use it.
 */
#ifndef STEPWATCH_FAKE_CUPTI_H
#define STEPWATCH_FAKE_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_CUPTI_API __attribute__((visibility("default")))

/* ---- set-up ---------------------------------------------------------------------------------- */
/* Forgets every subscription, registration, enabled kind/callback, counter and behaviour. Call at
 * the start of each test. Releases blocked flushes. */
FAKE_CUPTI_API void fake_cupti_reset(void);
/* Returned by the next cuptiSubscribe_v2 calls (0 = succeed; a second subscribe while one holds the
 * subscription always gets 39 with the holder's name, like CUPTI). */
FAKE_CUPTI_API void fake_cupti_set_subscribe_result(int result);
/* Written to CUpti_SubscriberParams.oldSubscriberName when subscribe fails with 39. */
FAKE_CUPTI_API void fake_cupti_set_old_subscriber(const char* name);
/* cuptiActivityEnable(kind) returns `result` (0 = default success). */
FAKE_CUPTI_API void fake_cupti_set_activity_enable_result(int kind, int result);
FAKE_CUPTI_API void fake_cupti_set_register_result(int result);
/* The next cuptiActivityGetNumDroppedRecords reports n (then 0: CUPTI reads and resets). */
FAKE_CUPTI_API void fake_cupti_set_dropped(size_t n);
/* While set, every cuptiActivityFlushAll blocks (a hung CUPTI) until cleared or reset. */
FAKE_CUPTI_API void fake_cupti_set_flush_blocks(int block);
/* cuptiGetVersion returns this instead of the real version (0 = forward to the real one). */
FAKE_CUPTI_API void fake_cupti_set_version(uint32_t version);

/* ---- observation ----------------------------------------------------------------------------- */
FAKE_CUPTI_API int fake_cupti_is_subscribed(void);
FAKE_CUPTI_API int fake_cupti_subscribe_calls(void);
FAKE_CUPTI_API int fake_cupti_unsubscribe_calls(void);
/* The subscriberName of the current subscription ("" when none). Valid until the next call. */
FAKE_CUPTI_API const char* fake_cupti_subscriber_name(void);
FAKE_CUPTI_API int fake_cupti_activity_enabled(int kind);
FAKE_CUPTI_API int fake_cupti_enabled_activity_count(void);
FAKE_CUPTI_API int fake_cupti_callback_enabled(int domain, uint32_t cbid);
FAKE_CUPTI_API int fake_cupti_enabled_callback_count(void);
FAKE_CUPTI_API int fake_cupti_buffer_callbacks_registered(void);
FAKE_CUPTI_API int fake_cupti_register_calls(void);
/* 1 and *value when cuptiActivitySetAttribute(attr) was called. */
FAKE_CUPTI_API int fake_cupti_attribute(int attr, uint64_t* value);
/* The last cuptiActivityEnableAllSyncRecords argument; -1 when never called. */
FAKE_CUPTI_API int fake_cupti_all_sync_records(void);
FAKE_CUPTI_API uint64_t fake_cupti_flush_count(void);        /* FlushAll calls (started) */
FAKE_CUPTI_API uint64_t fake_cupti_forced_flush_count(void); /* of which CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */
FAKE_CUPTI_API int fake_cupti_flushes_blocked(void);         /* threads blocked in FlushAll now */
FAKE_CUPTI_API int fake_cupti_finalize_calls(void);
/* Calls to functions the CUPTI the fake stands in for does not export (cuptiSubscribe_v2 before
 * 13.0, cuptiActivityEnableAllSyncRecords before 12.8): each returns CUPTI_ERROR_NOT_SUPPORTED. */
FAKE_CUPTI_API int fake_cupti_absent_function_calls(void);

/* ---- driving the adapter (from the calling thread) -------------------------------------------- */
/* Calls the registered bufferRequested. 1 when it handed out a buffer, 0 for NULL, -1 when no
 * callbacks are registered. */
FAKE_CUPTI_API int fake_cupti_request_buffer(uint8_t** buffer, size_t* size);
/* Calls the registered bufferCompleted(NULL, 0, buffer, size, valid_size). 0/-1 as above. */
FAKE_CUPTI_API int fake_cupti_complete_buffer(uint8_t* buffer, size_t valid_size);
/* Completed inside the next cuptiActivityFlushAll, on the flushing thread (like CUPTI). */
FAKE_CUPTI_API void fake_cupti_complete_on_next_flush(uint8_t* buffer, size_t valid_size);
/* Calls the subscriber callback when (domain, cbid) is enabled. Builds CUpti_CallbackData for
 * the runtime/driver domains (correlation_data may be NULL: a per-thread slot is used),
 * CUpti_ResourceData for resource, CUpti_StateData for state. 1 delivered, 0 not enabled. */
FAKE_CUPTI_API int fake_cupti_fire_callback(int domain, uint32_t cbid, int site, uint32_t correlation_id,
                                            uint64_t* correlation_data);
/* CUPTI_CBID_STATE_FATAL_ERROR with notification {result, message}. 1 delivered, 0 not enabled. */
FAKE_CUPTI_API int fake_cupti_fire_fatal_error(int result, const char* message);

/* ---- real CUPTI 13.0 records -------------------------------------------------------------------
 * Each appends one record at `offset` of `buffer` (capacity `capacity`) and returns the offset
 * after it, or 0 when it does not fit. Timestamps are CLOCK_REALTIME ns. */
FAKE_CUPTI_API size_t fake_cupti_append_kernel(uint8_t* buffer, size_t capacity, size_t offset, const char* name,
                                               uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id,
                                               uint32_t device_id, uint32_t stream_id);
/* copy_kind: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD); src/dst: CUpti_ActivityMemoryKind
 * (1 pageable, 2 pinned, 3 device). */
FAKE_CUPTI_API size_t fake_cupti_append_memcpy(uint8_t* buffer, size_t capacity, size_t offset, int copy_kind,
                                               int src_kind, int dst_kind, int async, uint64_t bytes,
                                               uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id,
                                               uint32_t runtime_correlation_id, uint32_t device_id,
                                               uint32_t stream_id);
/* type: CUpti_ActivitySynchronizationType (1 event, 2 stream wait event, 3 stream, 4 context). */
FAKE_CUPTI_API size_t fake_cupti_append_sync(uint8_t* buffer, size_t capacity, size_t offset, int type,
                                             uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id,
                                             uint32_t stream_id);
/* driver: 0 = CUPTI_ACTIVITY_KIND_RUNTIME (cbid from cupti_runtime_cbid.h), 1 = DRIVER. */
FAKE_CUPTI_API size_t fake_cupti_append_api(uint8_t* buffer, size_t capacity, size_t offset, int driver,
                                            uint32_t cbid, uint64_t start_ns, uint64_t end_ns, uint32_t thread_id,
                                            uint32_t correlation_id);
/* release: 0 allocation, 1 release. */
FAKE_CUPTI_API size_t fake_cupti_append_memory(uint8_t* buffer, size_t capacity, size_t offset, int release,
                                               uint64_t bytes, uint64_t timestamp_ns, uint32_t correlation_id,
                                               uint32_t device_id);
/* overhead_kind: CUpti_ActivityOverheadKind; overhead_data_bytes > 0 attaches malloc'ed
 * overheadData, which the adapter must free (as with CUPTI). */
FAKE_CUPTI_API size_t fake_cupti_append_overhead(uint8_t* buffer, size_t capacity, size_t offset,
                                                 int overhead_kind, uint64_t start_ns, uint64_t end_ns,
                                                 uint32_t correlation_id, size_t overhead_data_bytes);

/* ---- CUPTI state the adapter sets (observation) ---------------------------------------------- */
/* The last cuptiSetThreadIdType argument (0 DEFAULT = pthread_self, 1 SYSTEM = gettid:
 * cupti_activity.h:7245-7262); calls, and calls made while an activity kind was enabled (the
 * header, 7874-7876: the type must not change during a session). */
FAKE_CUPTI_API int fake_cupti_thread_id_type(void);
FAKE_CUPTI_API int fake_cupti_thread_id_type_calls(void);
FAKE_CUPTI_API int fake_cupti_thread_id_type_set_while_enabled(void);
/* cuptiActivityRegisterTimestampCallback calls, by anyone (stepwatch must make none). */
FAKE_CUPTI_API int fake_cupti_timestamp_registrations(void);

/* ---- the faithful model: a CUDA process as CUPTI 13.0 shows it -----------------------------------
 * The calls below play CUDA API calls on the calling ("application") thread against a model GPU
 * (one FIFO per stream, real time: CLOCK_REALTIME). Each fires the subscriber's ENTER/EXIT
 * callbacks (runtime call, and the driver call the runtime makes inside it, each with its own
 * correlation id), writes the activity records CUPTI would write into activity buffers it requests
 * from the client through bufferRequested, and hands buffers back through bufferCompleted inside
 * cuptiActivityFlushAll, on the flushing thread. Production defaults (fake_cupti_model_defaults):
 *  - per-thread buffers on unless the client set CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER=0
 *    (cupti_activity.h:7201-7211, "The default value is 1");
 *  - a kernel's record is reserved in the launching thread's buffer at launch and is incomplete
 *    until the kernel ends — UNVERIFIED (what "incomplete record" suggests; docs/gpu-validation.md);
 *  - FlushAll(0) withholds every buffer holding an incomplete record (7724-7727); a forced flush
 *    returns them all (7728-7731), an incomplete record with its kind kept and end = 0 (start = 0
 *    too when it had not started): never delivered again;
 *  - API records carry the thread id of cuptiSetThreadIdType (7245-7262, 7874-7876);
 *  - kernel records carry the launching runtime call's correlation id when launched through the
 *    runtime (3055-3058), copies the driver call's plus runtimeCorrelationId (2200-2211), memsets
 *    only the driver call's (2455-2457);
 *  - completed cudaEventQuery/cudaStreamQuery produce SYNCHRONIZATION records whatever
 *    cuptiActivityEnableAllSyncRecords says (8256-8266: it only drops not-yet-completed ones);
 *    sync records carry no thread id (CUpti_ActivitySynchronization2, 5092-5173);
 *  - GPU timestamps go through the timestamp callback registered at the time the buffer is
 *    post-processed (delivered), CPU-side ones at the time of the call (8126-8141). */
typedef struct FakeCuptiModel {
  size_t struct_size;
  int kernel_record_at_launch;        /* 1: reserved at launch (default); 0: written when the kernel ends */
  int flush_withholds_incomplete;     /* 1 (default); 0: FlushAll(0) returns every buffer (the old fake) */
  int forced_incomplete_invalid_kind; /* 0 (default): kind kept, end 0; 1: kind INVALID (GetNextRecord stops) */
  int completed_query_sync_records;   /* 1 (default) */
  int launch_queue_depth;             /* GPU work not yet finished before a launch call blocks (default 1024) */
  int64_t launch_latency_ns;          /* launch entry to the earliest GPU start (default 5 us) */
  int64_t api_call_ns;                /* host time of a non-blocking CUDA call (default 3 us) */
} FakeCuptiModel;
FAKE_CUPTI_API void fake_cupti_model_defaults(FakeCuptiModel* model);
FAKE_CUPTI_API void fake_cupti_set_model(const FakeCuptiModel* model); /* reset() restores the defaults */

/* Simulated CUDA calls. Each returns the correlation id of its outermost (runtime) call. `stream`
 * is a CUPTI stream id; gpu_ns the work's duration on the model GPU. */
FAKE_CUPTI_API uint32_t fake_cupti_sim_launch(const char* kernel, uint32_t stream, int64_t gpu_ns, int via_runtime);
/* copy_kind 1 HtoD / 2 DtoH / 8 DtoD; host_memory 1 pageable / 2 pinned. An async copy from pageable
 * memory returns only when the copy is done; a synchronous one waits for the stream first. */
FAKE_CUPTI_API uint32_t fake_cupti_sim_memcpy(int copy_kind, int host_memory, int async, uint64_t bytes,
                                              uint32_t stream, int64_t gpu_ns);
FAKE_CUPTI_API uint32_t fake_cupti_sim_memset(uint64_t bytes, uint32_t stream, int64_t gpu_ns); /* cudaMemsetAsync */
FAKE_CUPTI_API uint32_t fake_cupti_sim_stream_sync(uint32_t stream);  /* waits for the stream */
FAKE_CUPTI_API uint32_t fake_cupti_sim_device_sync(void);              /* waits for every stream */
/* cudaEventQuery on an event recorded at the stream's current end: 1 when complete. */
FAKE_CUPTI_API int fake_cupti_sim_event_query(uint32_t stream);
/* cudaStreamWaitEvent: `waiting`'s next work starts after `on`'s current end (the host does not block). */
FAKE_CUPTI_API uint32_t fake_cupti_sim_stream_wait(uint32_t waiting, uint32_t on);
FAKE_CUPTI_API uint32_t fake_cupti_sim_free(int64_t host_ns);   /* cudaFree: waits for every stream, then host_ns */
FAKE_CUPTI_API uint32_t fake_cupti_sim_malloc(int64_t host_ns); /* cudaMalloc */
/* When `stream`'s queued work ends (CLOCK_REALTIME ns; 0 when it never had any). */
FAKE_CUPTI_API int64_t fake_cupti_sim_stream_end(uint32_t stream);
/* Ground truth: how long the model GPU was busy (any stream) in [from_ns, to_ns) (CLOCK_REALTIME). */
FAKE_CUPTI_API int64_t fake_cupti_sim_busy_ns(int64_t from_ns, int64_t to_ns);

typedef struct FakeCuptiSimStats {
  size_t struct_size;
  uint64_t api_calls;                /* simulated runtime calls */
  uint64_t gpu_records;              /* kernel/memcpy/memset records written */
  uint64_t buffers_requested;        /* bufferRequested calls the model made */
  uint64_t buffers_refused;          /* of which answered with NULL (records dropped, counted) */
  uint64_t buffers_delivered;
  uint64_t buffers_withheld;         /* buffers FlushAll(0) kept back (summed over flushes) */
  uint64_t forced_incomplete;        /* incomplete records handed back by forced flushes (lost) */
  uint64_t records_lost_at_finalize; /* records in buffers dropped by cuptiFinalize */
} FakeCuptiSimStats;
FAKE_CUPTI_API void fake_cupti_sim_stats(FakeCuptiSimStats* out);

/* ---- a second in-process CUPTI client: torch.profiler's Kineto (libkineto/src/CuptiActivityApi.cpp,
 * CuptiCallbackApi.cpp, CuptiActivityProfiler.cpp) -----------------------------------------------
 * start: at its first use subscribes from a process-lifetime singleton (cuptiSubscribe, no name;
 * a refusal is logged, Kineto goes on), registers its TSC timestamp callback (use_cupti_tsc()
 * defaults to true), sets CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, registers its own buffer
 * callbacks (4 MiB buffers) and enables its kinds. stop: cuptiActivityFlushAll(FORCED), disables its
 * kinds process-wide, and only when TEARDOWN_CUPTI=1 tears down: cuptiUnsubscribe + cuptiFinalize
 * from the next runtime/driver API exit callback (teardownContext). Returns Kineto's subscribe
 * result at start (0, or 39 when another client holds the subscription). */
FAKE_CUPTI_API int fake_cupti_kineto_start(void);
FAKE_CUPTI_API void fake_cupti_kineto_stop(void);
FAKE_CUPTI_API int fake_cupti_kineto_subscribed(void);
FAKE_CUPTI_API uint64_t fake_cupti_kineto_records(void); /* records its bufferCompleted parsed */

/* ---- the model and Kineto as one table, for dlsym users ----------------------------------------- */
typedef struct FakeCuptiSim {
  size_t struct_size;
  void (*model_defaults)(FakeCuptiModel*);
  void (*set_model)(const FakeCuptiModel*);
  uint32_t (*launch)(const char*, uint32_t, int64_t, int);
  uint32_t (*memcpy)(int, int, int, uint64_t, uint32_t, int64_t);
  uint32_t (*memset)(uint64_t, uint32_t, int64_t);
  uint32_t (*stream_sync)(uint32_t);
  uint32_t (*device_sync)(void);
  int (*event_query)(uint32_t);
  uint32_t (*stream_wait)(uint32_t, uint32_t);
  uint32_t (*free)(int64_t);
  uint32_t (*malloc)(int64_t);
  int64_t (*stream_end)(uint32_t);
  void (*stats)(FakeCuptiSimStats*);
  int (*kineto_start)(void);
  void (*kineto_stop)(void);
  int (*kineto_subscribed)(void);
  uint64_t (*kineto_records)(void);
  int (*thread_id_type)(void);
  int (*timestamp_registrations)(void);
  int (*thread_id_type_set_while_enabled)(void);
  int64_t (*busy_ns)(int64_t, int64_t);
} FakeCuptiSim;
FAKE_CUPTI_API const FakeCuptiSim* fake_cupti_sim(void);

/* ---- everything above as one table, for dlsym users ------------------------------------------ */
typedef struct FakeCuptiControl {
  size_t struct_size;
  void (*reset)(void);
  void (*set_subscribe_result)(int);
  void (*set_old_subscriber)(const char*);
  void (*set_activity_enable_result)(int, int);
  void (*set_register_result)(int);
  void (*set_dropped)(size_t);
  void (*set_flush_blocks)(int);
  void (*set_version)(uint32_t);
  int (*is_subscribed)(void);
  int (*subscribe_calls)(void);
  int (*unsubscribe_calls)(void);
  const char* (*subscriber_name)(void);
  int (*activity_enabled)(int);
  int (*enabled_activity_count)(void);
  int (*callback_enabled)(int, uint32_t);
  int (*enabled_callback_count)(void);
  int (*buffer_callbacks_registered)(void);
  int (*register_calls)(void);
  int (*attribute)(int, uint64_t*);
  int (*all_sync_records)(void);
  uint64_t (*flush_count)(void);
  uint64_t (*forced_flush_count)(void);
  int (*flushes_blocked)(void);
  int (*finalize_calls)(void);
  int (*request_buffer)(uint8_t**, size_t*);
  int (*complete_buffer)(uint8_t*, size_t);
  void (*complete_on_next_flush)(uint8_t*, size_t);
  int (*fire_callback)(int, uint32_t, int, uint32_t, uint64_t*);
  int (*fire_fatal_error)(int, const char*);
  size_t (*append_kernel)(uint8_t*, size_t, size_t, const char*, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t);
  size_t (*append_memcpy)(uint8_t*, size_t, size_t, int, int, int, int, uint64_t, uint64_t, uint64_t, uint32_t,
                          uint32_t, uint32_t, uint32_t);
  size_t (*append_sync)(uint8_t*, size_t, size_t, int, uint64_t, uint64_t, uint32_t, uint32_t);
  size_t (*append_api)(uint8_t*, size_t, size_t, int, uint32_t, uint64_t, uint64_t, uint32_t, uint32_t);
  size_t (*append_memory)(uint8_t*, size_t, size_t, int, uint64_t, uint64_t, uint32_t, uint32_t);
  size_t (*append_overhead)(uint8_t*, size_t, size_t, int, uint64_t, uint64_t, uint32_t, size_t);
  int (*absent_function_calls)(void);
} FakeCuptiControl;

FAKE_CUPTI_API const FakeCuptiControl* fake_cupti_control(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // STEPWATCH_FAKE_CUPTI_H
