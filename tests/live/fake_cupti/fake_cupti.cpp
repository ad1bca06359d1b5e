// The fake libcupti (see fake_cupti.h): a controllable control plane, the real record parser. The
// faithful model of a CUDA process lives in fake_cupti_sim.cpp, the second client (Kineto) in
// fake_kineto.cpp; they share fake_cupti_state.h.
#include "fake_cupti.h"

#include <cupti.h>
#include <dlfcn.h>

#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "cupti/cupti_record_builder.h"
#include "fake_cupti_state.h"

#ifndef FAKE_CUPTI_REAL_LIBCUPTI
#define FAKE_CUPTI_REAL_LIBCUPTI "/usr/local/cuda/lib64/libcupti.so.13"
#endif

namespace fake_cupti {

const RealCupti& real() {
  static const RealCupti* r = [] {
    auto* out = new RealCupti();  // leaked: used until exit
    // RTLD_LOCAL: its symbols must not interpose on the fake's (same names).
    void* h = dlopen(FAKE_CUPTI_REAL_LIBCUPTI, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return out;
    out->get_next_record = reinterpret_cast<decltype(out->get_next_record)>(dlsym(h, "cuptiActivityGetNextRecord"));
    out->get_result_string = reinterpret_cast<decltype(out->get_result_string)>(dlsym(h, "cuptiGetResultString"));
    out->get_callback_name = reinterpret_cast<decltype(out->get_callback_name)>(dlsym(h, "cuptiGetCallbackName"));
    out->get_version = reinterpret_cast<decltype(out->get_version)>(dlsym(h, "cuptiGetVersion"));
    return out;
  }();
  return *r;
}

FakeState& state() {
  static FakeState* s = [] {
    auto* st = new FakeState();  // leaked: adapter threads may call in during exit
    fake_cupti_model_defaults(&st->model);
    return st;
  }();
  return *s;
}

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

uint64_t to_cupti_clock_locked(int64_t realtime) {
  FakeState& s = state();
  if (s.timestamp_callback == nullptr) return static_cast<uint64_t>(realtime);
  if (s.timestamp_callback == &fake_kineto_tsc_callback) return kineto_tsc_of(realtime);
  // Another callback: its value now, moved back by the age of the instant (a nanosecond clock).
  return s.timestamp_callback() - static_cast<uint64_t>(realtime_ns() - realtime);
}

int fire_subscriber(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    FakeState& s = state();
    std::lock_guard lock(s.mu);
    const bool enabled = s.domains.count(domain) != 0 || s.callbacks.count({static_cast<int>(domain), cbid}) != 0;
    if (!s.subscribed || !enabled) return 0;
    callback = s.callback;
    userdata = s.userdata;
  }
  if (callback == nullptr) return 0;
  callback(userdata, domain, cbid, data);
  return 1;
}

}  // namespace fake_cupti

namespace {

using fake_cupti::FakeState;
using fake_cupti::real;
using fake_cupti::state;

// The one subscriber handle the fake hands out.
struct FakeSubscriber {
  int unused;
} g_subscriber_object;
const CUpti_SubscriberHandle kSubscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_object);

thread_local uint64_t t_correlation_data = 0;

bool callback_enabled_locked(FakeState& s, int domain, uint32_t cbid) {
  return s.domains.count(domain) != 0 || s.callbacks.count({domain, cbid}) != 0;
}

// cuptiSubscribe / _v2: one subscriber at a time (cupti_callbacks.h:698-703). A refused v2 call gets
// the holder's name in oldSubscriberName (759-763); a holder that subscribed through the unnamed
// cuptiSubscribe leaves it empty — UNVERIFIED what CUPTI writes then (docs/gpu-validation.md).
CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                      CUpti_SubscriberParams* params, bool v1) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.subscribe_calls;
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (params != nullptr && params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  auto report_holder = [&](const std::string& name) {
    if (params != nullptr && params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0) {
      std::strncpy(params->oldSubscriberName, name.c_str(), params->oldSubscriberSize - 1);
      params->oldSubscriberName[params->oldSubscriberSize - 1] = '\0';
    }
  };
  if (s.subscribed) {
    report_holder(s.subscribed_v1 ? std::string() : "CUPTI for " + s.subscriber_name);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  if (s.subscribe_result != CUPTI_SUCCESS) {
    if (s.subscribe_result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) report_holder(s.old_subscriber);
    return static_cast<CUptiResult>(s.subscribe_result);
  }
  s.subscribed = true;
  s.subscribed_v1 = v1;
  s.callback = callback;
  s.userdata = userdata;
  s.subscriber_name = params != nullptr && params->subscriberName != nullptr ? params->subscriberName : "";
  *subscriber = kSubscriber;
  return CUPTI_SUCCESS;
}

}  // namespace

// ---- the exported CUPTI surface ------------------------------------------------------------------

extern "C" {

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                       void* userdata, CUpti_SubscriberParams* params) {
  return subscribe(subscriber, callback, userdata, params, /*v1=*/false);
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  return subscribe(subscriber, callback, userdata, nullptr, /*v1=*/true);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.unsubscribe_calls;
  if (!s.subscribed || subscriber != kSubscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  s.subscribed = false;
  s.subscribed_v1 = false;
  s.callback = nullptr;
  s.userdata = nullptr;
  s.subscriber_name.clear();
  s.callbacks.clear();
  s.domains.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  if (!s.subscribed || subscriber != kSubscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable != 0) {
    s.callbacks.insert({static_cast<int>(domain), cbid});
  } else {
    s.callbacks.erase({static_cast<int>(domain), cbid});
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  if (!s.subscribed || subscriber != kSubscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable != 0) {
    s.domains.insert(static_cast<int>(domain));
  } else {
    s.domains.erase(static_cast<int>(domain));
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  const auto it = s.enable_results.find(static_cast<int>(kind));
  if (it != s.enable_results.end() && it->second != CUPTI_SUCCESS) return static_cast<CUptiResult>(it->second);
  s.kinds.insert(static_cast<int>(kind));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  s.kinds.erase(static_cast<int>(kind));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.register_calls;
  if (s.register_result != CUPTI_SUCCESS) return static_cast<CUptiResult>(s.register_result);
  if (requested == nullptr || completed == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  s.requested = requested;
  s.completed = completed;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* value_size, void* value) {
  if (value_size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint64_t v = 0;
  switch (*value_size) {
    case 1: v = *static_cast<uint8_t*>(value); break;
    case 4: v = *static_cast<uint32_t*>(value); break;
    case 8: v = *static_cast<uint64_t*>(value); break;
    default: return CUPTI_ERROR_INVALID_PARAMETER;
  }
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  s.attributes[static_cast<int>(attr)] = v;
  return CUPTI_SUCCESS;
}

// Only the attribute the model reads has a default here: per-thread buffers, on (7201-7211).
CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t* value_size, void* value) {
  if (value_size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  uint64_t v = attr == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER ? 1 : 0;
  if (const auto it = s.attributes.find(static_cast<int>(attr)); it != s.attributes.end()) v = it->second;
  switch (*value_size) {
    case 1: *static_cast<uint8_t*>(value) = static_cast<uint8_t>(v); break;
    case 4: *static_cast<uint32_t*>(value) = static_cast<uint32_t>(v); break;
    case 8: *static_cast<uint64_t*>(value) = v; break;
    default: return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.thread_id_type_calls;
  // 7874-7876: changing it during a session mixes thread ids across records: observed, not refused.
  if (!s.kinds.empty() && s.thread_id_type != type) ++s.thread_id_type_set_while_enabled;
  s.thread_id_type = type;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType* type) {
  if (type == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard lock(state().mu);
  *type = static_cast<CUpti_ActivityThreadIdType>(state().thread_id_type);
  return CUPTI_SUCCESS;
}

// Process-global (8111-8141): every later record and cuptiGetTimestamp use it, whoever registered it.
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  if (fn == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.timestamp_registrations;
  s.timestamp_callback = fn;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  FakeState& s = state();
  std::vector<std::pair<uint8_t*, size_t>> deliver;
  std::vector<fake_cupti::Delivery> model;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  fake_cupti::sim_write_completed_device_records();
  {
    std::unique_lock lock(s.mu);
    ++s.flushes;
    if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0) ++s.forced_flushes;
    if (s.flush_blocks) {
      // A hung CUPTI: blocked until the test clears the flag or resets the fake.
      ++s.flushes_blocked;
      const uint64_t epoch = s.reset_epoch;
      s.flush_cv.wait(lock, [&] { return !s.flush_blocks || s.reset_epoch != epoch; });
      --s.flushes_blocked;
    }
    deliver.swap(s.on_next_flush);
    completed = s.completed;
    // 7736-7737: INVALID_OPERATION without registered buffer callbacks.
    if (completed == nullptr && deliver.empty()) return CUPTI_ERROR_INVALID_OPERATION;
    fake_cupti::sim_collect_for_flush_locked((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0, model);
  }
  // Like CUPTI: completed buffers are handed back on the flushing thread, no fake lock held.
  for (const auto& [buffer, valid] : deliver) {
    size_t size = 0;
    {
      std::lock_guard lock(s.mu);
      const auto it = s.buffer_sizes.find(buffer);
      if (it != s.buffer_sizes.end()) {
        size = it->second;
        s.buffer_sizes.erase(it);
      }
    }
    if (completed != nullptr) completed(nullptr, 0, buffer, size, valid);
  }
  for (const fake_cupti::Delivery& d : model) {
    if (completed != nullptr) completed(nullptr, 0, d.buffer, d.size, d.valid);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext /*context*/, uint32_t /*stream*/, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  *dropped = s.dropped;  // read and reset, like CUPTI
  s.dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableAllSyncRecords(uint8_t enable) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  s.all_sync_records = enable;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  // "normalized to correspond with the start and end timestamps reported in the CUPTI activity
  // records" (7270-7283): the registered timestamp callback when there is one.
  std::lock_guard lock(state().mu);
  *timestamp = fake_cupti::to_cupti_clock_locked(fake_cupti::realtime_ns());
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.finalize_calls;
  // Detaches CUPTI from the process (7965-8007): every client's subscription, kinds, buffer
  // callbacks and attributes go. The timestamp callback stays registered — UNVERIFIED
  // (docs/gpu-validation.md): the pessimistic reading, records after a re-attach on its scale.
  s.subscribed = false;
  s.subscribed_v1 = false;
  s.callback = nullptr;
  s.userdata = nullptr;
  s.subscriber_name.clear();
  s.callbacks.clear();
  s.domains.clear();
  s.kinds.clear();
  s.requested = nullptr;
  s.completed = nullptr;
  s.attributes.clear();
  s.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  fake_cupti::sim_finalize_locked();
  return CUPTI_SUCCESS;
}

// Forwarded to the real libcupti.
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  if (real().get_next_record == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  return real().get_next_record(buffer, valid_bytes, record);
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (real().get_result_string == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  return real().get_result_string(result, str);
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (real().get_callback_name == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  return real().get_callback_name(domain, cbid, name);
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  {
    FakeState& s = state();
    std::lock_guard lock(s.mu);
    if (s.version_override != 0) {
      *version = s.version_override;
      return CUPTI_SUCCESS;
    }
  }
  if (real().get_version == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  return real().get_version(version);
}

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
  ActivityBufferBuilder b(buffer + offset, capacity - offset);
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
  };
  return &table;
}
