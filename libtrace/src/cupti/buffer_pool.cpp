#include "cupti/buffer_pool.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

namespace stepwatch::live {

ActivityBufferPool::ActivityBufferPool(size_t max_buffer_bytes, int max_buffers)
    : max_buffer_bytes_(std::max(max_buffer_bytes, kMinBufferBytes)), max_buffers_(std::max(max_buffers, 1)) {
  // Reserved up front so that acquire/release never reallocate it (they run inside CUPTI callbacks).
  slots_.reserve(static_cast<size_t>(max_buffers_));
}

ActivityBufferPool::~ActivityBufferPool() {
  // Only free buffers are ours to free; one CUPTI still holds is left to it (a leak only tests
  // can observe: production leaks the whole adapter).
  for (const Slot& s : slots_) {
    if (!s.out) std::free(s.data);
  }
}

size_t ActivityBufferPool::size_class(size_t wanted) const noexcept {
  const size_t clamped = std::clamp(wanted, kMinBufferBytes, max_buffer_bytes_);
  return std::min(std::bit_ceil(clamped), max_buffer_bytes_);
}

uint8_t* ActivityBufferPool::acquire() noexcept {
  size_t size = 0;
  return acquire(max_buffer_bytes_, &size);
}

uint8_t* ActivityBufferPool::acquire(size_t wanted, size_t* size) noexcept {
  const size_t bytes = size_class(wanted);
  uint8_t* replaced = nullptr;
  {
    std::lock_guard lock(mu_);
    // The smallest free buffer that is large enough; else, at the cap, any free one (reallocated).
    size_t best = slots_.size(), other = slots_.size();
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (s.out) continue;
      if (s.bytes >= bytes && s.bytes <= 2 * bytes && (best == slots_.size() || s.bytes < slots_[best].bytes)) best = i;
      if (other == slots_.size()) other = i;
    }
    if (best != slots_.size()) {
      slots_[best].out = true;
      if (size != nullptr) *size = slots_[best].bytes;
      return slots_[best].data;
    }
    if (reserved_ >= max_buffers_) {
      if (other == slots_.size()) return nullptr;
      // At the cap with a free buffer of another size: it gives way to one of the size wanted
      // (a loop whose rate changed must not be stuck with the old sizes).
      replaced = slots_[other].data;
      slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(other));
    } else {
      ++reserved_;
    }
  }
  std::free(replaced);
  // calloc outside the lock: large blocks come from mmap, already zero, touched only when CUPTI
  // writes them. glibc's calloc aligns to 16 bytes (CUPTI needs 8).
  auto* b = static_cast<uint8_t*>(std::calloc(1, bytes));
  std::lock_guard lock(mu_);
  if (b == nullptr || reinterpret_cast<uintptr_t>(b) % 8 != 0) {
    std::free(b);
    --reserved_;
    return nullptr;
  }
  slots_.push_back(Slot{b, bytes, true});
  if (size != nullptr) *size = bytes;
  return b;
}

bool ActivityBufferPool::release(uint8_t* buffer, size_t used_bytes) noexcept {
  if (buffer == nullptr) return false;
  size_t bytes = 0;
  {
    // Claim the buffer: a buffer that is not ours, or returned twice, is left alone. Claimed, it
    // stays marked out (nobody else takes it) until it is zeroed.
    std::lock_guard lock(mu_);
    const size_t i = index_of(buffer);
    if (i == slots_.size() || !slots_[i].out) return false;
    bytes = slots_[i].bytes;
  }
  std::memset(buffer, 0, std::min(used_bytes, bytes));
  std::lock_guard lock(mu_);
  const size_t i = index_of(buffer);
  if (i == slots_.size()) return false;
  slots_[i].out = false;
  return true;
}

size_t ActivityBufferPool::index_of(const uint8_t* buffer) const noexcept {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].data == buffer) return i;
  }
  return slots_.size();
}

uint64_t ActivityBufferPool::bytes_allocated() const noexcept {
  std::lock_guard lock(mu_);
  uint64_t total = 0;
  for (const Slot& s : slots_) total += s.bytes;
  return total;
}

int ActivityBufferPool::outstanding() const noexcept {
  std::lock_guard lock(mu_);
  return static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.out; }));
}

}  // namespace stepwatch::live
