// Interned strings. Every name (kernel, API call, range) is stored once; events carry a NameId.
//
// The table is bounded: past `max_bytes` new names map to one overflow id and are counted,
// never silently lost (the live library reports the count). Not thread-safe: one owner
// (an importer, or the analysis thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include "stepwatch/core/event.h"

namespace stepwatch {

class NameTable {
 public:
  explicit NameTable(size_t max_bytes = 64u << 20);

  NameId intern(std::string_view name);
  std::string_view view(NameId id) const;
  size_t size() const { return names_.size(); }
  size_t bytes() const { return bytes_; }
  uint64_t overflowed() const { return overflowed_; }
  NameId overflow_id() const { return overflow_id_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::deque<std::string> names_;  // deque: stable addresses for the string_view keys
  std::unordered_map<std::string_view, NameId, Hash, std::equal_to<>> index_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  uint64_t overflowed_ = 0;
  NameId overflow_id_ = 0;
};

}  // namespace stepwatch
