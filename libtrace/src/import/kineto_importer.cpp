#include "stepwatch/import/kineto_importer.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "import/gzip.h"
#include "stepwatch/core/classify.h"
#include "stepwatch/core/gpu_samples.h"

namespace stepwatch {

ImportError::ImportError(const std::string& file, const std::string& reason, int64_t offset)
    : std::runtime_error(file + ": " + reason + (offset >= 0 ? " (at byte " + std::to_string(offset) + ")" : "")),
      file_(file),
      offset_(offset) {}

namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

static_assert(import_detail::kParsePaddingBytes >= simdjson::SIMDJSON_PADDING,
              "buffers from read_file_maybe_gzip must be parseable in place");

// simdjson reports errors by code; every reader below passes them up to one place that knows the
// source name and the offset, and turns them into ImportError.
#define SW_JSON_TRY(expr)                                                              \
  do {                                                                                 \
    if (const error_code sw_err_ = (expr); sw_err_ != simdjson::SUCCESS) return sw_err_; \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Scalars. Kineto writes ids and times as numbers, but other writers (and old Kineto) put strings
// there ("tid": "stream 7", "pid": "Spans", "ts": "12.5"). We keep the text and interpret it late,
// only for the records we keep.

struct Scalar {
  std::string_view text;  // a number's token or a string's content; empty when absent
  bool is_string = false;
};

std::string_view trim(std::string_view s) {
  const auto not_space = [](char c) { return c != ' ' && c != '\t' && c != '\n' && c != '\r'; };
  while (!s.empty() && !not_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && !not_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<int64_t> round_to_int64(double v) {
  // 9.2e18 stays below INT64_MAX after rounding; anything larger is garbage, not an id or a time.
  if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(v));
}

std::optional<double> parse_double(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// Integers, hex ("0x7f": HIP streams and pointers) and floats, rounded ("3.0" is 3).
std::optional<int64_t> parse_integer(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  const char* const end = text.data() + text.size();
  int64_t v = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    const auto [p, ec] = std::from_chars(text.data() + 2, end, v, 16);
    return ec == std::errc{} && p == end ? std::optional<int64_t>(v) : std::nullopt;
  }
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc{} && p == end) return v;
  const std::optional<double> d = parse_double(text);
  return d ? round_to_int64(*d) : std::nullopt;
}

std::optional<int64_t> to_int(const Scalar& s) { return parse_integer(s.text); }

// The integer part of "123.456" (µs), advancing `i`; nullopt without digits or past the int64 ns
// range.
std::optional<int64_t> read_whole_us(std::string_view text, size_t& i) {
  constexpr int64_t kMaxWholeUs = (std::numeric_limits<int64_t>::max() - 1000) / 1000;
  const size_t first_digit = i;
  int64_t whole_us = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    const int digit = text[i] - '0';
    if (whole_us > (kMaxWholeUs - digit) / 10) return std::nullopt;
    whole_us = whole_us * 10 + digit;
  }
  if (i == first_digit) return std::nullopt;
  return whole_us;
}

// The decimals after the point (at `i`) in ns: three digits, the fourth rounds half away from
// zero like llround(ts * 1000), the rest cannot change the result. nullopt without digits.
std::optional<int64_t> read_fraction_ns(std::string_view text, size_t& i) {
  const size_t first_digit = i;
  int64_t frac_ns = 0;
  int64_t digit_ns = 100;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    const int digit = text[i] - '0';
    if (digit_ns > 0) {
      frac_ns += digit * digit_ns;
      digit_ns /= 10;
    } else if (i - first_digit == 3 && digit >= 5) {
      frac_ns += 1;
    }
  }
  if (i == first_digit) return std::nullopt;
  return frac_ns;
}

// Kineto times are microseconds with up to three decimals (ns). Parsing the decimal text keeps
// them exact: ts * 1000 in a double is not, once epoch microseconds (~1.7e15) are scaled past 2^53
// (hta-ns_resolution has 19 significant digits). Exponents and junk give nullopt.
std::optional<int64_t> parse_decimal_us_as_ns(std::string_view text) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  const std::optional<int64_t> whole_us = read_whole_us(text, i);
  if (!whole_us) return std::nullopt;
  int64_t frac_ns = 0;
  if (i < text.size() && text[i] == '.') {
    const std::optional<int64_t> frac = read_fraction_ns(text, ++i);
    if (!frac) return std::nullopt;
    frac_ns = *frac;
  }
  if (i != text.size()) return std::nullopt;
  const int64_t ns = *whole_us * 1000 + frac_ns;
  return negative ? -ns : ns;
}

std::optional<int64_t> to_time_ns(const Scalar& s) {
  const std::string_view text = trim(s.text);
  if (text.empty()) return std::nullopt;
  if (const std::optional<int64_t> ns = parse_decimal_us_as_ns(text)) return ns;
  const std::optional<double> us = parse_double(text);
  return us ? round_to_int64(*us * 1000.0) : std::nullopt;
}

uint64_t to_count(const Scalar& s) {
  const std::optional<int64_t> v = to_int(s);
  return v && *v > 0 ? static_cast<uint64_t>(*v) : 0;
}

// FNV-1a: stable across runs and platforms, unlike std::hash.
uint32_t stable_hash(std::string_view s) {
  uint32_t h = 2166136261u;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// A host thread id. Non-numeric tids ("PyTorch Profiler (0)") still name one thread consistently;
// 0 stays reserved for "unknown".
uint32_t thread_of(const Scalar& tid) {
  if (tid.text.empty()) return 0;
  if (const std::optional<int64_t> v = to_int(tid)) return static_cast<uint32_t>(*v);
  const uint32_t h = stable_hash(tid.text);
  return h != 0 ? h : 1;
}

// Old Kineto wrote GPU records with "tid": "stream 7": take the trailing number.
std::optional<int64_t> trailing_integer(std::string_view text) {
  text = trim(text);
  size_t digits_at = text.size();
  while (digits_at > 0 && is_digit(text[digits_at - 1])) --digits_at;
  if (digits_at == text.size()) return std::nullopt;
  return parse_integer(text.substr(digits_at));
}

// ---------------------------------------------------------------------------------------------
// Records.

// What a record becomes. Kineto's `cat`, matched case-insensitively with the 2021-era names.
enum class Category : uint8_t {
  kUnknown,  // no `cat` seen yet
  kIgnored,  // flows, "Trace", anything new, and python_function: the most numerous records of
             // newer traces, and no detector looks at Python frames
  kRange,
  kGpuRange,
  kKernel,
  kMemcpy,
  kMemset,
  kApiCall,
  kSync,
  kOverhead,
};

bool iequals(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != lower[i]) return false;
  }
  return true;
}

Category category_of(std::string_view cat) {
  static constexpr std::array<std::pair<std::string_view, Category>, 14> kCategories = {{
      {"cpu_op", Category::kRange},
      {"kernel", Category::kKernel},
      {"cuda_runtime", Category::kApiCall},
      {"user_annotation", Category::kRange},
      {"gpu_memcpy", Category::kMemcpy},
      {"gpu_memset", Category::kMemset},
      {"cuda_driver", Category::kApiCall},
      {"cuda_sync", Category::kSync},
      {"gpu_user_annotation", Category::kGpuRange},
      {"overhead", Category::kOverhead},
      {"operator", Category::kRange},  // 2021-era aliases
      {"runtime", Category::kApiCall},
      {"memcpy", Category::kMemcpy},
      {"memset", Category::kMemset},
  }};
  for (const auto& [name, category] : kCategories) {
    if (iequals(cat, name)) return category;
  }
  return Category::kIgnored;
}

struct KinetoArgs {
  Scalar device;
  Scalar stream;
  Scalar correlation;
  Scalar bytes;
  Scalar value;                // NVML samples in stepwatch's dumps (gpu_samples.h)
  std::string_view copy_kind;  // AMD copies: "HtoD", "DtoD"
  std::string_view sync_kind;  // cuda_sync: "Stream Sync", "Event Sync", ...
};

struct KinetoRecord {
  std::string_view ph;
  std::string_view name;
  Category category = Category::kUnknown;
  Scalar ts;
  Scalar dur;
  Scalar pid;
  Scalar tid;
  KinetoArgs args;
};

// Only complete events of known categories become Events; once a record is known to be something
// else the rest of it is not worth reading.
bool is_skipped(const KinetoRecord& r) {
  return (!r.ph.empty() && r.ph != "X") || r.category == Category::kIgnored;
}

// Host ranges need nothing from args; their args (shapes, call stacks) can be large.
bool needs_args(Category c) {
  return c != Category::kRange && c != Category::kOverhead && c != Category::kIgnored;
}

SyncKind sync_kind_of(std::string_view s) {
  if (iequals(s, "stream sync")) return SyncKind::kStream;
  if (iequals(s, "event sync")) return SyncKind::kEvent;
  if (iequals(s, "context sync") || iequals(s, "device sync")) return SyncKind::kContext;
  if (iequals(s, "stream wait event")) return SyncKind::kStreamWaitEvent;
  return SyncKind::kUnknown;
}

// GPU records carry the device in pid and the stream in tid; args say it explicitly when present.
int16_t device_of(const KinetoRecord& r) {
  std::optional<int64_t> d = to_int(r.args.device);
  if (!d) d = to_int(r.pid);
  if (!d || *d < 0 || *d > std::numeric_limits<int16_t>::max()) return -1;
  return static_cast<int16_t>(*d);
}

// Syncs that wait on no stream carry CUPTI's UINT32_MAX, written as 4294967295 or as -1 depending
// on the Kineto version: both become UINT32_MAX, as the live adapter sees it.
uint32_t stream_of(const KinetoRecord& r) {
  std::optional<int64_t> s = to_int(r.args.stream);
  if (!s) s = to_int(r.tid);
  if (!s && r.tid.is_string) s = trailing_integer(r.tid.text);
  if (!s || *s < std::numeric_limits<int32_t>::min() || *s > std::numeric_limits<uint32_t>::max()) return 0;
  return static_cast<uint32_t>(*s);
}

void place_on_gpu(Event& e, const KinetoRecord& r) {
  e.device = device_of(r);
  e.stream = stream_of(r);
  e.correlation = to_count(r.args.correlation);
}

void fill_copy(Event& e, const KinetoRecord& r) {
  place_on_gpu(e, r);
  CopyDescription copy = describe_copy(r.name);
  if (copy.kind == CopyKind::kUnknown) copy.kind = describe_copy(r.args.copy_kind).kind;
  e.detail = static_cast<uint8_t>(copy.kind);
  e.src_memory = copy.src;
  e.dst_memory = copy.dst;
  e.bytes = to_count(r.args.bytes);
}

void fill_sync(Event& e, const KinetoRecord& r) {
  // The record's pid/tid are the device and stream, not a host thread: thread stays 0.
  place_on_gpu(e, r);
  SyncKind kind = sync_kind_of(r.args.sync_kind);
  if (kind == SyncKind::kUnknown) kind = sync_kind_of(r.name);
  e.detail = static_cast<uint8_t>(kind);
}

EventKind event_kind_of(Category c) {
  switch (c) {
    case Category::kKernel: return EventKind::kKernel;
    case Category::kMemcpy: return EventKind::kMemcpy;
    case Category::kMemset: return EventKind::kMemset;
    case Category::kApiCall: return EventKind::kApiCall;
    case Category::kSync: return EventKind::kSync;
    case Category::kOverhead: return EventKind::kOverhead;
    default: return EventKind::kRange;
  }
}

void fill_event(Event& e, const KinetoRecord& r) {
  switch (r.category) {
    case Category::kKernel:
      place_on_gpu(e, r);
      e.collective = classify_collective(r.name);
      break;
    case Category::kMemcpy:
      fill_copy(e, r);
      break;
    case Category::kMemset:
      place_on_gpu(e, r);
      e.bytes = to_count(r.args.bytes);
      break;
    case Category::kApiCall:
      e.thread = thread_of(r.tid);
      e.correlation = to_count(r.args.correlation);
      e.detail = static_cast<uint8_t>(classify_api(r.name));
      break;
    case Category::kSync:
      fill_sync(e, r);
      break;
    case Category::kGpuRange:
      e.device = device_of(r);
      e.stream = stream_of(r);
      e.flags |= event_flags::kOnDevice;
      break;
    default:  // host ranges, overhead
      e.thread = thread_of(r.tid);
      if (r.category == Category::kRange && gpu_metric_of(r.name)) {
        e.bytes = to_count(r.args.value);
        e.device = device_of(r);
        e.thread = 0;  // samples belong to no host thread (gpu_samples.h)
      }
      break;
  }
}

void add_record(Trace& trace, const KinetoRecord& r) {
  if (r.ph != "X" || r.category == Category::kUnknown || r.category == Category::kIgnored) return;
  // A complete event whose times cannot be used is left out and counted by reason: a trace that
  // silently lost its kernels would be analyzed as an idle GPU.
  const std::optional<int64_t> start_ns = to_time_ns(r.ts);
  if (!start_ns) return trace.skip(r.ts.text.empty() ? "missing_ts" : "unparsable_ts");
  std::optional<int64_t> dur_ns = r.dur.text.empty() ? 0 : to_time_ns(r.dur);
  if (!dur_ns) return trace.skip("unparsable_dur");
  if (*dur_ns < 0) return trace.skip("negative_duration");
  const int64_t end_ns = *start_ns <= std::numeric_limits<int64_t>::max() - *dur_ns
                             ? *start_ns + *dur_ns
                             : std::numeric_limits<int64_t>::max();
  if (const TimeDomainError err = check_time_domain(*start_ns, end_ns); err != TimeDomainError::kNone) {
    return trace.skip(to_string(err));
  }
  Event& e = trace.add(event_kind_of(r.category), r.name, *start_ns, end_ns);
  fill_event(e, r);
}

// ---------------------------------------------------------------------------------------------
// JSON walking (simdjson On-Demand: one forward pass, unread values are skipped, not parsed).

// Values of an unexpected type count as absent: wrong types skip a field, never the file.
error_code read_string(od::value& v, std::string_view& out) {
  od::json_type type{};
  SW_JSON_TRY(v.type().get(type));
  if (type != od::json_type::string) return simdjson::SUCCESS;
  return v.get_string().get(out);
}

error_code read_scalar(od::value& v, Scalar& out) {
  od::json_type type{};
  SW_JSON_TRY(v.type().get(type));
  if (type == od::json_type::number) {
    out = Scalar{trim(v.raw_json_token()), false};
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::string) return simdjson::SUCCESS;
  out.is_string = true;
  return v.get_string().get(out.text);
}

error_code read_args(od::value& v, KinetoArgs& args) {
  od::json_type type{};
  SW_JSON_TRY(v.type().get(type));
  if (type != od::json_type::object) return simdjson::SUCCESS;
  od::object object;
  SW_JSON_TRY(v.get_object().get(object));
  for (auto field_result : object) {
    od::field field;
    SW_JSON_TRY(std::move(field_result).get(field));
    const od::raw_json_string key = field.key();
    od::value& value = field.value();
    if (key == "device") {
      SW_JSON_TRY(read_scalar(value, args.device));
    } else if (key == "stream") {
      SW_JSON_TRY(read_scalar(value, args.stream));
    } else if (key == "correlation") {
      SW_JSON_TRY(read_scalar(value, args.correlation));
    } else if (key == "bytes") {
      SW_JSON_TRY(read_scalar(value, args.bytes));
    } else if (key == "value") {
      SW_JSON_TRY(read_scalar(value, args.value));
    } else if (key == "kind") {
      SW_JSON_TRY(read_string(value, args.copy_kind));
    } else if (key == "cuda_sync_kind") {
      SW_JSON_TRY(read_string(value, args.sync_kind));
    }
  }
  return simdjson::SUCCESS;
}

// Fields come in any order (Kineto writes ph, cat, name first, but metadata events do not).
error_code read_record(od::object& object, KinetoRecord& r) {
  for (auto field_result : object) {
    od::field field;
    SW_JSON_TRY(std::move(field_result).get(field));
    const od::raw_json_string key = field.key();
    od::value& value = field.value();
    if (key == "ph") {
      SW_JSON_TRY(read_string(value, r.ph));
    } else if (key == "cat") {
      std::string_view cat;
      SW_JSON_TRY(read_string(value, cat));
      r.category = category_of(cat);
    } else if (key == "name") {
      SW_JSON_TRY(read_string(value, r.name));
    } else if (key == "ts") {
      SW_JSON_TRY(read_scalar(value, r.ts));
    } else if (key == "dur") {
      SW_JSON_TRY(read_scalar(value, r.dur));
    } else if (key == "pid") {
      SW_JSON_TRY(read_scalar(value, r.pid));
    } else if (key == "tid") {
      SW_JSON_TRY(read_scalar(value, r.tid));
    } else if (key == "args" && (needs_args(r.category) ||
                                 (r.category == Category::kRange && gpu_metric_of(r.name)))) {
      SW_JSON_TRY(read_args(value, r.args));
    }
    // Leaving early is safe: the enclosing array iterator skips the rest of the object.
    if (is_skipped(r)) return simdjson::SUCCESS;
  }
  return simdjson::SUCCESS;
}

class KinetoReader {
 public:
  explicit KinetoReader(Trace& trace) : trace_(trace) {}

  error_code read_document(od::document& doc) {
    od::json_type type{};
    SW_JSON_TRY(doc.type().get(type));
    if (type == od::json_type::array) {
      od::array events;
      SW_JSON_TRY(doc.get_array().get(events));
      return read_events(events);
    }
    if (type != od::json_type::object) return simdjson::SUCCESS;  // not a trace; see saw_events()
    od::object top;
    SW_JSON_TRY(doc.get_object().get(top));
    return read_top_object(top);
  }

  bool saw_events() const { return saw_events_; }

 private:
  error_code read_top_object(od::object& top) {
    for (auto field_result : top) {
      od::field field;
      SW_JSON_TRY(std::move(field_result).get(field));
      const od::raw_json_string key = field.key();
      od::value& value = field.value();
      if (key == "traceEvents") {
        od::json_type type{};
        SW_JSON_TRY(value.type().get(type));
        if (type != od::json_type::array) continue;
        od::array events;
        SW_JSON_TRY(value.get_array().get(events));
        SW_JSON_TRY(read_events(events));
      } else if (key == "distributedInfo") {
        SW_JSON_TRY(read_distributed_info(value));
      } else if (key == "deviceProperties") {
        SW_JSON_TRY(read_device_properties(value));
      } else if (key == "baseTimeNanoseconds") {
        Scalar base;
        SW_JSON_TRY(read_scalar(value, base));
        trace_.clock_base_ns = to_int(base).value_or(0);
      }
    }
    return simdjson::SUCCESS;
  }

  error_code read_events(od::array& events) {
    saw_events_ = true;
    for (auto element : events) {
      od::value v;
      SW_JSON_TRY(std::move(element).get(v));
      od::json_type type{};
      SW_JSON_TRY(v.type().get(type));
      if (type != od::json_type::object) continue;
      od::object object;
      SW_JSON_TRY(v.get_object().get(object));
      KinetoRecord record;
      SW_JSON_TRY(read_record(object, record));
      add_record(trace_, record);
    }
    return simdjson::SUCCESS;
  }

  error_code read_distributed_info(od::value& v) {
    od::json_type type{};
    SW_JSON_TRY(v.type().get(type));
    if (type != od::json_type::object) return simdjson::SUCCESS;
    od::object info;
    SW_JSON_TRY(v.get_object().get(info));
    for (auto field_result : info) {
      od::field field;
      SW_JSON_TRY(std::move(field_result).get(field));
      if (field.key() != "rank") continue;
      Scalar rank;
      SW_JSON_TRY(read_scalar(field.value(), rank));
      const std::optional<int64_t> r = to_int(rank);
      if (r && *r >= 0 && *r <= std::numeric_limits<int>::max()) trace_.rank = static_cast<int>(*r);
    }
    return simdjson::SUCCESS;
  }

  // The first device's name; a multi-GPU trace lists every visible device, the first is enough
  // to say what the trace ran on.
  error_code read_device_properties(od::value& v) {
    od::json_type type{};
    SW_JSON_TRY(v.type().get(type));
    if (type != od::json_type::array) return simdjson::SUCCESS;
    od::array devices;
    SW_JSON_TRY(v.get_array().get(devices));
    for (auto element : devices) {
      od::value device;
      SW_JSON_TRY(std::move(element).get(device));
      SW_JSON_TRY(device.type().get(type));
      if (type != od::json_type::object) break;
      od::object properties;
      SW_JSON_TRY(device.get_object().get(properties));
      for (auto field_result : properties) {
        od::field field;
        SW_JSON_TRY(std::move(field_result).get(field));
        if (field.key() != "name") continue;
        std::string_view name;
        SW_JSON_TRY(read_string(field.value(), name));
        trace_.device_name = std::string(name);
      }
      break;
    }
    return simdjson::SUCCESS;
  }

  Trace& trace_;
  bool saw_events_ = false;
};

#undef SW_JSON_TRY

std::optional<int64_t> current_offset(od::document& doc, std::string_view json) {
  const char* at = nullptr;
  if (doc.current_location().get(at) != simdjson::SUCCESS) return std::nullopt;
  if (at < json.data() || at > json.data() + json.size()) return std::nullopt;
  return at - json.data();
}

// Where the parser stood when it failed. simdjson finds unbalanced brackets up front (and then
// stands at byte 0), and past the last token there is no location: both mean that the text ended
// before the document did, so the end of the text is the useful answer.
int64_t error_offset(od::document& doc, std::string_view json, error_code err) {
  const std::optional<int64_t> at = current_offset(doc, json);
  if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || !at) return static_cast<int64_t>(json.size());
  return *at;
}

std::string json_problem(error_code err) { return std::string("malformed JSON: ") + simdjson::error_message(err); }

Trace parse_kineto(simdjson::padded_string_view json, const std::string& source) {
  Trace trace;
  trace.source = source;
  trace.format = "kineto";

  od::parser parser;
  od::document doc;
  if (const error_code err = parser.iterate(json).get(doc); err != simdjson::SUCCESS) {
    // Stage 1 rejects an odd number of quotes: the text ends inside a string.
    const int64_t offset = err == simdjson::UNCLOSED_STRING ? static_cast<int64_t>(json.size()) : -1;
    throw ImportError(source, json_problem(err), offset);
  }
  KinetoReader reader(trace);
  if (const error_code err = reader.read_document(doc); err != simdjson::SUCCESS) {
    throw ImportError(source, json_problem(err), error_offset(doc, json, err));
  }
  if (!reader.saw_events()) {
    throw ImportError(source, "not a Kineto trace: neither a traceEvents array nor a top-level array");
  }
  // On-Demand stops after the root value; a location past it means more text follows.
  if (const std::optional<int64_t> at = current_offset(doc, json)) {
    throw ImportError(source, "malformed JSON: content after the document", *at);
  }
  return trace;
}

}  // namespace

std::string read_file_maybe_gzip(const std::string& path) {
  std::string bytes = import_detail::read_whole_file(path);
  if (import_detail::has_gzip_magic(bytes)) return import_detail::gunzip(bytes, path);
  return bytes;
}

Trace import_kineto_json(std::string_view json, const std::string& source) {
  const simdjson::padded_string padded(json);
  return parse_kineto(padded, source);
}

Trace import_kineto_file(const std::string& path) {
  const std::string text = read_file_maybe_gzip(path);
  // read_file_maybe_gzip allocates the parser's padding already; only a foreign buffer is copied.
  if (text.capacity() >= text.size() + simdjson::SIMDJSON_PADDING) return parse_kineto(simdjson::padded_string_view(text), path);
  return import_kineto_json(text, path);
}

}  // namespace stepwatch
