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
 *   - It drives the adapter like CUPTI would: buffer requests/completions and callbacks are made
 *     from the calling test thread; buffers queued with fake_cupti_complete_on_next_flush are
 *     completed inside the next cuptiActivityFlushAll, on the flushing thread.
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
} FakeCuptiControl;

FAKE_CUPTI_API const FakeCuptiControl* fake_cupti_control(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // STEPWATCH_FAKE_CUPTI_H
