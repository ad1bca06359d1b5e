#include "import/kineto_records.h"

#include <array>
#include <limits>
#include <optional>
#include <utility>

#include "import/event_collector.h"
#include "import/kineto_scalars.h"
#include "stepwatch/core/classify.h"
#include "stepwatch/core/gpu_samples.h"

namespace stepwatch::import_detail {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// Values of an unexpected type count as absent (a scalar notes that it was unreadable): wrong types
// skip a field, never the file.
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
  if (type != od::json_type::string) {
    out.unreadable = type != od::json_type::null;
    return simdjson::SUCCESS;
  }
  out.is_string = true;
  return v.get_string().get(out.text);
}

namespace {

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

void add_record(Trace& trace, EventCollector& events, const KinetoRecord& r) {
  if (r.category == Category::kUnknown || r.category == Category::kIgnored) return;
  // Other phases (metadata, flows, instants) are not records of ours; a record of a category we
  // import whose phase is missing or not a string is one we cannot use.
  if (r.ph.empty()) return trace.skip("missing_ph");
  if (r.ph != "X") return;
  // A complete event whose times cannot be used is left out and counted by reason: a trace that
  // silently lost its kernels would be analyzed as an idle GPU.
  const std::optional<int64_t> start_ns = to_time_ns(r.ts);
  if (!start_ns) return trace.skip(r.ts.text.empty() && !r.ts.unreadable ? "missing_ts" : "unparsable_ts");
  // No dur: an instant. A dur that is there but not a number is no instant.
  std::optional<int64_t> dur_ns = r.dur.text.empty() && !r.dur.unreadable ? 0 : to_time_ns(r.dur);
  if (!dur_ns) return trace.skip("unparsable_dur");
  if (*dur_ns < 0) return trace.skip("negative_duration");
  const int64_t end_ns = *start_ns <= std::numeric_limits<int64_t>::max() - *dur_ns
                             ? *start_ns + *dur_ns
                             : std::numeric_limits<int64_t>::max();
  if (const TimeDomainError err = check_time_domain(*start_ns, end_ns); err != TimeDomainError::kNone) {
    return trace.skip(to_string(err));
  }
  Event& e = events.add();
  e.kind = event_kind_of(r.category);
  e.name = trace.names.intern(r.name);
  e.start_ns = *start_ns;
  e.end_ns = end_ns;
  fill_event(e, r);
}

// ---------------------------------------------------------------------------------------------
// JSON walking (simdjson On-Demand: one forward pass, unread values are skipped, not parsed).

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

}  // namespace

error_code read_event(od::value& v, Trace& trace, EventCollector& events) {
  od::json_type type{};
  SW_JSON_TRY(v.type().get(type));
  if (type != od::json_type::object) return simdjson::SUCCESS;  // not an event: nothing to keep
  od::object object;
  SW_JSON_TRY(v.get_object().get(object));
  KinetoRecord record;
  SW_JSON_TRY(read_record(object, record));
  add_record(trace, events, record);
  return simdjson::SUCCESS;
}

}  // namespace stepwatch::import_detail
