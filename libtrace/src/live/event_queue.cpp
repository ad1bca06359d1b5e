#include "live/event_queue.h"

#include <cstdlib>
#include <new>

namespace stepwatch::live {

struct EventQueues::Ring {
  explicit Ring(size_t slots) : mask(slots - 1) {
    // malloc, not new[]: slots are written before they are read, and untouched pages stay free.
    buffer = static_cast<Event*>(std::malloc(slots * sizeof(Event)));
  }
  ~Ring() { std::free(buffer); }
  bool ok() const { return buffer != nullptr; }

  bool push(const Event& e) noexcept {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) > mask) return false;  // full
    buffer[tail & mask] = e;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  size_t drain(std::vector<Event>& out) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    for (uint64_t i = head; i != tail; ++i) out.push_back(buffer[i & mask]);
    head_.store(tail, std::memory_order_release);
    return static_cast<size_t>(tail - head);
  }

  Event* buffer = nullptr;
  const uint64_t mask;
  alignas(64) std::atomic<uint64_t> head_{0};  // consumer position
  alignas(64) std::atomic<uint64_t> tail_{0};  // producer position
};

namespace {
size_t round_up_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}
std::atomic<uint64_t> g_next_instance{1};

// The ring this thread uses, per EventQueues instance (tests create several).
struct ThreadBinding {
  uint64_t instance = 0;
  void* ring = nullptr;
};
thread_local ThreadBinding t_binding;
}  // namespace

EventQueues::EventQueues(size_t slots_per_queue, size_t max_queues)
    : slots_(round_up_pow2(slots_per_queue < 16 ? 16 : slots_per_queue)),
      max_queues_(max_queues == 0 ? 1 : max_queues),
      instance_id_(g_next_instance.fetch_add(1)) {
  rings_.reserve(max_queues_);
  shared_ = std::make_unique<Ring>(slots_);
}

EventQueues::~EventQueues() = default;

EventQueues::Ring* EventQueues::ring_for_this_thread() noexcept {
  if (t_binding.instance == instance_id_) return static_cast<Ring*>(t_binding.ring);
  Ring* ring = nullptr;
  try {
    std::lock_guard<std::mutex> lock(registry_mu_);
    if (rings_.size() < max_queues_) {
      auto r = std::make_unique<Ring>(slots_);
      if (r->ok()) {
        ring = r.get();
        rings_.push_back(std::move(r));
        ring_count_.store(rings_.size(), std::memory_order_release);
      }
    }
  } catch (...) {
    ring = nullptr;  // allocation failed: fall back to the shared ring
  }
  t_binding = {instance_id_, ring};
  return ring;
}

bool EventQueues::push(const Event& event) noexcept {
  Ring* ring = ring_for_this_thread();
  if (ring != nullptr) return ring->push(event);
  std::lock_guard<std::mutex> lock(shared_mu_);
  return shared_->ok() && shared_->push(event);
}

size_t EventQueues::drain(std::vector<Event>& out) {
  size_t n = 0;
  {
    // rings_ only grows; reading it under the registry lock is short (no event copying here
    // would be cheaper, but the ring pointers are stable, so copy them out first).
    std::vector<Ring*> rings;
    {
      std::lock_guard<std::mutex> lock(registry_mu_);
      rings.reserve(rings_.size());
      for (auto& r : rings_) rings.push_back(r.get());
    }
    for (Ring* r : rings) n += r->drain(out);
  }
  std::lock_guard<std::mutex> lock(shared_mu_);
  if (shared_->ok()) n += shared_->drain(out);
  return n;
}

size_t EventQueues::queue_count() const { return ring_count_.load(std::memory_order_acquire); }

size_t EventQueues::bytes_reserved() const { return (queue_count() + 1) * slots_ * sizeof(Event); }

}  // namespace stepwatch::live
