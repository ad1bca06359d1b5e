// libFuzzer target, structure-aware: the nsys importer's logic on well-formed exports whose ROWS
// are fuzzed. Random bytes rarely get past SQLite's header check (fuzz_nsys_import does that
// part); here every input is a valid database, so the fuzzer spends its time where the importer's
// own bugs would be: negative or reversed durations, ids pointing nowhere, NULLs, huge values,
// duplicate rows, text where ids belong, a launch joined to the wrong process.
//
// Input: byte 0 picks a schema variant (bit 0: enum tables; bit 1: GPU tables without globalPid,
// as old exports; bit 2: NVTX text inline instead of textId; bit 3: TARGET_INFO_CUDA_GPU instead
// of TARGET_INFO_GPU). Then rows: one byte chooses the table, then each column takes a tag byte
// (and its payload): NULL, small int, negative int, timestamp (a base + 16-bit µs offset, so rows
// overlap like a real step), raw 64-bit int, string id (1..20, ids 17..20 point nowhere),
// inline text, real. The database is built in memory, serialized, and imported from the bytes.
#include <sqlite3.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_nsys_support.h"
#include "stepwatch/import/nsys_importer.h"

namespace {

struct Table {
  const char* name;
  std::vector<const char*> columns;
};

// nsys's table and column names (see tests/unit/nsys_importer_test.cpp for the real schemas).
std::vector<Table> tables_for(uint8_t variant) {
  const bool no_pid = variant & 2;
  const bool inline_text = variant & 4;
  auto gpu = [&](std::vector<const char*> extra) {
    std::vector<const char*> cols = {"start", "end", "deviceId", "streamId", "correlationId"};
    if (!no_pid) cols.push_back("globalPid");
    cols.insert(cols.end(), extra.begin(), extra.end());
    return cols;
  };
  std::vector<Table> t = {
      {"StringIds", {"id", "value"}},
      {"CUPTI_ACTIVITY_KIND_RUNTIME", {"start", "end", "globalTid", "correlationId", "nameId"}},
      {"CUPTI_ACTIVITY_KIND_DRIVER", {"start", "end", "globalTid", "correlationId", "nameId"}},
      {"CUPTI_ACTIVITY_KIND_KERNEL", gpu({"demangledName", "shortName", "mangledName"})},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", gpu({"bytes", "copyKind", "srcKind", "dstKind"})},
      {"CUPTI_ACTIVITY_KIND_MEMSET", gpu({"bytes", "memKind"})},
      {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", gpu({"syncType"})},
      {"NVTX_EVENTS", inline_text ? std::vector<const char*>{"start", "end", "eventType", "text", "globalTid"}
                                  : std::vector<const char*>{"start", "end", "eventType", "textId", "globalTid"}},
      {"OSRT_API", {"start", "end", "globalTid", "nameId"}},
      {(variant & 8) ? "TARGET_INFO_CUDA_GPU" : "TARGET_INFO_GPU", {"name", "cuDevice", "deviceId"}},
  };
  if (variant & 1) {
    t.push_back({"ENUM_CUDA_MEM_KIND", {"id", "name"}});
    t.push_back({"ENUM_CUDA_MEMCPY_OPER", {"id", "name"}});
  }
  return t;
}

constexpr std::array<const char*, 16> kStrings = {
    "cudaLaunchKernel_v7000",  "cudaStreamSynchronize_v3020", "cudaMemcpyAsync_v3020", "cudaMemcpy_v3020",
    "void gemm<float>(int)",   "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ProfilerStep#7", "DataLoader",
    "read",                    "futex",                       "ioctl",                 "CUDA_MEMCPY_KIND_HTOD",
    "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "NVIDIA H200",        "train_step 3",          "cudaDeviceSynchronize_v3020"};

// globalTid = pid << 24 | tid, as nsys writes it.
constexpr int64_t kGlobalTid = (int64_t{4242} << 24) | 4250;
constexpr int64_t kBaseNs = 1'700'000'000'000'000'000;

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ >= end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

void bind_value(sqlite3_stmt* stmt, int index, Input& in) {
  const uint8_t tag = in.byte();
  switch (tag % 9) {
    case 0: sqlite3_bind_null(stmt, index); break;
    case 1: sqlite3_bind_int64(stmt, index, in.byte()); break;
    case 2: sqlite3_bind_int64(stmt, index, -int64_t{1} - in.byte()); break;
    case 3: {
      const int64_t us = int64_t(in.byte()) << 8 | in.byte();
      sqlite3_bind_int64(stmt, index, kBaseNs + us * 1000 + (tag >> 4));
      break;
    }
    case 4: sqlite3_bind_int64(stmt, index, static_cast<int64_t>(in.u64())); break;
    case 5: sqlite3_bind_int64(stmt, index, 1 + in.byte() % 20); break;
    case 6: {
      const std::string_view s = kStrings[in.byte() % kStrings.size()];
      sqlite3_bind_text(stmt, index, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
      break;
    }
    case 7: sqlite3_bind_double(stmt, index, static_cast<double>(static_cast<int64_t>(in.u64())) / 7.0); break;
    default: sqlite3_bind_int64(stmt, index, (tag & 16) ? kGlobalTid : (kGlobalTid & ~int64_t{0xFFFFFF})); break;
  }
}

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // a few hundred rows cover the logic; more only costs time
  Input in(data, size);
  const std::vector<Table> tables = tables_for(in.byte());

  sqlite3* raw = nullptr;
  if (sqlite3_open(":memory:", &raw) != SQLITE_OK) {
    sqlite3_close(raw);
    return 0;
  }
  std::unique_ptr<sqlite3, DbCloser> db(raw);
  std::vector<std::unique_ptr<sqlite3_stmt, StmtFinalizer>> inserts;
  for (const Table& t : tables) {
    // No column types and no PRIMARY KEY: any value goes in any column, duplicate ids included.
    std::string create = std::string("CREATE TABLE ") + t.name + " (";
    std::string insert = std::string("INSERT INTO ") + t.name + " VALUES (";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      create += std::string(i ? ", " : "") + t.columns[i];
      insert += i ? ", ?" : "?";
    }
    if (sqlite3_exec(db.get(), (create + ")").c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return 0;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db.get(), (insert + ")").c_str(), -1, &stmt, nullptr) != SQLITE_OK) return 0;
    inserts.emplace_back(stmt);
  }
  // The names every export has; fuzzed StringIds rows come on top (duplicates, foreign ids).
  for (size_t i = 0; i < kStrings.size(); ++i) {
    sqlite3_stmt* s = inserts[0].get();
    sqlite3_bind_int64(s, 1, static_cast<int64_t>(i + 1));
    sqlite3_bind_text(s, 2, kStrings[i], -1, SQLITE_STATIC);
    sqlite3_step(s);
    sqlite3_reset(s);
  }
  while (!in.empty()) {
    const size_t which = in.byte() % tables.size();
    sqlite3_stmt* s = inserts[which].get();
    for (size_t c = 0; c < tables[which].columns.size(); ++c) bind_value(s, static_cast<int>(c + 1), in);
    sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  inserts.clear();

  sqlite3_int64 bytes = 0;
  unsigned char* image = sqlite3_serialize(db.get(), "main", &bytes, 0);
  if (image == nullptr) return 0;
  const std::string_view view(reinterpret_cast<const char*>(image), static_cast<size_t>(bytes));
  stepwatch::Trace trace;
  try {
    trace = stepwatch::import_nsys_sqlite_bytes(view, "fuzz-rows.sqlite");
  } catch (const stepwatch::ImportError& e) {
    // Every input here is a well-formed export: refusing one is a bug in the importer.
    std::fprintf(stderr, "a well-formed export was refused: %s\n", e.what());
    std::abort();
  }
  sqlite3_free(image);
  stepwatch::fuzz::analyze_and_check(trace);
  return 0;
}
