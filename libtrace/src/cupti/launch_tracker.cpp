#include "cupti/launch_tracker.h"

#include <algorithm>
#include <functional>
#include <new>

namespace stepwatch::live {

// One application thread's calls, written by that thread only, read by the flush thread: a chain
// of fixed-size chunks, so that memory follows the thread's call rate (one chunk for a quiet
// thread, more for a launch-bound one between two ticks) up to a bound, past which calls are not
// tracked (held as never completing: bounded, then reported incomplete).
struct LaunchTracker::Ring {
  static constexpr uint32_t kChunkEntries = 4096;  // 96 KiB
  struct Chunk {
    Entry slots[kChunkEntries];
    std::atomic<uint32_t> count{0};     // written by the producer (release)
    std::atomic<Chunk*> next{nullptr};  // set by the producer when it moves on (release)
  };
  explicit Ring(size_t max_entries)
      : max_chunks(std::max<size_t>(1, (max_entries + kChunkEntries - 1) / kChunkEntries)),
        write(new Chunk()), read(write) {}
  ~Ring() {
    for (Chunk* c = read; c != nullptr;) {
      Chunk* next = c->next.load();
      delete c;
      c = next;
    }
  }
  const size_t max_chunks;
  std::atomic<size_t> chunks{1};
  Chunk* write;  // the producer's chunk
  Chunk* read;   // the consumer's chunk (the producer never touches a chunk before `write`)
  uint32_t read_index = 0;
  uint32_t outer = 0;  // the producer's last outermost call (for nested driver calls)
};

namespace {

std::atomic<uint64_t> g_next_instance{1};

// Trivially destructible: no TLS destructor runs on CUPTI's or the application's threads.
struct ThreadRing {
  uint64_t instance = 0;
  void* ring = nullptr;
};
thread_local ThreadRing t_ring;

}  // namespace

LaunchTracker::LaunchTracker(size_t ring_entries)
    : ring_entries_(std::max<size_t>(ring_entries, 16)), instance_(g_next_instance.fetch_add(1)) {}

LaunchTracker::~LaunchTracker() = default;

LaunchTracker::Ring* LaunchTracker::ring_for_this_thread() noexcept {
  if (t_ring.instance == instance_) return static_cast<Ring*>(t_ring.ring);
  try {
    // Once per thread that makes traced calls (allocation outside any lock held by CUDA: we are in
    // a callback, and only our own mutex is taken).
    auto ring = std::make_unique<Ring>(ring_entries_);
    Ring* raw = ring.get();
    std::lock_guard lock(rings_mu_);
    rings_.push_back(std::move(ring));
    t_ring = ThreadRing{instance_, raw};
    return raw;
  } catch (...) {
    return nullptr;
  }
}

void LaunchTracker::push(Ring& r, const Entry& e) noexcept {
  uint32_t n = r.write->count.load(std::memory_order_relaxed);
  if (n == Ring::kChunkEntries) {
    Ring::Chunk* next = nullptr;
    if (r.chunks.load(std::memory_order_relaxed) < r.max_chunks) {
      // A new chunk, rarely (once per 4096 calls of a busy thread), inside a CUDA callback: only
      // the allocator's own lock is taken.
      next = new (std::nothrow) Ring::Chunk();
    }
    if (next == nullptr) {
      // At the bound: this call is not tracked. Held as a call that never completes (bounded,
      // then the interval is reported incomplete) — never as one that did.
      overflows_.fetch_add(1, std::memory_order_relaxed);
      int64_t cur = overflow_from_ns_.load(std::memory_order_relaxed);
      const int64_t t = e.alias_of != 0 ? r.write->slots[n - 1].t_ns : e.t_ns;
      while (t < cur && !overflow_from_ns_.compare_exchange_weak(cur, t)) {
      }
      return;
    }
    r.chunks.fetch_add(1, std::memory_order_relaxed);
    r.write->next.store(next, std::memory_order_release);
    r.write = next;
    n = 0;
  }
  r.write->slots[n] = e;
  r.write->count.store(n + 1, std::memory_order_release);
}

// The consumer's side of a ring: every entry published so far, chunks passed freed.
template <typename Fn>
void LaunchTracker::drain(Ring& r, Fn&& fn) {
  for (;;) {
    const uint32_t n = r.read->count.load(std::memory_order_acquire);
    for (; r.read_index < n; ++r.read_index) fn(r.read->slots[r.read_index]);
    if (r.read_index < Ring::kChunkEntries) return;
    Ring::Chunk* next = r.read->next.load(std::memory_order_acquire);
    if (next == nullptr) return;  // full, and the producer has not moved on yet
    delete r.read;                // the producer writes only at or after `next`
    r.chunks.fetch_sub(1, std::memory_order_relaxed);
    r.read = next;
    r.read_index = 0;
  }
}

void LaunchTracker::enter(uint32_t correlation, int64_t t_ns, bool needs_gpu_record) noexcept {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  Ring* r = ring_for_this_thread();
  if (r == nullptr) return;
  r->outer = correlation;
  push(*r, Entry{correlation, 0, t_ns, needs_gpu_record});
}

void LaunchTracker::nested(uint32_t correlation) noexcept {
  if (t_ring.instance != instance_ || !enabled_.load(std::memory_order_relaxed)) return;
  auto* r = static_cast<Ring*>(t_ring.ring);
  if (r->outer == 0) return;
  push(*r, Entry{correlation, r->outer, 0, true});
}

void LaunchTracker::arrived(std::span<const uint32_t> api_records, std::span<const uint32_t> gpu_records) noexcept {
  if (api_records.empty() && gpu_records.empty()) return;
  try {
    std::lock_guard lock(arrivals_mu_);
    api_arrivals_.insert(api_arrivals_.end(), api_records.begin(), api_records.end());
    gpu_arrivals_.insert(gpu_arrivals_.end(), gpu_records.begin(), gpu_records.end());
  } catch (...) {
    // Out of memory: the calls stay waited for, bounded — never judged from missing records.
  }
}

void LaunchTracker::add(const Entry& e, uint64_t tick_no) {
  (void)tick_no;
  if (e.alias_of != 0) {
    // A nested driver call: its id completes the outer call (if that is still waited for).
    auto it = pending_.find(e.alias_of);
    if (it == pending_.end()) return;
    if (early_gpu_.erase(e.id) != 0) {
      pending_.erase(it);
      return;
    }
    it->second.alias = e.id;
    aliases_[e.id] = e.alias_of;
    return;
  }
  // Its record may have come first (published in the same tick as the record's buffer).
  if (early_gpu_.erase(e.id) != 0 || (!e.needs_gpu && early_api_.erase(e.id) != 0)) return;
  pending_[e.id] = Pending{e.t_ns, 0, e.needs_gpu};
  heap_.emplace_back(e.t_ns, e.id);
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

void LaunchTracker::complete(uint32_t id, bool gpu, uint64_t tick_no) {
  uint32_t key = id;
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    const auto a = aliases_.find(id);
    if (a != aliases_.end()) {
      key = a->second;
      it = pending_.find(key);
    }
  }
  if (it == pending_.end() || (it->second.needs_gpu && !gpu)) {
    // Not (yet) published, or an API record of a call that waits for its GPU record.
    if (it == pending_.end()) (gpu ? early_gpu_ : early_api_)[id] = tick_no;
    return;
  }
  if (it->second.alias != 0) aliases_.erase(it->second.alias);
  pending_.erase(it);
}

LaunchTracker::Tick LaunchTracker::tick(int64_t now_ns, int64_t wait_limit_ns) noexcept {
  Tick out;
  out.watermark_ns = now_ns;
  try {
    const uint64_t tick_no = ++ticks_;
    if (clear_requested_.exchange(false, std::memory_order_acq_rel)) clear_now();
    // Arrivals first, then the rings: a call is published at its ENTER, before its record can
    // exist, so every arrival taken here finds its call in the rings read below or earlier. The
    // early_ sets cover the rest (a nested id published after its record was parsed).
    std::vector<uint32_t> api, gpu;
    {
      std::lock_guard lock(arrivals_mu_);
      api.swap(api_arrivals_);
      gpu.swap(gpu_arrivals_);
    }
    {
      std::lock_guard lock(rings_mu_);
      for (auto& ring : rings_) {
        drain(*ring, [&](const Entry& e) { add(e, tick_no); });
      }
    }
    for (uint32_t id : gpu) complete(id, true, tick_no);
    for (uint32_t id : api) complete(id, false, tick_no);
    // Early arrivals whose call never showed up were records of untracked calls.
    std::erase_if(early_api_, [&](const auto& kv) { return kv.second + 2 <= tick_no; });
    std::erase_if(early_gpu_, [&](const auto& kv) { return kv.second + 2 <= tick_no; });

    auto pop = [&] {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
    };
    const int64_t give_up_before = now_ns - wait_limit_ns;
    out.gave_up_from_ns = INT64_MAX;
    while (!heap_.empty()) {
      const auto [t, id] = heap_.front();
      const auto it = pending_.find(id);
      if (it == pending_.end() || it->second.t_ns != t) {
        pop();  // completed since it was pushed
        continue;
      }
      if (t >= give_up_before) break;
      out.gave_up_from_ns = std::min(out.gave_up_from_ns, t);
      ++out.gave_up;
      if (it->second.alias != 0) aliases_.erase(it->second.alias);
      pending_.erase(it);
      pop();
    }
    // Calls that overflowed a ring: waited for like the others, never completed.
    const int64_t overflow_t = overflow_from_ns_.load(std::memory_order_relaxed);
    int64_t oldest = heap_.empty() ? INT64_MAX : heap_.front().first;
    if (overflow_t != INT64_MAX) {
      if (overflow_t < give_up_before) {
        out.gave_up_from_ns = std::min(out.gave_up_from_ns, overflow_t);
        ++out.gave_up;
        overflow_from_ns_.store(INT64_MAX, std::memory_order_relaxed);
      } else {
        oldest = std::min(oldest, overflow_t);
      }
    }
    out.pending = pending_.size();
    if (oldest != INT64_MAX) {
      out.oldest_pending_ns = oldest;
      out.watermark_ns = std::min(now_ns, oldest);
    }
  } catch (...) {
    // Out of memory in the tick: hold the watermark where the caller had it (returned as now is
    // wrong): report nothing pending but keep the caller's previous watermark — the caller only
    // ever moves it forward.
    out.watermark_ns = INT64_MIN;
  }
  return out;
}

void LaunchTracker::clear() noexcept { clear_requested_.store(true, std::memory_order_release); }

void LaunchTracker::clear_now() {
  {
    std::lock_guard lock(arrivals_mu_);
    api_arrivals_.clear();
    gpu_arrivals_.clear();
  }
  {
    std::lock_guard lock(rings_mu_);
    for (auto& ring : rings_) drain(*ring, [](const Entry&) {});
  }
  pending_.clear();
  aliases_.clear();
  heap_.clear();
  early_api_.clear();
  early_gpu_.clear();
  overflow_from_ns_.store(INT64_MAX, std::memory_order_relaxed);
}

}  // namespace stepwatch::live
