// A bounded ring of the last K steps (the flight recorder's memory).
//
// Overflow policy: the oldest entry is overwritten and counted in `evicted()` — a ring holds
// history by design, so an eviction is not a loss, but it is still counted so that the
// recorder can say how many steps it no longer has. Capacity is fixed at construction;
// memory is bounded by K × sizeof(T) plus whatever T owns. Single owner, not thread-safe
// (the analysis thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace stepwatch {

template <typename T>
class StepRing {
 public:
  explicit StepRing(size_t capacity) : slots_(capacity == 0 ? 1 : capacity) {}

  void push(T value) {
    slots_[head_] = std::move(value);
    head_ = (head_ + 1) % slots_.size();
    if (size_ < slots_.size()) {
      ++size_;
    } else {
      ++evicted_;
    }
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  uint64_t evicted() const { return evicted_; }
  bool empty() const { return size_ == 0; }

  // i = 0 is the oldest retained entry, size() - 1 the newest.
  const T& at(size_t i) const { return *slots_[(head_ + slots_.size() - size_ + i) % slots_.size()]; }
  const T& newest() const { return at(size_ - 1); }

  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < size_; ++i) f(at(i));
  }

  void clear() {
    for (auto& s : slots_) s.reset();
    size_ = 0;
    head_ = 0;
  }

 private:
  std::vector<std::optional<T>> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace stepwatch
