// Interned strings. Every name (kernel, API call, range) is stored once; events carry a NameId.
//
// Thread-safe: `intern` may be called from any thread (the live library interns from CUPTI and
// NVTX callbacks on application threads) and takes a short mutex; `view` is lock-free for any id
// that `intern` has returned (entries are published with release/acquire ordering and never move).
//
// Bounded: past `max_bytes` new names map to one overflow id and are counted, never silently
// lost (the live library reports the count as data loss).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "stepwatch/core/event.h"

namespace stepwatch {

class NameTable {
 public:
  explicit NameTable(size_t max_bytes = 64u << 20);
  ~NameTable();
  NameTable(NameTable&&) noexcept;
  NameTable& operator=(NameTable&&) noexcept;
  // Copies keep every id (names are re-added in id order). Not for hot paths.
  NameTable(const NameTable& other);
  NameTable& operator=(const NameTable& other);

  NameId intern(std::string_view name);
  std::string_view view(NameId id) const;
  size_t size() const;
  size_t bytes() const;
  uint64_t overflowed() const;
  NameId overflow_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stepwatch
