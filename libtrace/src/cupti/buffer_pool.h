// The host activity-buffer pool handed to CUPTI in bufferRequested: bounded, pre-zeroed, and of
// the size the adapter asks for (adaptive sizes: cupti_adapter.cpp, buffer_requested).
//
// Bounded: at most `max_buffers` buffers exist at once, none larger than `max_buffer_bytes`; past
// the cap acquire() returns nullptr and the adapter hands CUPTI a NULL buffer (CUPTI drops those
// records; the adapter counts the refusal). Pre-zeroed: with CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER=1
// CUPTI skips zeroing buffers on the application thread, so every buffer handed out is all zero:
// fresh ones come from calloc (untouched pages are zero for free), returned ones are re-zeroed over
// their used part.
//
// Ownership: a buffer belongs to CUPTI from acquire() until bufferCompleted hands it back; the
// pool never frees a buffer CUPTI holds (it may still hold one when the process exits), so the
// pool itself is leaked with the adapter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace stepwatch::live {

class ActivityBufferPool {
 public:
  static constexpr size_t kMinBufferBytes = 64u << 10;

  ActivityBufferPool(size_t max_buffer_bytes, int max_buffers);
  ~ActivityBufferPool();  // frees only what is free: an outstanding buffer stays CUPTI's
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // Any thread (CUPTI requests buffers concurrently from application threads). A buffer of at
  // least `wanted` bytes (rounded up to a power of two in [64 KiB, max]); *size receives its real
  // size. A free buffer of the right size is reused; at the cap, a free one of another size is
  // reallocated to the size wanted. nullptr when at the cap with none free, or memory is short.
  // 8-byte aligned and all zero.
  uint8_t* acquire(size_t wanted, size_t* size) noexcept;
  uint8_t* acquire() noexcept;  // a buffer of the maximum size
  // Re-zeroes [0, used_bytes) and returns the buffer to the free list. False (and nothing done)
  // for a buffer this pool did not hand out, or one already returned.
  bool release(uint8_t* buffer, size_t used_bytes) noexcept;

  size_t buffer_bytes() const noexcept { return max_buffer_bytes_; }  // the maximum size
  int max_buffers() const noexcept { return max_buffers_; }
  uint64_t bytes_allocated() const noexcept;
  int outstanding() const noexcept;  // handed out, not yet returned
  // The size class acquire(wanted) gives.
  size_t size_class(size_t wanted) const noexcept;

 private:
  struct Slot {
    uint8_t* data = nullptr;
    size_t bytes = 0;
    bool out = false;
  };
  size_t index_of(const uint8_t* buffer) const noexcept;  // slots_.size() when not ours; mu_ held

  const size_t max_buffer_bytes_;
  const int max_buffers_;
  // Guards slots_; held for a few instructions, never across a CUPTI call or an allocation.
  mutable std::mutex mu_;
  std::vector<Slot> slots_;  // every live buffer (capacity reserved: never reallocates)
  int reserved_ = 0;         // live or being allocated
};

}  // namespace stepwatch::live
