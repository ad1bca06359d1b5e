// The fake libcupti's shared state (fake_cupti.cpp: the control plane; fake_cupti_sim.cpp: the
// model of a CUDA process as CUPTI sees it; fake_kineto.cpp: a second in-process client). Internal
// to the fake: tests use fake_cupti.h.
#pragma once

#include <cupti.h>

#include "cupti/record_layouts.h"

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fake_cupti.h"

namespace fake_cupti {

// The real libcupti, for the functions the fake forwards (record iteration, names, result strings,
// version). Loaded RTLD_LOCAL under a name that is not "libcupti.so*" (fake_cupti.cmake makes the
// link), so the dynamic loader and a scan of loaded objects see only the fake as "the" libcupti.
struct RealCupti {
  decltype(&::cuptiActivityGetNextRecord) get_next_record = nullptr;
  decltype(&::cuptiGetResultString) get_result_string = nullptr;
  decltype(&::cuptiGetCallbackName) get_callback_name = nullptr;
  decltype(&::cuptiGetVersion) get_version = nullptr;
};
const RealCupti& real();
// The record layout of the CUPTI the fake stands in for: that of the real library's version
// (record_layouts.h), the compiled 13.0 one when it is not in the table. Records the fake writes
// have these sizes, so the real parser steps over them as over its own.
const stepwatch::live::RecordLayout& layout();
// The version the fake behaves as (an override from fake_cupti_set_version, else the real one's).
uint32_t behaves_as_version();

// Everything the test controls or observes. `mu` is never held while calling into a client (its
// callbacks may call back into the fake).
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
  // Calls to functions the emulated CUPTI does not have (cuptiSubscribe_v2 before 13.0,
  // cuptiActivityEnableAllSyncRecords before 12.8): a real library would not export them.
  int absent_function_calls = 0;
  FakeCuptiModel model{};

  // observation
  bool subscribed = false;
  bool subscribed_v1 = false;  // the holder used cuptiSubscribe (no name): oldSubscriberName stays empty
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
  int all_sync_records = -1;  // never called: CUPTI's default is "all" (cupti_activity.h:8263-8264)
  uint64_t flushes = 0;
  uint64_t forced_flushes = 0;
  int flushes_blocked = 0;
  int finalize_calls = 0;
  int thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  int thread_id_type_calls = 0;
  int thread_id_type_set_while_enabled = 0;
  CUpti_TimestampCallbackFunc timestamp_callback = nullptr;
  int timestamp_registrations = 0;
  std::map<uint8_t*, size_t> buffer_sizes;                 // handed out through request_buffer
  std::vector<std::pair<uint8_t*, size_t>> on_next_flush;  // (buffer, valid)
};
FakeState& state();

// CLOCK_REALTIME ns: the model's own time base.
int64_t realtime_ns();
// A realtime instant as CUPTI reports it: identity, or through the registered timestamp callback
// (cupti_activity.h:8111-8141). Caller holds state().mu.
uint64_t to_cupti_clock_locked(int64_t realtime);

// The model's side of cuptiActivityFlushAll: buffers it delivers now (all of them when forced,
// else only those whose every record is complete: cupti_activity.h:7724-7731). Caller holds
// state().mu; the buffers are handed back by the caller, without the lock.
struct Delivery {
  uint8_t* buffer;
  size_t size;
  size_t valid;
};
void sim_collect_for_flush_locked(bool forced, std::vector<Delivery>& out);
void sim_reset_locked();
// cuptiFinalize: the model forgets its buffers (the client was asked to flush before).
void sim_finalize_locked();

// Kernel records of the "written when the kernel ends" variant: written before a flush collects
// (requests buffers: no fake lock held).
void sim_write_completed_device_records();

void kineto_reset_locked();
uint64_t kineto_tsc_of(int64_t realtime);  // Kineto's TSC clock as a function of realtime
extern "C" uint64_t fake_kineto_tsc_callback(void);

// Delivers a callback to the subscriber when (domain, cbid) is enabled; the data structs are built
// by the caller. 1 delivered, 0 not enabled.
int fire_subscriber(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

}  // namespace fake_cupti
