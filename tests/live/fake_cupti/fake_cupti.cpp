// The fake libcupti (see fake_cupti.h): a controllable control plane, the real record parser.
#include "fake_cupti.h"

#include <cupti.h>
#include <dlfcn.h>

#include <condition_variable>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cupti_record_builder.h"

#ifndef FAKE_CUPTI_REAL_LIBCUPTI
#define FAKE_CUPTI_REAL_LIBCUPTI "/usr/local/cuda/lib64/libcupti.so.13"
#endif

namespace {

// The real libcupti, for the functions the fake forwards. RTLD_LOCAL: its symbols must not
// interpose on the fake's (same names).
struct RealCupti {
  decltype(&::cuptiActivityGetNextRecord) get_next_record = nullptr;
  decltype(&::cuptiGetResultString) get_result_string = nullptr;
  decltype(&::cuptiGetCallbackName) get_callback_name = nullptr;
  decltype(&::cuptiGetVersion) get_version = nullptr;

  RealCupti() {
    void* h = dlopen(FAKE_CUPTI_REAL_LIBCUPTI, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return;
    get_next_record = reinterpret_cast<decltype(get_next_record)>(dlsym(h, "cuptiActivityGetNextRecord"));
    get_result_string = reinterpret_cast<decltype(get_result_string)>(dlsym(h, "cuptiGetResultString"));
    get_callback_name = reinterpret_cast<decltype(get_callback_name)>(dlsym(h, "cuptiGetCallbackName"));
    get_version = reinterpret_cast<decltype(get_version)>(dlsym(h, "cuptiGetVersion"));
  }
};

const RealCupti& real() {
  static const RealCupti* r = new RealCupti();  // leaked: used until exit
  return *r;
}

// Everything the test controls or observes. `mu` is never held while calling into the adapter
// (its callbacks may call back into the fake).
struct FakeState {
  std::mutex mu;
  std::condition_variable flush_cv;

  // behaviour
  int subscribe_result = CUPTI_SUCCESS;
  std::string old_subscriber;
  std::map<int, int> enable_results;
  int register_result = CUPTI_SUCCESS;
  size_t dropped = 0;
  bool flush_blocks = false;
  uint64_t reset_epoch = 0;
  uint32_t version_override = 0;

  // observation
  bool subscribed = false;
  int subscribe_calls = 0;
  int unsubscribe_calls = 0;
  std::string subscriber_name;
  std::string subscriber_name_copy;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<int> kinds;
  std::set<std::pair<int, uint32_t>> callbacks;
  std::set<int> domains;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  int register_calls = 0;
  std::map<int, uint64_t> attributes;
  int all_sync_records = -1;
  uint64_t flushes = 0;
  uint64_t forced_flushes = 0;
  int flushes_blocked = 0;
  int finalize_calls = 0;
  std::map<uint8_t*, size_t> buffer_sizes;              // handed out through request_buffer
  std::vector<std::pair<uint8_t*, size_t>> on_next_flush;  // (buffer, valid)
};

FakeState& state() {
  static FakeState* s = new FakeState();  // leaked: adapter threads may call in during exit
  return *s;
}

// The one subscriber handle the fake hands out.
struct FakeSubscriber {
  int unused;
} g_subscriber_object;
const CUpti_SubscriberHandle kSubscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_subscriber_object);

thread_local uint64_t t_correlation_data = 0;

bool callback_enabled_locked(FakeState& s, int domain, uint32_t cbid) {
  return s.domains.count(domain) != 0 || s.callbacks.count({domain, cbid}) != 0;
}

}  // namespace

// ---- the exported CUPTI surface ------------------------------------------------------------------

extern "C" {

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                       void* userdata, CUpti_SubscriberParams* params) {
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
    report_holder("CUPTI for " + s.subscriber_name);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  if (s.subscribe_result != CUPTI_SUCCESS) {
    if (s.subscribe_result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) report_holder(s.old_subscriber);
    return static_cast<CUptiResult>(s.subscribe_result);
  }
  s.subscribed = true;
  s.callback = callback;
  s.userdata = userdata;
  s.subscriber_name = params != nullptr && params->subscriberName != nullptr ? params->subscriberName : "";
  *subscriber = kSubscriber;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.unsubscribe_calls;
  if (!s.subscribed || subscriber != kSubscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  s.subscribed = false;
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

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  FakeState& s = state();
  std::vector<std::pair<uint8_t*, size_t>> deliver;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
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
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  *timestamp = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  FakeState& s = state();
  std::lock_guard lock(s.mu);
  ++s.finalize_calls;
  s.subscribed = false;
  s.callback = nullptr;
  s.callbacks.clear();
  s.domains.clear();
  s.kinds.clear();
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
  s.subscribed = false;
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
  s.buffer_sizes.clear();
  s.on_next_flush.clear();
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
using stepwatch::test_support::ActivityBufferBuilder;

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
