#include "cupti/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace stepwatch::live {

ActivityBufferPool::ActivityBufferPool(size_t buffer_bytes, int max_buffers)
    : buffer_bytes_(buffer_bytes), max_buffers_(std::max(max_buffers, 1)) {
  // Reserved up front so that acquire/release never allocate (they run inside CUPTI callbacks).
  all_.reserve(static_cast<size_t>(max_buffers_));
  free_.reserve(static_cast<size_t>(max_buffers_));
  out_.reserve(static_cast<size_t>(max_buffers_));
}

ActivityBufferPool::~ActivityBufferPool() {
  // Only buffers on the free list are ours to free; one CUPTI still holds is left to it (a leak
  // only tests can observe: production leaks the whole adapter).
  for (uint8_t* b : free_) std::free(b);
}

uint8_t* ActivityBufferPool::acquire() noexcept {
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      uint8_t* b = free_.back();
      free_.pop_back();
      out_[index_of(b)] = true;
      return b;
    }
    if (reserved_ >= max_buffers_) return nullptr;
    ++reserved_;
  }
  // calloc outside the lock: large blocks come from mmap, already zero, touched only when CUPTI
  // writes them. glibc's calloc aligns to 16 bytes (CUPTI needs 8).
  auto* b = static_cast<uint8_t*>(std::calloc(1, buffer_bytes_));
  std::lock_guard lock(mu_);
  if (b == nullptr || reinterpret_cast<uintptr_t>(b) % 8 != 0) {
    std::free(b);
    --reserved_;
    return nullptr;
  }
  all_.push_back(b);
  out_.push_back(true);
  return b;
}

bool ActivityBufferPool::release(uint8_t* buffer, size_t used_bytes) noexcept {
  if (buffer == nullptr) return false;
  {
    // Claim the buffer: a buffer that is not ours, or returned twice, is left alone.
    std::lock_guard lock(mu_);
    const size_t i = index_of(buffer);
    if (i == all_.size() || !out_[i]) return false;
    out_[i] = false;
  }
  // Zeroed outside the lock: the buffer is not on the free list yet, nobody else can see it.
  std::memset(buffer, 0, std::min(used_bytes, buffer_bytes_));
  std::lock_guard lock(mu_);
  free_.push_back(buffer);
  return true;
}

size_t ActivityBufferPool::index_of(const uint8_t* buffer) const noexcept {
  return static_cast<size_t>(std::find(all_.begin(), all_.end(), buffer) - all_.begin());
}

uint64_t ActivityBufferPool::bytes_allocated() const noexcept {
  std::lock_guard lock(mu_);
  return static_cast<uint64_t>(all_.size()) * buffer_bytes_;
}

int ActivityBufferPool::outstanding() const noexcept {
  std::lock_guard lock(mu_);
  return static_cast<int>(all_.size() - free_.size());
}

}  // namespace stepwatch::live
