// SYNCHRONIZATION records paired with the API record of their call.
//
// A sync record carries no thread id (CUpti_ActivitySynchronization2, cupti_activity.h:5092-5173)
// and looks the same for a wait and for a completed cudaEventQuery/cudaStreamQuery:
// cuptiActivityEnableAllSyncRecords(0) drops only the records of queries whose work had not
// completed (8256-8266), so every completed poll (PyTorch's caching allocator, the NCCL watchdog)
// still leaves one — which read as the host blocked. Its correlation id is the API's it belongs
// to (5118-5120): the API record says which call it was (query: dropped; a wait: submitted with
// that call's thread). Both are written at the call's return on the same thread, so they normally
// come in one buffer; across a buffer boundary the sync record is held (bounded) for its API record.
//
// Thread-safe (parses run concurrently); touched only by sync-related records.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "stepwatch/core/event.h"

namespace stepwatch::live {

class SyncPairing {
 public:
  // True for the API classes whose calls leave sync records: waits, syncs and queries.
  static bool pairs_with(ApiClass cls) noexcept;

  // An API record of such a class. Held sync records it completes are appended to `ready`.
  void api_record(uint32_t correlation, uint32_t thread, ApiClass cls, std::vector<Event>& ready) noexcept;
  enum class Outcome : uint8_t { kSubmit, kHeld, kDropped };
  // A sync record (`ev` converted, thread 0). kSubmit: `ev.thread` is set, submit it now.
  Outcome sync_record(Event& ev) noexcept;
  // Once per flush: held records older than `max_age` ticks are released as they are (unpaired:
  // their API record may have been lost), API records remembered longer are forgotten.
  void tick(std::vector<Event>& released, uint64_t max_age = 2) noexcept;
  // The start of the oldest held sync record (INT64_MAX when none): the watermark waits for it.
  int64_t oldest_held_ns() const noexcept;
  uint64_t dropped_queries() const noexcept;

 private:
  struct Api {
    uint32_t thread;
    ApiClass cls;
    uint64_t tick;
  };
  struct Held {
    Event ev;
    uint64_t tick;
  };
  bool resolve(const Api& api, Event& ev) noexcept;  // false: a query, dropped

  mutable std::mutex mu_;
  std::unordered_map<uint32_t, Api> apis_;
  std::unordered_map<uint32_t, Held> held_;
  uint64_t ticks_ = 0;
  uint64_t dropped_queries_ = 0;
};

}  // namespace stepwatch::live
