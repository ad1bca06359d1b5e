// Kineto-compatible Chrome-trace JSON writer.
//
// Categories and argument names follow what a PyTorch profiler trace carries (see the corpus:
// `kernel`, `gpu_memcpy`, `gpu_memset`, `cuda_runtime`/`cuda_driver`, `cuda_sync`,
// `user_annotation`, `gpu_user_annotation`, `overhead`), so the output opens in Perfetto UI,
// chrome://tracing and HTA, and reads back through the Kineto importer with the same events.
//
// The JSON is streamed by hand (one event per line): flight-recorder dumps can hold millions of
// events and must not be built as a DOM first. Timestamps are written from integer nanoseconds
// as exact decimal text ("123.456" µs), never through a double: CLOCK_REALTIME nanoseconds
// (~1.7e18) do not fit a double's 53-bit mantissa, and our importer reads the decimal text
// exactly. Times are absolute (`baseTimeNanoseconds` is 0): a reader that ignores the base, as
// ours does, still sees the data's own clock.
#include "stepwatch/export/kineto_writer.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/classify.h"
#include "stepwatch/core/gpu_samples.h"
#include "stepwatch/core/step_sources.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {
namespace {

// ---------------------------------------------------------------------------------------------
// Text helpers

void append_int(std::string& out, int64_t v) {
  std::array<char, 24> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  (void)ec;  // 24 chars always hold an int64
  out.append(buf.data(), end);
}

void append_uint(std::string& out, uint64_t v) {
  std::array<char, 24> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  (void)ec;
  out.append(buf.data(), end);
}

// Nanoseconds as microseconds with exactly 3 decimals: 1234567 -> "1234.567", -1500 -> "-1.500".
void append_us(std::string& out, int64_t ns) {
  uint64_t magnitude = ns < 0 ? uint64_t(0) - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out.push_back('-');
  append_uint(out, magnitude / 1000);
  const auto frac = static_cast<unsigned>(magnitude % 1000);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + frac / 10 % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t len = 0;
  uint32_t min_cp = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { len = 2; min_cp = 0x80; cp = c & 0x1Fu; }
  else if ((c & 0xF0) == 0xE0) { len = 3; min_cp = 0x800; cp = c & 0x0Fu; }
  else if ((c & 0xF8) == 0xF0) { len = 4; min_cp = 0x10000; cp = c & 0x07u; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// A JSON string literal. Names come from CUPTI, NVTX and user code: any byte can appear, and
// strict parsers (simdjson) reject invalid UTF-8, so invalid bytes become U+FFFD.
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t len = utf8_sequence_length(s, i);
      if (len == 0) {
        out.append("\xEF\xBF\xBD");
        ++i;
      } else {
        out.append(s.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default:
        if (c < 0x20) {
          out.append("\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

// ---------------------------------------------------------------------------------------------
// Kineto names

std::string_view kineto_memory_word(MemoryKind k) {
  switch (k) {
    case MemoryKind::kPageable: return "Pageable";
    case MemoryKind::kPinned: return "Pinned";
    case MemoryKind::kDevice: return "Device";
    case MemoryKind::kArray: return "Array";
    case MemoryKind::kManaged: return "Managed";
    default: return "Unknown";
  }
}

std::string_view kineto_copy_word(CopyKind k) {
  switch (k) {
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
    default: return "Unknown";
  }
}

// Readers take a copy's direction and memory kinds from its name ("Memcpy HtoD (Pageable ->
// Device)"), so the name must say what the event's fields say. Keep the recorded name when it
// already does; otherwise write Kineto's form.
std::string copy_name(const Event& e, std::string_view recorded) {
  const CopyDescription d = describe_copy(recorded);
  if (recorded.substr(0, 6) == "Memcpy" && d.kind == e.copy_kind() && d.src == e.src_memory &&
      d.dst == e.dst_memory) {
    return std::string(recorded);
  }
  std::string name = "Memcpy ";
  name += kineto_copy_word(e.copy_kind());
  name += " (";
  name += kineto_memory_word(e.src_memory);
  name += " -> ";
  name += kineto_memory_word(e.dst_memory);
  name += ")";
  return name;
}

std::string memset_name(const Event& e, std::string_view recorded) {
  if (recorded.substr(0, 6) == "Memset") return std::string(recorded);
  std::string name = "Memset (";
  name += kineto_memory_word(e.dst_memory == MemoryKind::kUnknown ? MemoryKind::kDevice : e.dst_memory);
  name += ")";
  return name;
}

// Kineto's cuda_sync names double as `args.cuda_sync_kind`.
std::string_view sync_name(SyncKind k) {
  switch (k) {
    case SyncKind::kEvent: return "Event Sync";
    case SyncKind::kStreamWaitEvent: return "Stream Wait Event";
    case SyncKind::kStream: return "Stream Sync";
    case SyncKind::kContext: return "Context Sync";
    default: return "Unknown Sync";
  }
}

// Runtime (`cuda*`, `hip*`) vs driver (`cu*`) API: Kineto files them under different categories.
std::string_view api_category(std::string_view name) {
  if (name.substr(0, 2) == "cu" && name.substr(0, 4) != "cuda") return "cuda_driver";
  return "cuda_runtime";
}

// The process id for host rows. PyTorch's main thread has tid == pid and makes most CUDA
// calls, so the busiest API thread stands for the process.
int64_t host_process_id(const Trace& trace) {
  std::map<uint32_t, size_t> calls;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::kApiCall && e.thread != 0) ++calls[e.thread];
  }
  if (calls.empty()) {
    for (const Event& e : trace.events) {
      if (e.kind == EventKind::kRange && !e.has_flag(event_flags::kOnDevice) && e.thread != 0) return e.thread;
    }
    return 1;
  }
  auto best = std::max_element(calls.begin(), calls.end(),
                               [](const auto& x, const auto& y) { return x.second < y.second; });
  return best->first;
}

// ---------------------------------------------------------------------------------------------
// The writer

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) { line_.reserve(512); }

  // Starts one complete ("X") event; args follow through arg_*(), then end().
  void begin(std::string_view cat, std::string_view name, int64_t pid, int64_t tid, int64_t start_ns,
             int64_t dur_ns) {
    start_line();
    line_.append("{\"ph\":\"X\",\"cat\":");
    append_json_string(line_, cat);
    line_.append(",\"name\":");
    append_json_string(line_, name);
    line_.append(",\"pid\":");
    append_int(line_, pid);
    line_.append(",\"tid\":");
    append_int(line_, tid);
    line_.append(",\"ts\":");
    append_us(line_, start_ns);
    line_.append(",\"dur\":");
    append_us(line_, std::max<int64_t>(dur_ns, 0));
    line_.append(",\"args\":{");
    first_arg_ = true;
  }
  void arg_int(std::string_view key, int64_t v) {
    key_(key);
    append_int(line_, v);
  }
  void arg_uint(std::string_view key, uint64_t v) {
    key_(key);
    append_uint(line_, v);
  }
  void arg_double(std::string_view key, double v) {
    key_(key);
    std::array<char, 48> buf{};
    const int n = std::snprintf(buf.data(), buf.size(), "%.6g", v);
    line_.append(buf.data(), static_cast<size_t>(std::max(n, 0)));
  }
  void arg_string(std::string_view key, std::string_view v) {
    key_(key);
    append_json_string(line_, v);
  }
  void end() {
    line_.append("}}");
    flush_line();
  }

  // Chrome-trace metadata ("M") rows: process and thread labels for the UI.
  void metadata(std::string_view what, int64_t pid, int64_t tid, std::string_view label) {
    start_line();
    line_.append("{\"ph\":\"M\",\"name\":");
    append_json_string(line_, what);
    line_.append(",\"pid\":");
    append_int(line_, pid);
    line_.append(",\"tid\":");
    append_int(line_, tid);
    line_.append(",\"args\":{\"name\":");
    append_json_string(line_, label);
    line_.append("}}");
    flush_line();
  }

 private:
  void start_line() {
    line_.clear();
    if (!first_event_) line_.append(",\n");
    first_event_ = false;
  }
  void key_(std::string_view key) {
    if (!first_arg_) line_.push_back(',');
    first_arg_ = false;
    append_json_string(line_, key);
    line_.push_back(':');
  }
  void flush_line() { out_.write(line_.data(), static_cast<std::streamsize>(line_.size())); }

  std::ostream& out_;
  std::string line_;
  bool first_event_ = true;
  bool first_arg_ = true;
};

// A step mark is an instant; Kineto has only ranges for steps. Written as a user_annotation
// spanning to the next mark (the last to the end of the data), it reads back as a step range
// with the same window the marks define (ARCHITECTURE.md "Step segmentation").
struct MarkSpan {
  const Event* mark;
  int64_t end_ns;
};

std::vector<MarkSpan> spans_of_step_marks(const Trace& trace, int64_t data_end_ns) {
  std::vector<const Event*> marks;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::kStepMark) marks.push_back(&e);
  }
  std::stable_sort(marks.begin(), marks.end(),
                   [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  std::vector<MarkSpan> spans;
  for (size_t i = 0; i < marks.size(); ++i) {
    const int64_t end = i + 1 < marks.size() ? marks[i + 1]->start_ns : std::max(data_end_ns, marks[i]->start_ns);
    spans.push_back({marks[i], end});
  }
  return spans;
}

std::string step_mark_name(const Event& mark, std::string_view recorded) {
  if (recorded.empty()) return "ProfilerStep#" + std::to_string(std::max<int64_t>(mark.step, 0));
  std::string name(recorded);
  if (mark.step >= 0 && step_number_from_name(recorded) != mark.step) name += "#" + std::to_string(mark.step);
  return name;
}

// The head of the document: schema, rank, the devices seen, up to the traceEvents array.
void write_head(const Trace& trace, const std::set<int>& devices, std::ostream& out) {
  std::string head = "{\n\"schemaVersion\":1,\n";
  if (trace.rank >= 0) {
    head += "\"distributedInfo\":{\"rank\":";
    append_int(head, trace.rank);
    head += "},\n";
  }
  head += "\"deviceProperties\":[";
  bool first = true;
  for (int d : devices) {
    if (!first) head += ",";
    first = false;
    head += "{\"id\":";
    append_int(head, d);
    head += ",\"name\":";
    append_json_string(head, trace.device_name.empty() ? std::string_view("unknown") : trace.device_name);
    head += "}";
  }
  head += "],\n";
  if (trace.gpu_traced) head += "\"stepwatchGpuTraced\":1,\n";
  head += "\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":0,\n\"traceEvents\":[\n";
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
}

// The device-side fields every GPU record carries.
void gpu_args(EventWriter& w, const Event& e, int64_t device) {
  w.arg_int("device", device);
  w.arg_int("context", 1);
  w.arg_uint("stream", e.stream);
  w.arg_uint("correlation", e.correlation);
}

// One event as Kineto writes its kind (step marks are written apart, as spans).
void write_event(EventWriter& w, const Trace& trace, const Event& e, int64_t pid) {
  const std::string_view recorded = trace.names.view(e.name);
  const int64_t dur = e.end_ns - e.start_ns;
  const int64_t device = std::max<int>(e.device, 0);
  switch (e.kind) {
    case EventKind::kKernel:
      w.begin("kernel", recorded, device, e.stream, e.start_ns, dur);
      gpu_args(w, e, device);
      w.end();
      break;
    case EventKind::kMemcpy:
    case EventKind::kMemset:
      if (e.kind == EventKind::kMemcpy) {
        w.begin("gpu_memcpy", copy_name(e, recorded), device, e.stream, e.start_ns, dur);
      } else {
        w.begin("gpu_memset", memset_name(e, recorded), device, e.stream, e.start_ns, dur);
      }
      gpu_args(w, e, device);
      w.arg_uint("bytes", e.bytes);
      // bytes/ns is GB/s.
      if (dur > 0) w.arg_double("memory bandwidth (GB/s)", double(e.bytes) / double(dur));
      w.end();
      break;
    case EventKind::kApiCall:
      w.begin(api_category(recorded), recorded, pid, e.thread, e.start_ns, dur);
      w.arg_uint("correlation", e.correlation);
      w.end();
      break;
    case EventKind::kSync: {
      const std::string_view kind = sync_name(e.sync_kind());
      w.begin("cuda_sync", kind, device, e.stream, e.start_ns, dur);
      w.arg_string("cuda_sync_kind", kind);
      w.arg_uint("stream", e.stream);
      w.arg_uint("correlation", e.correlation);
      w.arg_int("device", device);
      w.arg_int("context", 1);
      w.end();
      break;
    }
    case EventKind::kRange:
      if (e.has_flag(event_flags::kOnDevice)) {
        w.begin("gpu_user_annotation", recorded, device, e.stream, e.start_ns, dur);
      } else if (e.step >= 0) {
        // A numbered step range (the C API's explicit steps are named "step"): keep the number
        // in the name so that the step reads back with it.
        w.begin("user_annotation", step_mark_name(e, recorded), pid, e.thread, e.start_ns, dur);
      } else {
        w.begin("user_annotation", recorded, pid, e.thread, e.start_ns, dur);
        if (gpu_metric_of(recorded)) {
          // An NVML sample (gpu_samples.h): its reading travels in args, read back by the importer.
          w.arg_uint("value", e.bytes);
          w.arg_int("device", e.device);
        }
      }
      w.end();
      break;
    case EventKind::kStepMark:
      break;  // written apart, as spans
    case EventKind::kPythonFrame:
      // Kineto's python_function event (live sites span the blocking call they were read at).
      if (e.name != kNoName) {
        w.begin("python_function", recorded, pid, e.thread, e.start_ns, dur);
        w.end();
      }
      break;
    case EventKind::kAllocation:
      break;  // Kineto has no record for driver-level allocations; the exit summary counts them
    case EventKind::kOverhead:
      w.begin("overhead", recorded.empty() ? std::string_view("Activity Buffer Request") : recorded, -1, 0,
              e.start_ns, dur);
      w.end();
      break;
  }
}

}  // namespace

void write_kineto_json(const Trace& trace, std::ostream& out) {
  DataExtent extent;  // where the last mark's step ends, as the step pipeline ends it
  std::set<int> devices;
  std::set<std::pair<int, uint32_t>> streams;
  for (const Event& e : trace.events) {
    extent.add(e);
    if (e.is_gpu_record() || (e.kind == EventKind::kRange && e.has_flag(event_flags::kOnDevice))) {
      devices.insert(std::max<int>(e.device, 0));
      streams.insert({std::max<int>(e.device, 0), e.stream});
    }
  }
  write_head(trace, devices, out);

  const int64_t pid = host_process_id(trace);
  EventWriter w(out);
  w.metadata("process_name", pid, 0, "python");
  for (int d : devices) w.metadata("process_name", d, 0, "GPU " + std::to_string(d));
  for (const auto& [d, s] : streams) w.metadata("thread_name", d, s, "stream " + std::to_string(s) + " ");
  for (const Event& e : trace.events) write_event(w, trace, e, pid);

  // Explicit step ranges, when present, already delimit the steps (they take priority over
  // marks when the trace is analyzed): the marks would only duplicate them.
  const bool has_explicit_ranges = std::any_of(trace.events.begin(), trace.events.end(), [](const Event& e) {
    return e.kind == EventKind::kRange && e.has_flag(event_flags::kExplicitStep);
  });
  const int64_t data_end = extent.get().end;
  for (const MarkSpan& span : has_explicit_ranges ? std::vector<MarkSpan>{} : spans_of_step_marks(trace, data_end)) {
    const Event& m = *span.mark;
    w.begin("user_annotation", step_mark_name(m, trace.names.view(m.name)), pid, m.thread != 0 ? m.thread : pid,
            m.start_ns, span.end_ns - m.start_ns);
    w.end();
  }

  static constexpr std::string_view kTail = "\n]\n}\n";
  out.write(kTail.data(), static_cast<std::streamsize>(kTail.size()));
}

namespace {

// An ostream sink over zlib's gzFile, so the JSON streams straight into the compressor.
class GzipStreamBuf : public std::streambuf {
 public:
  explicit GzipStreamBuf(const std::string& path) : file_(gzopen(path.c_str(), "wb6")) {
    if (file_ != nullptr) gzbuffer(file_, 1u << 17);
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  ~GzipStreamBuf() override {
    if (file_ != nullptr) gzclose(file_);
  }
  GzipStreamBuf(const GzipStreamBuf&) = delete;
  GzipStreamBuf& operator=(const GzipStreamBuf&) = delete;

  bool is_open() const { return file_ != nullptr; }
  // Flushes and closes; false when any write or the close failed.
  bool close() {
    if (file_ == nullptr) return false;
    const bool flushed = sync() == 0;
    const int rc = gzclose(file_);
    file_ = nullptr;
    return flushed && rc == Z_OK && !failed_;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const auto n = static_cast<unsigned>(pptr() - pbase());
    if (n > 0 && (file_ == nullptr || gzwrite(file_, pbase(), n) != static_cast<int>(n))) failed_ = true;
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return !failed_;
  }

  gzFile file_;
  std::array<char, 1 << 16> buffer_{};
  bool failed_ = false;
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void write_kineto_file(const Trace& trace, const std::string& path) {
  if (ends_with(path, ".gz")) {
    GzipStreamBuf buf(path);
    if (!buf.is_open()) throw std::runtime_error("cannot open " + path + " for writing");
    std::ostream out(&buf);
    write_kineto_json(trace, out);
    out.flush();
    if (!out || !buf.close()) throw std::runtime_error("failed writing " + path);
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot open " + path + " for writing");
  write_kineto_json(trace, out);
  out.flush();
  if (!out) throw std::runtime_error("failed writing " + path);
}

}  // namespace stepwatch
