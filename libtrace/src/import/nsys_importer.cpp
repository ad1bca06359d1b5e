#include "stepwatch/import/nsys_importer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "import/sqlite_db.h"
#include "stepwatch/core/classify.h"

namespace stepwatch {

namespace {

using import_detail::check_file;
using import_detail::check_header;
using import_detail::Database;
using import_detail::InMemory;
using import_detail::Query;

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// ---------------------------------------------------------------------------------------------
// nsys encodings.

// globalTid = hwId/vmId << 48 | pid << 24 | tid (globalPid: the tid bits are 0).
uint32_t pid_of(int64_t global_id) { return static_cast<uint32_t>((static_cast<uint64_t>(global_id) >> 24) & 0xFFFFFF); }
uint32_t tid_of(int64_t global_id) { return static_cast<uint32_t>(static_cast<uint64_t>(global_id) & 0xFFFFFF); }

// correlationIds restart per process (fuser-report1 holds two processes, both with id 1): the
// process goes into the upper bits so that a kernel joins its own process's launch.
uint64_t correlation_of(uint32_t pid, int64_t correlation_id) {
  if (correlation_id <= 0) return 0;
  constexpr uint64_t kIdBits = 40;
  return (static_cast<uint64_t>(pid) << kIdBits) | (static_cast<uint64_t>(correlation_id) & ((uint64_t{1} << kIdBits) - 1));
}

int16_t device_of(int64_t id) {
  return id >= 0 && id <= std::numeric_limits<int16_t>::max() ? static_cast<int16_t>(id) : int16_t{-1};
}

uint32_t stream_of(int64_t id) {
  return id >= 0 && id <= std::numeric_limits<uint32_t>::max() ? static_cast<uint32_t>(id) : 0;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// CUPTI_ActivityMemcpyKind (nsys keeps CUPTI's numbering): arrays are device memory.
CopyKind copy_kind_of_cupti(int64_t v) {
  switch (v) {
    case 1: case 3: case 11: return CopyKind::kHtoD;  // HTOD, HTOA, UVM_HTOD
    case 2: case 4: case 12: return CopyKind::kDtoH;  // DTOH, ATOH, UVM_DTOH
    case 5: case 6: case 7: case 8: case 13: return CopyKind::kDtoD;
    case 9: return CopyKind::kHtoH;
    case 10: return CopyKind::kPtoP;
    default: return CopyKind::kUnknown;
  }
}

// ENUM_CUDA_MEMCPY_OPER names: CUDA_MEMCPY_KIND_HTOD, ..._UVM_DTOH, ...
CopyKind copy_kind_of_name(std::string_view n) {
  const size_t at = n.rfind('_');
  const std::string_view k = at == std::string_view::npos ? n : n.substr(at + 1);
  if (k == "HTOD" || k == "HTOA") return CopyKind::kHtoD;
  if (k == "DTOH" || k == "ATOH") return CopyKind::kDtoH;
  if (k == "DTOD" || k == "ATOA" || k == "ATOD" || k == "DTOA") return CopyKind::kDtoD;
  if (k == "HTOH") return CopyKind::kHtoH;
  if (k == "PTOP") return CopyKind::kPtoP;
  return CopyKind::kUnknown;
}

// nsys's own memory-kind numbering (ENUM_CUDA_MEM_KIND: 0 pageable, 1 pinned, 2 device, 3 array,
// 4 managed, 5 device static, 6 managed static, 7 unknown), not CUPTI's (which starts at unknown).
// The 2022 exports have no enum table but the same numbering (HtoD copies are 1 -> 2 there).
MemoryKind memory_kind_of_nsys(int64_t v) {
  switch (v) {
    case 0: return MemoryKind::kPageable;
    case 1: return MemoryKind::kPinned;
    case 2: case 5: return MemoryKind::kDevice;
    case 3: return MemoryKind::kArray;
    case 4: case 6: return MemoryKind::kManaged;
    default: return MemoryKind::kUnknown;
  }
}

MemoryKind memory_kind_of_name(std::string_view n) {
  if (contains(n, "PAGEABLE")) return MemoryKind::kPageable;
  if (contains(n, "PINNED")) return MemoryKind::kPinned;
  if (contains(n, "MANAGED")) return MemoryKind::kManaged;
  if (contains(n, "DEVICE")) return MemoryKind::kDevice;
  if (contains(n, "ARRAY")) return MemoryKind::kArray;
  return MemoryKind::kUnknown;
}

// CUpti_ActivitySynchronizationType. Kept on the record, but not trusted for counting: see the
// corpus README (pipit-cloverleaf's cudaDeviceSynchronize calls carry "Event sync").
SyncKind sync_kind_of(int64_t v) {
  switch (v) {
    case 1: return SyncKind::kEvent;
    case 2: return SyncKind::kStreamWaitEvent;
    case 3: return SyncKind::kStream;
    case 4: return SyncKind::kContext;
    default: return SyncKind::kUnknown;
  }
}

// The names Kineto gives its cuda_sync records, so reports read alike.
std::string_view sync_name(SyncKind k) {
  switch (k) {
    case SyncKind::kEvent: return "Event Sync";
    case SyncKind::kStreamWaitEvent: return "Stream Wait Event";
    case SyncKind::kStream: return "Stream Sync";
    case SyncKind::kContext: return "Context Sync";
    default: return "Sync";
  }
}

std::string_view memory_word(MemoryKind k) {
  switch (k) {
    case MemoryKind::kPageable: return "Pageable";
    case MemoryKind::kPinned: return "Pinned";
    case MemoryKind::kDevice: return "Device";
    case MemoryKind::kArray: return "Array";
    case MemoryKind::kManaged: return "Managed";
    default: return "Unknown";
  }
}

// OS runtime calls in which a thread waits for input or for another thread: the host evidence of
// an input wait. They become "osrt:<call>" ranges; everything else in OSRT_API (ioctl, mmap, open)
// is left out.
bool is_waiting_osrt_call(std::string_view n) {
  static constexpr std::array<std::string_view, 24> kWaits = {
      "read",         "readv",        "pread",      "pread64",       "preadv",          "fread",
      "recv",         "recvfrom",     "recvmsg",    "poll",          "ppoll",           "select",
      "pselect",      "pselect6",     "epoll_wait", "epoll_pwait",   "futex",           "pthread_cond_wait",
      "pthread_cond_timedwait",       "sem_wait",   "sem_timedwait", "pthread_join",    "waitpid",
      "nanosleep"};
  return std::find(kWaits.begin(), kWaits.end(), n) != kWaits.end();
}

// ---------------------------------------------------------------------------------------------

struct ApiRow {
  int64_t start = 0;
  int64_t end = 0;
  int64_t global_tid = 0;
  int64_t correlation_id = 0;
  std::string_view name;
};

class NsysReader {
 public:
  NsysReader(const std::string& path, Trace& trace) : path_(path), db_(path), trace_(trace) {}
  NsysReader(const std::string& source, InMemory image, Trace& trace)
      : path_(source), db_(source, image), trace_(trace) {}

  void read() {
    static constexpr std::array<std::string_view, 6> kActivityTables = {
        "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_DRIVER",  "NVTX_EVENTS"};
    if (std::none_of(kActivityTables.begin(), kActivityTables.end(), [&](auto t) { return db_.has_table(t); })) {
      throw ImportError(path_, "not an Nsight Systems export: no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table");
    }
    if (!db_.has_table("StringIds")) {
      throw ImportError(path_, "not an Nsight Systems export: no StringIds table (names are ids into it)");
    }
    read_strings();
    read_enums();
    read_api_calls();  // first: it tells the process of GPU tables without globalPid
    read_kernels();
    read_copies();
    read_memsets();
    read_syncs();
    read_nvtx();
    read_osrt();
    read_device_name();
    std::stable_sort(trace_.events.begin(), trace_.events.end(),
                     [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  }

 private:
  void read_strings() {
    db_.require_columns("StringIds", {"id", "value"});
    Query q = db_.select("StringIds", {"id", "value"});
    while (q.next()) strings_.emplace(q.int64(0), std::string(q.text(1)));
  }

  // A name column: an id into StringIds (every corpus schema), or inline text (some writers).
  std::string_view name_at(const Query& q, int column) const {
    if (const std::optional<int64_t> id = q.maybe_int64(column)) {
      const auto it = strings_.find(*id);
      return it == strings_.end() ? std::string_view{} : std::string_view(it->second);
    }
    return q.text(column);
  }

  void read_enums() {
    if (db_.has_table("ENUM_CUDA_MEM_KIND")) {
      Query q = db_.select("ENUM_CUDA_MEM_KIND", {"id", "name"});
      while (q.next()) memory_kinds_[q.int64(0)] = memory_kind_of_name(q.text(1));
    }
    if (db_.has_table("ENUM_CUDA_MEMCPY_OPER")) {
      Query q = db_.select("ENUM_CUDA_MEMCPY_OPER", {"id", "name"});
      while (q.next()) copy_kinds_[q.int64(0)] = copy_kind_of_name(q.text(1));
    }
  }

  MemoryKind memory_kind(const Query& q, int column) const {
    if (q.is_null(column)) return MemoryKind::kUnknown;
    const int64_t v = q.int64(column);
    const auto it = memory_kinds_.find(v);
    return it != memory_kinds_.end() ? it->second : memory_kind_of_nsys(v);
  }

  CopyKind copy_kind(const Query& q, int column) const {
    if (q.is_null(column)) return CopyKind::kUnknown;
    const int64_t v = q.int64(column);
    const auto it = copy_kinds_.find(v);
    return it != copy_kinds_.end() && it->second != CopyKind::kUnknown ? it->second : copy_kind_of_cupti(v);
  }

  // The process of a GPU record: its globalPid when the schema has one, else the (first) process
  // of the runtime calls.
  uint32_t pid_at(const Query& q, int column) const {
    return q.is_null(column) ? default_pid_ : pid_of(q.int64(column));
  }

  // start/end in ns, or nullopt for a row whose times cannot be used, counted by reason: no start
  // or end, a time that is not an integer (text or a real where nsys writes integer ns: read as
  // an integer it would become 0, and a step decades long), or outside the time domain (event.h:
  // found by fuzz_nsys_rows, whose INT64_MIN..INT64_MAX rows overflowed the step analysis, and
  // whose 0..2^62 kernels made a 146-year step). end < start (clipped captures) is clamped.
  std::optional<std::pair<int64_t, int64_t>> times(const Query& q, int start_col, int end_col) {
    const std::optional<int64_t> start = q.maybe_int64(start_col);
    const std::optional<int64_t> raw_end = q.maybe_int64(end_col);
    if (!start || !raw_end) {
      const bool missing = q.is_null(start_col) || q.is_null(end_col);
      trace_.skip(missing ? "missing_time" : "time_not_an_integer");
      return std::nullopt;
    }
    const int64_t end = std::max(*raw_end, *start);
    // nsys times count from the session's start: a negative one is as corrupt as one past 2^62.
    const TimeDomainError err = *start < 0 ? TimeDomainError::kTimestampOutOfRange : check_time_domain(*start, end);
    if (err != TimeDomainError::kNone) {
      trace_.skip(to_string(err));
      return std::nullopt;
    }
    return std::make_pair(*start, end);
  }

  void place_on_gpu(Event& e, const Query& q, int device_col, int stream_col, int corr_col, int pid_col) const {
    e.device = device_of(q.int64(device_col, -1));
    e.stream = stream_of(q.int64(stream_col, 0));
    e.correlation = correlation_of(pid_at(q, pid_col), q.int64(corr_col, 0));
  }

  // CUPTI_ACTIVITY_KIND_RUNTIME and _DRIVER: one kApiCall per call. Older nsys versions write
  // two rows per call (`cudaMalloc` and `cudaMalloc_v3020`, same thread and correlationId, the
  // second nested in the first): the outer row, earliest start, stands for the call.
  void read_api_calls() {
    std::vector<ApiRow> rows;
    std::unordered_map<uint64_t, size_t> by_call;  // (tid, correlationId) -> index in rows
    for (const std::string_view table : {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}) {
      if (!db_.has_table(table)) continue;
      db_.require_columns(table, {"start", "end"}, {"nameId", "name"});
      Query q = db_.select(table, {"start", "end", "globalTid", "correlationId", "nameId", "name"});
      while (q.next()) {
        const auto t = times(q, 0, 1);
        if (!t) continue;
        ApiRow row{t->first, t->second, q.int64(2, 0), q.int64(3, 0), name_at(q, 4)};
        int name_column = 4;
        if (row.name.empty()) row.name = name_at(q, name_column = 5);
        // Inline text points into the statement's current row, which the next step frees: the
        // rows kept past this loop refer to the trace's name table instead (stable storage; ids
        // already point into strings_, which lives as long as the reader).
        if (!q.maybe_int64(name_column) && !row.name.empty()) row.name = trace_.names.view(trace_.names.intern(row.name));
        if (default_pid_ == 0 && row.global_tid != 0) default_pid_ = pid_of(row.global_tid);
        if (row.correlation_id > 0) {
          const uint64_t key = (static_cast<uint64_t>(row.global_tid) * 0x9E3779B97F4A7C15ull) ^
                               static_cast<uint64_t>(row.correlation_id);
          const auto [it, inserted] = by_call.try_emplace(key, rows.size());
          if (!inserted) {
            ApiRow& kept = rows[it->second];
            if (kept.global_tid == row.global_tid && kept.correlation_id == row.correlation_id) {
              if (row.start < kept.start || (row.start == kept.start && row.end > kept.end)) kept = row;
              continue;
            }
            // A hash collision between different calls: keep both.
          }
        }
        rows.push_back(row);
      }
    }
    for (const ApiRow& r : rows) {
      Event& e = trace_.add(EventKind::kApiCall, r.name, r.start, r.end);
      e.thread = tid_of(r.global_tid);
      e.correlation = correlation_of(pid_of(r.global_tid), r.correlation_id);
      e.detail = static_cast<uint8_t>(classify_api(r.name));
    }
  }

  void read_kernels() {
    if (!db_.has_table("CUPTI_ACTIVITY_KIND_KERNEL")) return;
    db_.require_columns("CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end"}, {"demangledName", "shortName", "mangledName"});
    Query q = db_.select("CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end", "deviceId", "streamId", "correlationId",
                                                        "globalPid", "demangledName", "shortName", "mangledName"});
    while (q.next()) {
      const auto t = times(q, 0, 1);
      if (!t) continue;
      // Demangled names read like Kineto's; NCCL is recognized in any of the three.
      const std::array<std::string_view, 3> names = {name_at(q, 6), name_at(q, 7), name_at(q, 8)};
      std::string_view name;
      for (const std::string_view n : names) {
        if (name.empty()) name = n;
      }
      CollectiveType collective = CollectiveType::kNone;
      for (const std::string_view n : names) {
        if (collective == CollectiveType::kNone && !n.empty()) collective = classify_collective(n);
      }
      Event& e = trace_.add(EventKind::kKernel, name.empty() ? std::string_view("kernel") : name, t->first, t->second);
      place_on_gpu(e, q, 2, 3, 4, 5);
      e.collective = collective;
      if (first_kernel_device_ < 0) first_kernel_device_ = e.device;
    }
  }

  void read_copies() {
    if (!db_.has_table("CUPTI_ACTIVITY_KIND_MEMCPY")) return;
    db_.require_columns("CUPTI_ACTIVITY_KIND_MEMCPY", {"start", "end"});
    Query q = db_.select("CUPTI_ACTIVITY_KIND_MEMCPY", {"start", "end", "deviceId", "streamId", "correlationId",
                                                        "globalPid", "bytes", "copyKind", "srcKind", "dstKind"});
    std::string name;
    while (q.next()) {
      const auto t = times(q, 0, 1);
      if (!t) continue;
      const CopyKind kind = copy_kind(q, 7);
      const MemoryKind src = memory_kind(q, 8);
      const MemoryKind dst = memory_kind(q, 9);
      // Kineto's copy names ("Memcpy HtoD (Pageable -> Device)"): describe_copy reads them back.
      name = "Memcpy ";
      name += kind == CopyKind::kUnknown ? std::string_view("Unknown") : to_string(kind);
      name += " (";
      name += memory_word(src);
      name += " -> ";
      name += memory_word(dst);
      name += ')';
      Event& e = trace_.add(EventKind::kMemcpy, name, t->first, t->second);
      place_on_gpu(e, q, 2, 3, 4, 5);
      e.bytes = static_cast<uint64_t>(std::max<int64_t>(0, q.int64(6, 0)));
      e.detail = static_cast<uint8_t>(kind);
      e.src_memory = src;
      e.dst_memory = dst;
    }
  }

  void read_memsets() {
    if (!db_.has_table("CUPTI_ACTIVITY_KIND_MEMSET")) return;
    db_.require_columns("CUPTI_ACTIVITY_KIND_MEMSET", {"start", "end"});
    Query q = db_.select("CUPTI_ACTIVITY_KIND_MEMSET",
                         {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes", "memKind"});
    std::string name;
    while (q.next()) {
      const auto t = times(q, 0, 1);
      if (!t) continue;
      const MemoryKind memory = memory_kind(q, 7);
      name = "Memset (";
      name += memory_word(memory);
      name += ')';
      Event& e = trace_.add(EventKind::kMemset, name, t->first, t->second);
      place_on_gpu(e, q, 2, 3, 4, 5);
      e.bytes = static_cast<uint64_t>(std::max<int64_t>(0, q.int64(6, 0)));
      e.dst_memory = memory;
    }
  }

  // The host-side interval of a sync wait. Its correlation joins it to the runtime call, so the
  // timeline counts the wait once (the API call); syncType is kept as a hint only.
  void read_syncs() {
    if (!db_.has_table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) return;
    db_.require_columns("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {"start", "end"});
    Query q = db_.select("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                         {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "syncType"});
    while (q.next()) {
      const auto t = times(q, 0, 1);
      if (!t) continue;
      const SyncKind kind = sync_kind_of(q.int64(6, 0));
      Event& e = trace_.add(EventKind::kSync, sync_name(kind), t->first, t->second);
      place_on_gpu(e, q, 2, 3, 4, 5);
      e.detail = static_cast<uint8_t>(kind);
    }
  }

  // NVTX push/pop (59) and start/end (60) ranges with both ends; marks, categories, thread names
  // and domain creations are not ranges. Without an eventType column, any row with an end is.
  // A range row without a start, or with times that are no integers, is counted by times().
  void read_nvtx() {
    if (!db_.has_table("NVTX_EVENTS")) return;
    db_.require_columns("NVTX_EVENTS", {"start", "end"}, {"text", "textId"});
    constexpr int64_t kPushPopRange = 59;
    constexpr int64_t kStartEndRange = 60;
    Query q = db_.select("NVTX_EVENTS", {"start", "end", "eventType", "text", "textId", "globalTid"});
    while (q.next()) {
      if (q.is_null(1) && !q.is_null(0)) continue;  // a mark (an instant), not a range
      if (!q.is_null(2)) {
        const std::optional<int64_t> type = q.maybe_int64(2);
        if (!type) {
          trace_.skip("event_type_not_an_integer");
          continue;
        }
        if (*type != kPushPopRange && *type != kStartEndRange) continue;
      }
      const auto t = times(q, 0, 1);
      if (!t) continue;
      std::string_view text = q.text(3);
      if (text.empty()) text = name_at(q, 4);
      Event& e = trace_.add(EventKind::kRange, text, t->first, t->second);
      e.thread = tid_of(q.int64(5, 0));
    }
  }

  void read_osrt() {
    if (!db_.has_table("OSRT_API")) return;
    db_.require_columns("OSRT_API", {"start", "end", "nameId"});
    Query q = db_.select("OSRT_API", {"start", "end", "globalTid", "nameId"});
    std::string name;
    while (q.next()) {
      const std::string_view call = name_at(q, 3);
      if (call.empty()) {
        trace_.skip("osrt_call_without_name");  // cannot tell a wait from an ioctl
        continue;
      }
      if (!is_waiting_osrt_call(call)) continue;
      const auto t = times(q, 0, 1);
      if (!t) continue;
      name = "osrt:";
      name += call;
      Event& e = trace_.add(EventKind::kRange, name, t->first, t->second);
      e.thread = tid_of(q.int64(2, 0));
    }
  }

  // The GPU the kernels ran on. TARGET_INFO_CUDA_GPU (older) knows the CUDA device id; in
  // TARGET_INFO_GPU it is cuDevice (newer) or deviceId, and the table also lists non-CUDA GPUs
  // (extrap: an Intel iGPU and Microsoft's render driver after the GTX 1060).
  void read_device_name() {
    for (const std::string_view table : {"TARGET_INFO_CUDA_GPU", "TARGET_INFO_GPU"}) {
      if (!db_.has_table(table)) continue;
      Query q = db_.select(table, {"name", "cuDevice", "deviceId"});
      std::string first;
      while (q.next()) {
        const std::string_view name = q.text(0);
        if (name.empty()) continue;
        if (first.empty()) first = name;
        const int64_t device = q.is_null(1) ? q.int64(2, -1) : q.int64(1);
        if (first_kernel_device_ >= 0 && device == first_kernel_device_) {
          trace_.device_name = std::string(name);
          return;
        }
      }
      if (!first.empty()) {
        trace_.device_name = first;
        return;
      }
    }
  }

  const std::string& path_;
  Database db_;
  Trace& trace_;
  std::unordered_map<int64_t, std::string> strings_;
  std::unordered_map<int64_t, MemoryKind> memory_kinds_;
  std::unordered_map<int64_t, CopyKind> copy_kinds_;
  uint32_t default_pid_ = 0;
  int first_kernel_device_ = -1;
};

}  // namespace

bool has_sqlite_magic(std::string_view bytes) { return bytes.substr(0, kSqliteMagic.size()) == kSqliteMagic; }

Trace import_nsys_sqlite(const std::string& path) {
  check_file(path);
  Trace trace;
  trace.source = path;
  trace.format = "nsys";
  NsysReader reader(path, trace);
  reader.read();
  return trace;
}

Trace import_nsys_sqlite_bytes(std::string_view image, const std::string& source) {
  check_header(image.substr(0, 100), image.size(), source);
  Trace trace;
  trace.source = source;
  trace.format = "nsys";
  NsysReader reader(source, InMemory{image}, trace);
  reader.read();
  return trace;
}

}  // namespace stepwatch
