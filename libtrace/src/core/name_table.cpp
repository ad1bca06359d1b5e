#include "stepwatch/core/name_table.h"

namespace stepwatch {

NameTable::NameTable(size_t max_bytes) : max_bytes_(max_bytes) {
  // Id 0 is the empty name (kNoName); id 1 stands in for every name past the cap.
  intern("");
  overflow_id_ = intern("<name table full>");
}

NameId NameTable::intern(std::string_view name) {
  if (auto it = index_.find(name); it != index_.end()) return it->second;
  if (bytes_ + name.size() > max_bytes_ && overflow_id_ != 0) {
    ++overflowed_;
    return overflow_id_;
  }
  const auto id = static_cast<NameId>(names_.size());
  const std::string& stored = names_.emplace_back(name);
  index_.emplace(std::string_view(stored), id);
  bytes_ += stored.size();
  return id;
}

std::string_view NameTable::view(NameId id) const {
  return id < names_.size() ? std::string_view(names_[id]) : std::string_view();
}

}  // namespace stepwatch
