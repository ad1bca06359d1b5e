// A second CUPTI client in the same process, modelled on torch.profiler's Kineto (fake_cupti.h):
// what it does to the process-global CUPTI state when a profiler starts and stops. Read from
// pytorch/kineto libkineto/src/CuptiActivityApi.cpp (enableCuptiActivities, activityBuffers,
// disableCuptiActivities, teardownContext), CuptiCallbackApi.cpp (initCallbackApi: cuptiSubscribe
// from a process-lifetime singleton; the switchboard's cuptiFinalize at an API exit) and
// CuptiTimestamp.cpp / CuptiActivityProfiler.cpp (use_cupti_tsc() defaults to true: a TSC timestamp
// callback, never removed).
#include <cstdlib>
#include <cstring>
#include <set>

#include "fake_cupti_state.h"

namespace fake_cupti {
namespace {

constexpr size_t kKinetoBufferBytes = 4u << 20;  // CuptiActivityApi.cpp kBufSize
constexpr int64_t kTscEpochNs = 1'600'000'000'000'000'000;  // any instant before the tests run

struct Kineto {
  bool initialized = false;  // the CuptiCallbackApi singleton exists
  bool subscribed = false;
  bool finalized = false;    // torn down once: re-subscribes lazily at the next start
  bool teardown_pending = false;
  int last_subscribe_result = 0;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::set<uint8_t*> buffers;  // its own, in CUPTI's hands
  uint64_t records = 0;
  uint64_t foreign_buffers = 0;  // buffers handed to its callback that it never requested
};

// Guarded by state().mu, except where noted.
Kineto& kineto() {
  static Kineto* k = new Kineto();
  return *k;
}

const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,   CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
};

void CUPTIAPI kineto_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, kKinetoBufferBytes));
  std::memset(b, 0, kKinetoBufferBytes);
  {
    std::lock_guard lock(state().mu);
    kineto().buffers.insert(b);
  }
  *buffer = b;
  *size = kKinetoBufferBytes;
  *max_records = 0;
}

void CUPTIAPI kineto_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard lock(state().mu);
    if (kineto().buffers.erase(buffer) == 0) {
      // "bufferCompleted called with unknown buffer": logged and dropped — another client's buffer
      // is lost to it (UNVERIFIED: which callbacks CUPTI uses after a second registration).
      ++kineto().foreign_buffers;
      return;
    }
  }
  uint64_t n = 0;
  CUpti_Activity* record = nullptr;
  while (real().get_next_record != nullptr && real().get_next_record(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  std::free(buffer);
  std::lock_guard lock(state().mu);
  kineto().records += n;
}

// CuptiCallbackApi::__callback_switchboard: with a teardown pending, the next runtime/driver API
// exit unsubscribes and calls cuptiFinalize.
void CUPTIAPI kineto_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  CUpti_SubscriberHandle sub = nullptr;
  {
    std::lock_guard lock(state().mu);
    if (!kineto().teardown_pending || cb == nullptr || cb->callbackSite != CUPTI_API_EXIT) return;
    kineto().teardown_pending = false;
    kineto().subscribed = false;
    kineto().finalized = true;
    sub = kineto().subscriber;
  }
  cuptiUnsubscribe(sub);
  cuptiFinalize();
}

}  // namespace

uint64_t kineto_tsc_of(int64_t realtime) {
  // Raw TSC-like ticks (2.5 per ns), far from CLOCK_REALTIME nanoseconds.
  return static_cast<uint64_t>((realtime - kTscEpochNs) / 2 * 5) + 1'000'000'000'000ull;
}

extern "C" uint64_t fake_kineto_tsc_callback(void) { return kineto_tsc_of(realtime_ns()); }

void kineto_reset_locked() {
  Kineto& k = kineto();
  // Its outstanding buffers are forgotten, not freed: the model may still write into them.
  k = Kineto{};
}

}  // namespace fake_cupti

using fake_cupti::kineto;
using fake_cupti::state;

extern "C" {

int fake_cupti_kineto_start(void) {
  bool subscribe_now = false;
  {
    std::lock_guard lock(state().mu);
    auto& k = kineto();
    // initCallbackApi at the singleton's first use; after a teardown, the lazy re-init of
    // enableCuptiActivities (cuptiLazyInit_: TEARDOWN_CUPTI=1 and no DISABLE_CUPTI_LAZY_REINIT).
    subscribe_now = !k.initialized || (k.finalized && !k.subscribed);
    k.initialized = true;
  }
  int result = 0;
  if (subscribe_now) {
    CUpti_SubscriberHandle sub = nullptr;
    result = cuptiSubscribe(&sub, &fake_cupti::kineto_callback, nullptr);
    std::lock_guard lock(state().mu);
    kineto().last_subscribe_result = result;
    kineto().subscribed = result == CUPTI_SUCCESS;
    if (result == CUPTI_SUCCESS) {
      kineto().subscriber = sub;
      kineto().finalized = false;
    }
  } else {
    std::lock_guard lock(state().mu);
    result = kineto().subscribed ? 0 : kineto().last_subscribe_result;
  }
  // Whether or not it subscribed, it configures the activity API (process-global in 13.0).
  cuptiActivityRegisterTimestampCallback(&fake_cupti::fake_kineto_tsc_callback);
  uint8_t one = 1;
  size_t one_size = sizeof(one);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &one_size, &one);
  cuptiActivityRegisterCallbacks(&fake_cupti::kineto_buffer_requested, &fake_cupti::kineto_buffer_completed);
  for (CUpti_ActivityKind kind : fake_cupti::kKinds) cuptiActivityEnable(kind);
  return result;
}

void fake_cupti_kineto_stop(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // activityBuffers()
  for (CUpti_ActivityKind kind : fake_cupti::kKinds) cuptiActivityDisable(kind);  // process-wide
  const char* teardown = std::getenv("TEARDOWN_CUPTI");
  if (teardown == nullptr || std::strcmp(teardown, "1") != 0) return;
  // teardownContext: needs its own subscription to see an API exit; without one it skips.
  std::lock_guard lock(state().mu);
  if (!kineto().subscribed) return;
  kineto().teardown_pending = true;
  state().domains.insert(CUPTI_CB_DOMAIN_RUNTIME_API);
  state().domains.insert(CUPTI_CB_DOMAIN_DRIVER_API);
}

int fake_cupti_kineto_subscribed(void) {
  std::lock_guard lock(state().mu);
  return kineto().subscribed ? 1 : 0;
}

uint64_t fake_cupti_kineto_records(void) {
  std::lock_guard lock(state().mu);
  return kineto().records;
}

}  // extern "C"
