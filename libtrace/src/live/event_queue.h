// Per-thread event queues: producers (application threads in NVTX/C API calls, CUPTI's buffer
// thread, our flush thread) each get a single-producer/single-consumer ring; the analysis
// thread is the only consumer and drains them all.
//
// Bounded by construction: `max_queues` rings of `slots_per_queue` events, allocated lazily
// (untouched pages cost no RSS). Overflow policy: a full ring drops the new event and returns
// false (the caller counts it as data loss); threads beyond `max_queues` share one mutex-guarded
// overflow ring. No allocation on the push path after a thread's first event.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "stepwatch/core/event.h"

namespace stepwatch::live {

class EventQueues {
 public:
  EventQueues(size_t slots_per_queue, size_t max_queues);
  ~EventQueues();
  EventQueues(const EventQueues&) = delete;
  EventQueues& operator=(const EventQueues&) = delete;

  // Producer side, any thread. False when the event was dropped (ring full).
  bool push(const Event& event) noexcept;
  // Consumer side, the analysis thread only. Appends everything queued so far; returns the count.
  size_t drain(std::vector<Event>& out);

  size_t queue_count() const;
  size_t bytes_reserved() const;

 private:
  struct Ring;
  Ring* ring_for_this_thread() noexcept;

  const size_t slots_;
  const size_t max_queues_;
  const uint64_t instance_id_;
  mutable std::mutex registry_mu_;  // guards rings_ growth (not the rings' contents)
  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<size_t> ring_count_{0};
  std::unique_ptr<Ring> shared_;  // for threads past max_queues, guarded by shared_mu_
  std::mutex shared_mu_;
};

}  // namespace stepwatch::live
