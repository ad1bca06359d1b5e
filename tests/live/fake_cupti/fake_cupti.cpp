// The fake libcupti (see fake_cupti.h): a controllable control plane, the real record parser. The
// faithful model of a CUDA process lives in fake_cupti_sim.cpp, the second client (Kineto) in
// fake_kineto.cpp; they share fake_cupti_state.h.
#include "fake_cupti.h"

#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "fake_cupti_state.h"

#ifndef FAKE_CUPTI_REAL_LIBCUPTI
#define FAKE_CUPTI_REAL_LIBCUPTI "/usr/local/cuda/lib64/libcupti.so.13"
#endif

namespace fake_cupti {

const RealCupti& real() {
  static const RealCupti* r = [] {
    auto* out = new RealCupti();  // leaked: used until exit
    // RTLD_LOCAL: its symbols must not interpose on the fake's (same names). The per-version test
    // runs name another release's library (scripts/install-deps.sh fetches them).
    const char* path = std::getenv("FAKE_CUPTI_REAL_LIBCUPTI");
    void* h = dlopen(path != nullptr && *path != '\0' ? path : FAKE_CUPTI_REAL_LIBCUPTI, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return out;
    out->get_next_record = reinterpret_cast<decltype(out->get_next_record)>(dlsym(h, "cuptiActivityGetNextRecord"));
    out->get_result_string = reinterpret_cast<decltype(out->get_result_string)>(dlsym(h, "cuptiGetResultString"));
    out->get_callback_name = reinterpret_cast<decltype(out->get_callback_name)>(dlsym(h, "cuptiGetCallbackName"));
    out->get_version = reinterpret_cast<decltype(out->get_version)>(dlsym(h, "cuptiGetVersion"));
    return out;
  }();
  return *r;
}

uint32_t real_version() {
  static const uint32_t v = [] {
    uint32_t out = 0;
    if (real().get_version == nullptr || real().get_version(&out) != CUPTI_SUCCESS) out = 0;
    return out;
  }();
  return v;
}

const stepwatch::live::RecordLayout& layout() {
  const stepwatch::live::RecordLayout* l = stepwatch::live::record_layout(real_version());
  return l != nullptr ? *l : stepwatch::live::compiled_record_layout();
}

uint32_t behaves_as_version() {
  {
    FakeState& s = state();
    std::lock_guard lock(s.mu);
    if (s.version_override != 0) return s.version_override;
  }
  return real_version();
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
  // CUPTI 12 has no cuptiSubscribe_v2 (its cupti_callbacks.h): a client that calls it there would
  // not have resolved it.
  if (fake_cupti::behaves_as_version() < 130000) {
    std::lock_guard lock(state().mu);
    ++state().absent_function_calls;
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
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
  const bool absent = fake_cupti::behaves_as_version() < 26;  // added in CUPTI 12.8 (API 26)
  FakeState& s = state();
  if (absent) {
    std::lock_guard lock(s.mu);
    ++s.absent_function_calls;
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
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

}  // extern "C"
