#include "stepwatch/core/name_table.h"

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace stepwatch {

struct NameTable::Impl {
  static constexpr size_t kChunkSize = 4096;
  static constexpr size_t kMaxChunks = 4096;  // 16M names: far past any byte cap
  struct Chunk {
    std::array<std::string_view, kChunkSize> entries;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  explicit Impl(size_t cap) : max_bytes(cap) {}
  ~Impl() {
    for (auto& c : chunks) delete c.load(std::memory_order_relaxed);
  }

  // Guarded by mu. Readers never touch these: they go through the published chunk entries.
  std::mutex mu;
  std::deque<std::string> storage;  // deque: stable addresses for the views
  std::unordered_map<std::string_view, NameId, Hash, std::equal_to<>> index;
  size_t max_bytes;
  size_t bytes = 0;
  uint64_t overflowed = 0;
  NameId overflow_id = 0;

  std::array<std::atomic<Chunk*>, kMaxChunks> chunks{};
  std::atomic<uint32_t> size{0};

  NameId append_locked(std::string_view name) {
    const uint32_t id = size.load(std::memory_order_relaxed);
    const size_t chunk = id / kChunkSize;
    if (chunk >= kMaxChunks) return overflow_id;
    Chunk* c = chunks[chunk].load(std::memory_order_relaxed);
    if (c == nullptr) {
      c = new Chunk();
      chunks[chunk].store(c, std::memory_order_release);
    }
    const std::string& stored = storage.emplace_back(name);
    c->entries[id % kChunkSize] = stored;
    index.emplace(std::string_view(stored), id);
    bytes += stored.size();
    // Publish: a reader that sees the new size sees the entry.
    size.store(id + 1, std::memory_order_release);
    return id;
  }
};

NameTable::NameTable(size_t max_bytes) : impl_(std::make_unique<Impl>(max_bytes)) {
  // Id 0 is the empty name (kNoName); id 1 stands in for every name past the cap.
  intern("");
  impl_->overflow_id = intern("<name table full>");
}

NameTable::NameTable(const NameTable& other) : impl_(std::make_unique<Impl>(other.impl_->max_bytes)) {
  std::lock_guard<std::mutex> lock(other.impl_->mu);
  const uint32_t n = other.impl_->size.load(std::memory_order_acquire);
  for (uint32_t id = 0; id < n; ++id) impl_->append_locked(other.view(id));
  impl_->overflow_id = other.impl_->overflow_id;
  impl_->overflowed = other.impl_->overflowed;
}

NameTable& NameTable::operator=(const NameTable& other) {
  if (this != &other) *this = NameTable(other);
  return *this;
}

NameTable::~NameTable() = default;
NameTable::NameTable(NameTable&&) noexcept = default;
NameTable& NameTable::operator=(NameTable&&) noexcept = default;

NameId NameTable::intern(std::string_view name) {
  Impl& t = *impl_;
  std::lock_guard<std::mutex> lock(t.mu);
  if (auto it = t.index.find(name); it != t.index.end()) return it->second;
  if (t.bytes + name.size() > t.max_bytes && t.overflow_id != 0) {
    ++t.overflowed;
    return t.overflow_id;
  }
  return t.append_locked(name);
}

std::string_view NameTable::view(NameId id) const {
  const Impl& t = *impl_;
  if (id >= t.size.load(std::memory_order_acquire)) return {};
  const Impl::Chunk* c = t.chunks[id / Impl::kChunkSize].load(std::memory_order_acquire);
  return c ? c->entries[id % Impl::kChunkSize] : std::string_view();
}

size_t NameTable::size() const { return impl_->size.load(std::memory_order_acquire); }
size_t NameTable::bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->bytes;
}
uint64_t NameTable::overflowed() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->overflowed;
}
NameId NameTable::overflow_id() const { return impl_->overflow_id; }

}  // namespace stepwatch
