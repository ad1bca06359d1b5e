// The fake libcupti's control API (fake_cupti.h): what tests set, observe and drive by hand, the
// record builders for hand-filled buffers, and the dlsym tables. The CUPTI surface itself is in
// fake_cupti.cpp, the faithful model in fake_cupti_sim.cpp and fake_cupti_calls.cpp.
#include <cupti.h>

#include <cstring>
#include <string>

#include "cupti/cupti_record_builder.h"
#include "fake_cupti.h"
#include "fake_cupti_state.h"

namespace {

using fake_cupti::FakeState;
using fake_cupti::real;
using fake_cupti::state;

thread_local uint64_t t_correlation_data = 0;

bool callback_enabled_locked(FakeState& s, int domain, uint32_t cbid) {
  return s.domains.count(domain) != 0 || s.callbacks.count({domain, cbid}) != 0;
}

}  // namespace

extern "C" {

// ---- control API -------------------------------------------------------------------------------

void fake_cupti_reset(void) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  const uint64_t epoch = s.reset_epoch + 1;
  // Field by field (a fresh FakeState would destroy the mutex and condition variable in use).
  s.subscribe_result = CUPTI_SUCCESS;
  s.old_subscriber.clear();
  s.enable_results.clear();
  s.register_result = CUPTI_SUCCESS;
  s.dropped = 0;
  s.flush_blocks = false;
  s.reset_epoch = epoch;
  s.version_override = 0;
  s.absent_function_calls = 0;
  fake_cupti_model_defaults(&s.model);
  s.subscribed = false;
  s.subscribed_v1 = false;
  s.subscribe_calls = 0;
  s.unsubscribe_calls = 0;
  s.subscriber_name.clear();
  s.callback = nullptr;
  s.userdata = nullptr;
  s.kinds.clear();
  s.callbacks.clear();
  s.domains.clear();
  s.requested = nullptr;
  s.completed = nullptr;
  s.register_calls = 0;
  s.attributes.clear();
  s.all_sync_records = -1;
  s.flushes = 0;
  s.forced_flushes = 0;
  s.finalize_calls = 0;
  s.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  s.thread_id_type_calls = 0;
  s.thread_id_type_set_while_enabled = 0;
  s.timestamp_callback = nullptr;
  s.timestamp_registrations = 0;
  s.buffer_sizes.clear();
  s.on_next_flush.clear();
  fake_cupti::sim_reset_locked();
  fake_cupti::kineto_reset_locked();
  s.flush_cv.notify_all();  // releases flushes blocked before the reset
}

void fake_cupti_set_subscribe_result(int result) {
  std::lock_guard lock(state().mu);
  state().subscribe_result = result;
}

void fake_cupti_set_old_subscriber(const char* name) {
  std::lock_guard lock(state().mu);
  state().old_subscriber = name != nullptr ? name : "";
}

void fake_cupti_set_activity_enable_result(int kind, int result) {
  std::lock_guard lock(state().mu);
  state().enable_results[kind] = result;
}

void fake_cupti_set_register_result(int result) {
  std::lock_guard lock(state().mu);
  state().register_result = result;
}

void fake_cupti_set_dropped(size_t n) {
  std::lock_guard lock(state().mu);
  state().dropped = n;
}

void fake_cupti_set_flush_blocks(int block) {
  std::lock_guard lock(state().mu);
  state().flush_blocks = block != 0;
  state().flush_cv.notify_all();
}

void fake_cupti_set_version(uint32_t version) {
  std::lock_guard lock(state().mu);
  state().version_override = version;
}

int fake_cupti_is_subscribed(void) {
  std::lock_guard lock(state().mu);
  return state().subscribed ? 1 : 0;
}

int fake_cupti_subscribe_calls(void) {
  std::lock_guard lock(state().mu);
  return state().subscribe_calls;
}

int fake_cupti_unsubscribe_calls(void) {
  std::lock_guard lock(state().mu);
  return state().unsubscribe_calls;
}

const char* fake_cupti_subscriber_name(void) {
  std::lock_guard lock(state().mu);
  state().subscriber_name_copy = state().subscriber_name;
  return state().subscriber_name_copy.c_str();
}

int fake_cupti_activity_enabled(int kind) {
  std::lock_guard lock(state().mu);
  return state().kinds.count(kind) != 0 ? 1 : 0;
}

int fake_cupti_enabled_activity_count(void) {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().kinds.size());
}

int fake_cupti_callback_enabled(int domain, uint32_t cbid) {
  std::lock_guard lock(state().mu);
  return callback_enabled_locked(state(), domain, cbid) ? 1 : 0;
}

int fake_cupti_enabled_callback_count(void) {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().callbacks.size());
}

int fake_cupti_buffer_callbacks_registered(void) {
  std::lock_guard lock(state().mu);
  return state().requested != nullptr && state().completed != nullptr ? 1 : 0;
}

int fake_cupti_register_calls(void) {
  std::lock_guard lock(state().mu);
  return state().register_calls;
}

int fake_cupti_attribute(int attr, uint64_t* value) {
  std::lock_guard lock(state().mu);
  const auto it = state().attributes.find(attr);
  if (it == state().attributes.end()) return 0;
  if (value != nullptr) *value = it->second;
  return 1;
}

int fake_cupti_all_sync_records(void) {
  std::lock_guard lock(state().mu);
  return state().all_sync_records;
}

uint64_t fake_cupti_flush_count(void) {
  std::lock_guard lock(state().mu);
  return state().flushes;
}

uint64_t fake_cupti_forced_flush_count(void) {
  std::lock_guard lock(state().mu);
  return state().forced_flushes;
}

int fake_cupti_flushes_blocked(void) {
  std::lock_guard lock(state().mu);
  return state().flushes_blocked;
}

int fake_cupti_thread_id_type(void) {
  std::lock_guard lock(state().mu);
  return state().thread_id_type;
}

int fake_cupti_thread_id_type_calls(void) {
  std::lock_guard lock(state().mu);
  return state().thread_id_type_calls;
}

int fake_cupti_thread_id_type_set_while_enabled(void) {
  std::lock_guard lock(state().mu);
  return state().thread_id_type_set_while_enabled;
}

int fake_cupti_timestamp_registrations(void) {
  std::lock_guard lock(state().mu);
  return state().timestamp_registrations;
}

int fake_cupti_absent_function_calls(void) {
  std::lock_guard lock(state().mu);
  return state().absent_function_calls;
}

int fake_cupti_finalize_calls(void) {
  std::lock_guard lock(state().mu);
  return state().finalize_calls;
}

int fake_cupti_request_buffer(uint8_t** buffer, size_t* size) {
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  {
    std::lock_guard lock(state().mu);
    requested = state().requested;
  }
  if (buffer == nullptr || size == nullptr) return 0;
  *buffer = nullptr;
  *size = 0;
  if (requested == nullptr) return -1;
  size_t max_records = 0;
  requested(buffer, size, &max_records);
  if (*buffer == nullptr) return 0;
  std::lock_guard lock(state().mu);
  state().buffer_sizes[*buffer] = *size;
  return 1;
}

int fake_cupti_complete_buffer(uint8_t* buffer, size_t valid_size) {
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  size_t size = 0;
  {
    std::lock_guard lock(state().mu);
    completed = state().completed;
    const auto it = state().buffer_sizes.find(buffer);
    if (it != state().buffer_sizes.end()) {
      size = it->second;
      state().buffer_sizes.erase(it);
    }
  }
  if (completed == nullptr) return -1;
  completed(nullptr, 0, buffer, size, valid_size);
  return 1;
}

void fake_cupti_complete_on_next_flush(uint8_t* buffer, size_t valid_size) {
  std::lock_guard lock(state().mu);
  state().on_next_flush.emplace_back(buffer, valid_size);
}

int fake_cupti_fire_callback(int domain, uint32_t cbid, int site, uint32_t correlation_id,
                             uint64_t* correlation_data) {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard lock(state().mu);
    if (!state().subscribed || !callback_enabled_locked(state(), domain, cbid)) return 0;
    callback = state().callback;
    userdata = state().userdata;
  }
  if (callback == nullptr) return 0;
  const auto d = static_cast<CUpti_CallbackDomain>(domain);
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API || d == CUPTI_CB_DOMAIN_DRIVER_API) {
    CUpti_CallbackData data{};
    data.callbackSite = site == 0 ? CUPTI_API_ENTER : CUPTI_API_EXIT;
    const char* name = nullptr;
    if (real().get_callback_name != nullptr) real().get_callback_name(d, cbid, &name);
    data.functionName = name;
    data.correlationId = correlation_id;
    data.correlationData = correlation_data != nullptr ? correlation_data : &t_correlation_data;
    callback(userdata, d, cbid, &data);
  } else if (d == CUPTI_CB_DOMAIN_STATE) {
    CUpti_StateData data{};
    data.notification.result = CUPTI_ERROR_UNKNOWN;
    data.notification.message = "fake state callback";
    callback(userdata, d, cbid, &data);
  } else {
    CUpti_ResourceData data{};
    callback(userdata, d, cbid, &data);
  }
  return 1;
}

int fake_cupti_fire_fatal_error(int result, const char* message) {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard lock(state().mu);
    if (!state().subscribed || !callback_enabled_locked(state(), CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR)) {
      return 0;
    }
    callback = state().callback;
    userdata = state().userdata;
  }
  if (callback == nullptr) return 0;
  CUpti_StateData data{};
  data.notification.result = static_cast<CUptiResult>(result);
  data.notification.message = message;
  callback(userdata, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR, &data);
  // Like CUPTI: it finalizes itself after a fatal error.
  cuptiFinalize();
  return 1;
}

}  // extern "C"

// ---- record builders -----------------------------------------------------------------------------

namespace {
using stepwatch::live::ActivityBufferBuilder;

// A builder positioned at `offset` of an existing buffer.
template <typename Fn>
size_t append_at(uint8_t* buffer, size_t capacity, size_t offset, Fn&& fn) {
  if (buffer == nullptr || offset % 8 != 0 || offset > capacity) return 0;
  ActivityBufferBuilder b(buffer + offset, capacity - offset, fake_cupti::layout());
  if (!fn(b)) return 0;
  return offset + b.size();
}
}  // namespace

extern "C" {

size_t fake_cupti_append_kernel(uint8_t* buffer, size_t capacity, size_t offset, const char* name, uint64_t start_ns,
                                uint64_t end_ns, uint32_t correlation_id, uint32_t device_id, uint32_t stream_id) {
  return append_at(buffer, capacity, offset, [&](ActivityBufferBuilder& b) {
    return b.kernel(name, start_ns, end_ns, correlation_id, device_id, stream_id) != nullptr;
  });
}

size_t fake_cupti_append_memcpy(uint8_t* buffer, size_t capacity, size_t offset, int copy_kind, int src_kind,
                                int dst_kind, int async, uint64_t bytes, uint64_t start_ns, uint64_t end_ns,
                                uint32_t correlation_id, uint32_t runtime_correlation_id, uint32_t device_id,
                                uint32_t stream_id) {
  return append_at(buffer, capacity, offset, [&](ActivityBufferBuilder& b) {
    return b.memcpy(static_cast<CUpti_ActivityMemcpyKind>(copy_kind), static_cast<CUpti_ActivityMemoryKind>(src_kind),
                    static_cast<CUpti_ActivityMemoryKind>(dst_kind), async != 0, bytes, start_ns, end_ns,
                    correlation_id, runtime_correlation_id, device_id, stream_id) != nullptr;
  });
}

size_t fake_cupti_append_sync(uint8_t* buffer, size_t capacity, size_t offset, int type, uint64_t start_ns,
                              uint64_t end_ns, uint32_t correlation_id, uint32_t stream_id) {
  return append_at(buffer, capacity, offset, [&](ActivityBufferBuilder& b) {
    return b.sync(static_cast<CUpti_ActivitySynchronizationType>(type), start_ns, end_ns, correlation_id,
                  stream_id) != nullptr;
  });
}

size_t fake_cupti_append_api(uint8_t* buffer, size_t capacity, size_t offset, int driver, uint32_t cbid,
                             uint64_t start_ns, uint64_t end_ns, uint32_t thread_id, uint32_t correlation_id) {
  return append_at(buffer, capacity, offset, [&](ActivityBufferBuilder& b) {
    return b.api(driver != 0 ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME, cbid, start_ns, end_ns,
                 thread_id, correlation_id) != nullptr;
  });
}

size_t fake_cupti_append_memory(uint8_t* buffer, size_t capacity, size_t offset, int release, uint64_t bytes,
                                uint64_t timestamp_ns, uint32_t correlation_id, uint32_t device_id) {
  return append_at(buffer, capacity, offset, [&](ActivityBufferBuilder& b) {
    return b.memory(release != 0 ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                                 : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, bytes, timestamp_ns, correlation_id, device_id) != nullptr;
  });
}

size_t fake_cupti_append_overhead(uint8_t* buffer, size_t capacity, size_t offset, int overhead_kind,
                                  uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id,
                                  size_t overhead_data_bytes) {
  return append_at(buffer, capacity, offset, [&](ActivityBufferBuilder& b) {
    return b.overhead(static_cast<CUpti_ActivityOverheadKind>(overhead_kind), start_ns, end_ns, correlation_id,
                      overhead_data_bytes) != nullptr;
  });
}

const FakeCuptiControl* fake_cupti_control(void) {
  static const FakeCuptiControl table = {
      sizeof(FakeCuptiControl),
      fake_cupti_reset,
      fake_cupti_set_subscribe_result,
      fake_cupti_set_old_subscriber,
      fake_cupti_set_activity_enable_result,
      fake_cupti_set_register_result,
      fake_cupti_set_dropped,
      fake_cupti_set_flush_blocks,
      fake_cupti_set_version,
      fake_cupti_is_subscribed,
      fake_cupti_subscribe_calls,
      fake_cupti_unsubscribe_calls,
      fake_cupti_subscriber_name,
      fake_cupti_activity_enabled,
      fake_cupti_enabled_activity_count,
      fake_cupti_callback_enabled,
      fake_cupti_enabled_callback_count,
      fake_cupti_buffer_callbacks_registered,
      fake_cupti_register_calls,
      fake_cupti_attribute,
      fake_cupti_all_sync_records,
      fake_cupti_flush_count,
      fake_cupti_forced_flush_count,
      fake_cupti_flushes_blocked,
      fake_cupti_finalize_calls,
      fake_cupti_request_buffer,
      fake_cupti_complete_buffer,
      fake_cupti_complete_on_next_flush,
      fake_cupti_fire_callback,
      fake_cupti_fire_fatal_error,
      fake_cupti_append_kernel,
      fake_cupti_append_memcpy,
      fake_cupti_append_sync,
      fake_cupti_append_api,
      fake_cupti_append_memory,
      fake_cupti_append_overhead,
      fake_cupti_absent_function_calls,
  };
  return &table;
}

}  // extern "C"

extern "C" const FakeCuptiSim* fake_cupti_sim(void) {
  static const FakeCuptiSim table = {
      sizeof(FakeCuptiSim),
      fake_cupti_model_defaults,
      fake_cupti_set_model,
      fake_cupti_sim_launch,
      fake_cupti_sim_memcpy,
      fake_cupti_sim_memset,
      fake_cupti_sim_stream_sync,
      fake_cupti_sim_device_sync,
      fake_cupti_sim_event_query,
      fake_cupti_sim_stream_wait,
      fake_cupti_sim_free,
      fake_cupti_sim_malloc,
      fake_cupti_sim_stream_end,
      fake_cupti_sim_stats,
      fake_cupti_kineto_start,
      fake_cupti_kineto_stop,
      fake_cupti_kineto_subscribed,
      fake_cupti_kineto_records,
      fake_cupti_thread_id_type,
      fake_cupti_timestamp_registrations,
      fake_cupti_thread_id_type_set_while_enabled,
      fake_cupti_sim_busy_ns,
  };
  return &table;
}
