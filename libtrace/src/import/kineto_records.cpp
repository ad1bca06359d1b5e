#include "import/kineto_records.h"

#include <algorithm>
#include <array>
#include <cstring>
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

bool iequals(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != lower[i]) return false;
  }
  return true;
}

Category category_of(std::string_view cat) {
  static constexpr std::array<std::pair<std::string_view, Category>, 15> kCategories = {{
      {"cpu_op", Category::kRange},
      {"python_function", Category::kPythonFrame},
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

// PyTorch's `record_param_comms` op around each collective's launch carries its operation, element
// count and dtype: the size the offline straggler and exposed-collective evidence need (NCCL's own
// NVTX ranges carry it live). Joined to the kernels by core/nccl_join.h like any NCCL range.
bool is_comms_op(std::string_view name) { return name == "record_param_comms"; }

// Bytes per element of PyTorch's scalar types as Kineto names them (c10 ScalarType names).
uint64_t dtype_bytes(std::string_view t) {
  static constexpr std::array<std::pair<std::string_view, uint8_t>, 16> sizes = {{
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4}, {"Long", 8}, {"Short", 2},
      {"Char", 1}, {"Byte", 1}, {"Bool", 1}, {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"ComplexHalf", 4},
      {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"UInt16", 2},
  }};
  for (const auto& [name, size] : sizes) {
    if (t == name) return size;
  }
  return 0;
}

// Only complete events of known categories become Events; once a record is known to be something
// else the rest of it is not worth reading.
bool is_skipped(const KinetoRecord& r) {
  return (!r.ph.empty() && r.ph != "X") || r.category == Category::kIgnored;
}

// Host ranges need nothing from args; their args (shapes, call stacks) can be large.
bool needs_args(Category c) {
  return c != Category::kRange && c != Category::kOverhead && c != Category::kIgnored && c != Category::kPythonFrame;
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
    case Category::kPythonFrame: return EventKind::kPythonFrame;
    default: return EventKind::kRange;
  }
}

// Decided once per distinct name: a trace repeats a few thousand names millions of times.
// (Names past the name table's cap share its overflow id: those are classified each time.)
CollectiveType collective_of(EventContext& c, NameId id, std::string_view name) {
  if (id == c.overflow_name) return classify_collective(name);
  if (id >= c.collective_by_name.size()) c.collective_by_name.resize(id + 1, EventContext::kUnclassified);
  uint8_t& v = c.collective_by_name[id];
  if (v == EventContext::kUnclassified) v = static_cast<uint8_t>(classify_collective(name));
  return static_cast<CollectiveType>(v);
}

ApiClass api_class_of(EventContext& c, NameId id, std::string_view name) {
  if (id == c.overflow_name) return classify_api(name);
  if (id >= c.api_class_by_name.size()) c.api_class_by_name.resize(id + 1, EventContext::kUnclassified);
  uint8_t& v = c.api_class_by_name[id];
  if (v == EventContext::kUnclassified) v = static_cast<uint8_t>(classify_api(name));
  return static_cast<ApiClass>(v);
}

void fill_event(Event& e, const KinetoRecord& r, EventContext& c) {
  switch (r.category) {
    case Category::kKernel:
      place_on_gpu(e, r);
      e.collective = collective_of(c, e.name, r.name);
      // ncclDevKernel_Generic (RCCL) names no operation; PyTorch's args do.
      if (e.collective == CollectiveType::kOther) e.collective = classify_collective_op(r.args.collective_name);
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
      e.detail = static_cast<uint8_t>(api_class_of(c, e.name, r.name));
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
      if (r.category == Category::kRange && is_comms_op(r.name)) {
        const CollectiveType op = classify_collective_op(r.args.collective_name);
        e.collective = op == CollectiveType::kOther ? CollectiveType::kNone : op;
        const uint64_t width = dtype_bytes(r.args.dtype);
        const uint64_t n = to_count(r.args.in_nelems);
        if (e.collective != CollectiveType::kNone && width > 0 && n <= (uint64_t{1} << 56) / width) e.bytes = n * width;
      }
      break;
  }
}

// The interned id of a name, through a small cache of recent names (direct-mapped on the name's
// length and first and last bytes) that saves the name table's lock and full-string hash.
NameId intern(EventContext& c, std::string_view name) {
  uint64_t head = 0;
  uint64_t tail = 0;
  const size_t n = std::min<size_t>(name.size(), 8);
  if (n > 0) {
    std::memcpy(&head, name.data(), n);
    std::memcpy(&tail, name.data() + name.size() - n, n);
  }
  const uint64_t h = (head * 0x9E3779B97F4A7C15ull) ^ (tail * 0xC2B2AE3D27D4EB4Full) ^ name.size();
  auto& slot = c.recent_names[(h >> 40) % c.recent_names.size()];
  if (slot.id != EventContext::kNoCachedName && slot.text == name) return slot.id;
  slot.id = c.trace.names.intern(name);
  slot.text = c.trace.names.view(slot.id);
  return slot.id;
}

}  // namespace

void add_record(EventContext& c, const KinetoRecord& r) {
  Trace& trace = c.trace;
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
  Event& e = c.events.add();
  e.kind = event_kind_of(r.category);
  e.name = intern(c, r.name);
  e.start_ns = *start_ns;
  e.end_ns = end_ns;
  fill_event(e, r, c);
}

namespace {

// ---------------------------------------------------------------------------------------------
// JSON walking (simdjson On-Demand: one forward pass, unread values are skipped, not parsed).

// Which field a key names, from its raw text (simdjson's raw_json_string points just past the
// opening quote; the key ends at the next quote). A switch on the first character and a compare
// of a few bytes: comparing every key against every field name was a tenth of the import's time.
// Escaped keys are not recognized (as with simdjson's own comparison).
enum class Field : uint8_t { kOther, kPh, kCat, kName, kTs, kDur, kPid, kTid, kArgs };
enum class ArgField : uint8_t {
  kOther, kDevice, kStream, kCorrelation, kBytes, kValue, kKind, kSyncKind, kCollectiveName, kInNelems, kDtype
};

template <size_t N>
bool key_is(const char* raw, const char (&name)[N]) {
  for (size_t i = 0; i + 1 < N; ++i) {
    if (raw[i] != name[i]) return false;  // stops at the closing quote at the latest
  }
  return raw[N - 1] == '"';
}

Field field_of(const char* k) {
  switch (k[0]) {
    case 'p': return key_is(k, "ph") ? Field::kPh : key_is(k, "pid") ? Field::kPid : Field::kOther;
    case 'c': return key_is(k, "cat") ? Field::kCat : Field::kOther;
    case 'n': return key_is(k, "name") ? Field::kName : Field::kOther;
    case 't': return key_is(k, "ts") ? Field::kTs : key_is(k, "tid") ? Field::kTid : Field::kOther;
    case 'd': return key_is(k, "dur") ? Field::kDur : Field::kOther;
    case 'a': return key_is(k, "args") ? Field::kArgs : Field::kOther;
    default: return Field::kOther;
  }
}

ArgField arg_field_of(const char* k) {
  switch (k[0]) {
    case 'd': return key_is(k, "device") ? ArgField::kDevice : key_is(k, "dtype") ? ArgField::kDtype : ArgField::kOther;
    case 'I': return key_is(k, "In msg nelems") ? ArgField::kInNelems : ArgField::kOther;
    case 's': return key_is(k, "stream") ? ArgField::kStream : ArgField::kOther;
    case 'c':
      return key_is(k, "correlation") ? ArgField::kCorrelation
             : key_is(k, "cuda_sync_kind") ? ArgField::kSyncKind
                                            : ArgField::kOther;
    case 'b': return key_is(k, "bytes") ? ArgField::kBytes : ArgField::kOther;
    case 'v': return key_is(k, "value") ? ArgField::kValue : ArgField::kOther;
    case 'k': return key_is(k, "kind") ? ArgField::kKind : ArgField::kOther;
    case 'C': return key_is(k, "Collective name") ? ArgField::kCollectiveName : ArgField::kOther;
    default: return ArgField::kOther;
  }
}

error_code read_arg(ArgField f, od::value& value, KinetoArgs& args) {
  switch (f) {
    case ArgField::kDevice: return read_scalar(value, args.device);
    case ArgField::kStream: return read_scalar(value, args.stream);
    case ArgField::kCorrelation: return read_scalar(value, args.correlation);
    case ArgField::kBytes: return read_scalar(value, args.bytes);
    case ArgField::kValue: return read_scalar(value, args.value);
    case ArgField::kKind: return read_string(value, args.copy_kind);
    case ArgField::kSyncKind: return read_string(value, args.sync_kind);
    case ArgField::kCollectiveName: return read_string(value, args.collective_name);
    case ArgField::kInNelems: return read_scalar(value, args.in_nelems);
    case ArgField::kDtype: return read_string(value, args.dtype);
    default: return simdjson::SUCCESS;
  }
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
    const ArgField f = arg_field_of(field.key().raw());
    if (f != ArgField::kOther) SW_JSON_TRY(read_arg(f, field.value(), args));
  }
  return simdjson::SUCCESS;
}

error_code read_field(Field f, od::value& value, KinetoRecord& r) {
  switch (f) {
    case Field::kPh: return read_string(value, r.ph);
    case Field::kCat: {
      std::string_view cat;
      SW_JSON_TRY(read_string(value, cat));
      r.category = category_of(cat);
      return simdjson::SUCCESS;
    }
    case Field::kName: return read_string(value, r.name);
    case Field::kTs: return read_scalar(value, r.ts);
    case Field::kDur: return read_scalar(value, r.dur);
    case Field::kPid: return read_scalar(value, r.pid);
    case Field::kTid: return read_scalar(value, r.tid);
    case Field::kArgs:
      // Host ranges need nothing from args (shapes, call stacks: often the biggest part of them),
      // except the NVML samples of stepwatch's own dumps.
      if (needs_args(r.category) ||
          (r.category == Category::kRange && (gpu_metric_of(r.name) || is_comms_op(r.name)))) {
        return read_args(value, r.args);
      }
      return simdjson::SUCCESS;
    default: return simdjson::SUCCESS;
  }
}

// Fields come in any order (Kineto writes ph, cat, name first, but metadata events do not).
error_code read_record(od::object& object, KinetoRecord& r) {
  for (auto field_result : object) {
    od::field field;
    SW_JSON_TRY(std::move(field_result).get(field));
    const Field f = field_of(field.key().raw());
    if (f != Field::kOther) SW_JSON_TRY(read_field(f, field.value(), r));
    // Leaving early is safe: the enclosing array iterator skips the rest of the object.
    if (is_skipped(r)) return simdjson::SUCCESS;
  }
  return simdjson::SUCCESS;
}

}  // namespace

error_code read_event(od::value& v, KinetoRecord& record) {
  record = KinetoRecord{};
  od::json_type type{};
  SW_JSON_TRY(v.type().get(type));
  if (type != od::json_type::object) return simdjson::SUCCESS;  // not an event: nothing to keep
  od::object object;
  SW_JSON_TRY(v.get_object().get(object));
  return read_record(object, record);
}

}  // namespace stepwatch::import_detail
