#include "stepwatch/import/nsys_importer.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "stepwatch/core/classify.h"

namespace stepwatch {

namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

// ---------------------------------------------------------------------------------------------
// SQLite access. Every failing call becomes ImportError(file, "SQLite error <what>: <message>").

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};

std::string quoted(std::string_view identifier) {
  std::string out = "\"";
  for (const char c : identifier) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + '"';
}

// "file:" URI for sqlite3_open_v2: `immutable=1` reads without locks or journal files, so exports
// in read-only folders open, and nothing is ever written next to the input.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (const unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x21 || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      uri += buf;
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?immutable=1";
}

class Database;

// One prepared SELECT of named columns; columns the table lacks read as NULL.
class Query {
 public:
  Query(const Database& db, sqlite3_stmt* stmt, std::string what) : db_(db), stmt_(stmt), what_(std::move(what)) {}
  bool next();  // false at the end; throws ImportError on SQLite errors
  bool is_null(int i) const { return sqlite3_column_type(stmt_.get(), i) == SQLITE_NULL; }
  int64_t int64(int i, int64_t fallback = 0) const {
    return is_null(i) ? fallback : static_cast<int64_t>(sqlite3_column_int64(stmt_.get(), i));
  }
  std::optional<int64_t> maybe_int64(int i) const {
    if (sqlite3_column_type(stmt_.get(), i) != SQLITE_INTEGER) return std::nullopt;
    return static_cast<int64_t>(sqlite3_column_int64(stmt_.get(), i));
  }
  // A TEXT value; empty for anything else.
  std::string_view text(int i) const {
    if (sqlite3_column_type(stmt_.get(), i) != SQLITE_TEXT) return {};
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), i));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i))) : std::string_view{};
  }

 private:
  const Database& db_;
  std::unique_ptr<sqlite3_stmt, StmtFinalizer> stmt_;
  std::string what_;
};

// The database image in memory rather than in a file (`import_nsys_sqlite_bytes`).
struct InMemory {
  std::string_view image;
};

class Database {
 public:
  explicit Database(const std::string& path) : path_(path) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(immutable_uri(path).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) fail("opening the file");
    read_schema();
  }

  // A private in-memory database holding a copy of `image` (read-only: nothing is written back).
  Database(const std::string& source, InMemory memory) : path_(source) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) fail("opening an in-memory database");
    // SQLite owns the copy from here (FREEONCLOSE), also when deserialize fails.
    auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(std::max<size_t>(memory.image.size(), 1)));
    if (copy == nullptr) fail("allocating the in-memory image");
    std::memcpy(copy, memory.image.data(), memory.image.size());
    const auto size = static_cast<sqlite3_int64>(memory.image.size());
    if (sqlite3_deserialize(db_.get(), "main", copy, size, size,
                            SQLITE_DESERIALIZE_READONLY | SQLITE_DESERIALIZE_FREEONCLOSE) != SQLITE_OK) {
      fail("loading the in-memory image");
    }
    read_schema();
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ImportError(path_, "SQLite error " + what + ": " + (db_ ? sqlite3_errmsg(db_.get()) : "out of memory"));
  }

  Query prepare(const std::string& sql, std::string what) const {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK) {
      sqlite3_finalize(stmt);
      fail(what);
    }
    return Query(*this, stmt, std::move(what));
  }

  bool has_table(std::string_view name) const {
    return std::find(tables_.begin(), tables_.end(), name) != tables_.end();
  }

  std::vector<std::string> columns(std::string_view table) const {
    std::vector<std::string> out;
    Query q = prepare("PRAGMA table_info(" + quoted(table) + ")", "reading the columns of " + std::string(table));
    while (q.next()) out.emplace_back(q.text(1));
    return out;
  }

  // SELECT the `wanted` columns of `table` in that order, NULL for the ones this nsys version
  // does not write.
  Query select(std::string_view table, std::initializer_list<std::string_view> wanted) const {
    const std::vector<std::string> have = columns(table);
    std::string sql = "SELECT ";
    bool first = true;
    for (const std::string_view column : wanted) {
      const bool exists = std::find(have.begin(), have.end(), column) != have.end();
      if (!first) sql += ", ";
      first = false;
      sql += exists ? quoted(column) : std::string("NULL");
    }
    sql += " FROM " + quoted(table);
    return prepare(sql, "reading " + std::string(table));
  }

 private:
  // sqlite_master is read on first use: a file that is no database fails here.
  void read_schema() {
    Query tables = prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view')", "reading the schema");
    while (tables.next()) tables_.emplace_back(tables.text(0));
  }

  std::string path_;
  std::unique_ptr<sqlite3, DbCloser> db_;
  std::vector<std::string> tables_;
};

bool Query::next() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(what_);
}

// ---------------------------------------------------------------------------------------------
// The file itself, before SQLite sees it: SQLite reads pages lazily, so a truncated export might
// only fail in a table we do not read. The header says how long the file must be.

uint32_t big_endian(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// `header`: the first 100 bytes (fewer when the input is shorter); `size`: the whole input's.
void check_header(std::string_view header_bytes, uint64_t size, const std::string& path) {
  if (header_bytes.size() < 100 || size < 100) {
    throw ImportError(path, "not an SQLite database or truncated: " + std::to_string(size) + " bytes");
  }
  const auto* header = reinterpret_cast<const unsigned char*>(header_bytes.data());
  if (std::memcmp(header, kSqliteMagic.data(), kSqliteMagic.size()) != 0) {
    throw ImportError(path, "not an SQLite database (no \"SQLite format 3\" header)");
  }
  const uint32_t page_size_field = big_endian(&header[16], 2);
  const uint64_t page_size = page_size_field == 1 ? 65536 : page_size_field;
  const uint32_t change_counter = big_endian(&header[24], 4);
  const uint64_t pages = big_endian(&header[28], 4);
  const uint32_t valid_for = big_endian(&header[92], 4);
  // The in-header page count is only trustworthy when written by SQLite >= 3.7.0 (valid_for).
  if (pages != 0 && valid_for == change_counter && size < pages * page_size) {
    throw ImportError(path, "truncated SQLite database: " + std::to_string(size) + " bytes, the header says " +
                                std::to_string(pages * page_size));
  }
}

void check_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw ImportError(path, "cannot open: no such file");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw ImportError(path, "cannot open: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  std::array<char, 100> header{};
  in.read(header.data(), header.size());
  check_header(std::string_view(header.data(), static_cast<size_t>(in.gcount())), size, path);
}

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

  // start/end in ns; nullopt for rows without a start. end < start (clipped captures) is clamped.
  // A row outside the time domain (event.h: found by fuzz_nsys_rows, whose INT64_MIN..INT64_MAX
  // rows overflowed the step analysis, and whose 0..2^62 kernels made a 146-year step) is corrupt:
  // left out and counted by reason.
  std::optional<std::pair<int64_t, int64_t>> times(const Query& q, int start_col, int end_col) {
    if (q.is_null(start_col)) return std::nullopt;
    const int64_t start = q.int64(start_col);
    const int64_t end = std::max(q.int64(end_col, start), start);
    // nsys times count from the session's start: a negative one is as corrupt as one past 2^62.
    const TimeDomainError err = start < 0 ? TimeDomainError::kTimestampOutOfRange : check_time_domain(start, end);
    if (err != TimeDomainError::kNone) {
      trace_.skip(to_string(err));
      return std::nullopt;
    }
    return std::make_pair(start, end);
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
  void read_nvtx() {
    if (!db_.has_table("NVTX_EVENTS")) return;
    constexpr int64_t kPushPopRange = 59;
    constexpr int64_t kStartEndRange = 60;
    Query q = db_.select("NVTX_EVENTS", {"start", "end", "eventType", "text", "textId", "globalTid"});
    while (q.next()) {
      if (q.is_null(0) || q.is_null(1)) continue;
      if (!q.is_null(2)) {
        const int64_t type = q.int64(2);
        if (type != kPushPopRange && type != kStartEndRange) continue;
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
    Query q = db_.select("OSRT_API", {"start", "end", "globalTid", "nameId"});
    std::string name;
    while (q.next()) {
      const std::string_view call = name_at(q, 3);
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
