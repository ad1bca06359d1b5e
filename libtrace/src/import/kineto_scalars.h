// Kineto's scalar fields, read from their JSON text: ids, times, counts. Private to
// libtrace/src/import.
//
// Kineto writes ids and times as numbers, but other writers (and old Kineto) put strings there
// ("tid": "stream 7", "pid": "Spans", "ts": "12.5"). The importer keeps the text and interprets it
// late, only for the records it keeps.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stepwatch::import_detail {

struct Scalar {
  std::string_view text;  // a number's token or a string's content; empty when absent
  bool is_string = false;
  bool unreadable = false;  // present, but an object, array or boolean
};

std::string_view trim(std::string_view s);
// Integers, hex ("0x7f": HIP streams and pointers) and floats, rounded ("3.0" is 3).
std::optional<int64_t> parse_integer(std::string_view text);
inline std::optional<int64_t> to_int(const Scalar& s) { return parse_integer(s.text); }
// Microseconds (Kineto's unit) as exact nanoseconds. nullopt for junk, NaN, infinities, and
// values past the int64 nanosecond range; exponent forms ("1.5e3") are read as doubles.
std::optional<int64_t> to_time_ns(const Scalar& s);
// A non-negative count (bytes, correlation ids); 0 when absent or not one.
uint64_t to_count(const Scalar& s);
// A host thread id. Non-numeric tids ("PyTorch Profiler (0)") still name one thread consistently;
// 0 stays reserved for "unknown".
uint32_t thread_of(const Scalar& tid);
// Old Kineto wrote GPU records with "tid": "stream 7": the trailing number.
std::optional<int64_t> trailing_integer(std::string_view text);

}  // namespace stepwatch::import_detail
