// The host activity-buffer pool handed to CUPTI in bufferRequested: bounded, pre-zeroed.
//
// Bounded: at most `max_buffers` buffers ever exist; past the cap acquire() returns nullptr and the
// adapter hands CUPTI a NULL buffer (CUPTI drops those records; the adapter counts the refusal).
// Pre-zeroed: with CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER=1 CUPTI skips zeroing buffers on
// the application thread, so every buffer we hand out must be all zero: fresh ones come from
// calloc (untouched pages are zero for free), returned ones are re-zeroed over their used part.
//
// Ownership: a buffer belongs to CUPTI from acquire() until bufferCompleted hands it back; the
// pool never frees buffers (CUPTI may still hold one when the process exits), so the pool itself
// is leaked with the adapter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace stepwatch::live {

class ActivityBufferPool {
 public:
  ActivityBufferPool(size_t buffer_bytes, int max_buffers);
  ~ActivityBufferPool();  // frees only what is free: an outstanding buffer stays CUPTI's
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // Any thread (CUPTI requests buffers concurrently from application threads). nullptr when the
  // pool is at its cap or memory is short. The buffer is 8-byte aligned and all zero.
  uint8_t* acquire() noexcept;
  // Re-zeroes [0, used_bytes) and returns the buffer to the free list. False (and nothing done)
  // for a buffer this pool did not hand out, or one already returned.
  bool release(uint8_t* buffer, size_t used_bytes) noexcept;

  size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  int max_buffers() const noexcept { return max_buffers_; }
  uint64_t bytes_allocated() const noexcept;
  int outstanding() const noexcept;  // handed out, not yet returned

 private:
  size_t index_of(const uint8_t* buffer) const noexcept;  // all_.size() when not ours; mu_ held

  const size_t buffer_bytes_;
  const int max_buffers_;
  // Guards the vectors; held for a few instructions, never across a CUPTI call or an allocation.
  mutable std::mutex mu_;
  std::vector<uint8_t*> all_;   // every buffer ever allocated (capacity reserved: never reallocates)
  std::vector<uint8_t*> free_;  // ready to hand out (capacity reserved)
  std::vector<bool> out_;       // parallel to all_: handed out and not yet returned
  int reserved_ = 0;            // allocated or being allocated
};

}  // namespace stepwatch::live
