// Read-only access to an SQLite file for the nsys importer: prepared SELECTs of named columns, the
// schema, and the file checks SQLite's lazy page reads would miss. Private to libtrace/src/import.
// Every failing call becomes ImportError(file, "SQLite error <what>: <message>").
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepwatch::import_detail {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};

class Database;

// One prepared SELECT of named columns; columns the table lacks read as NULL.
class Query {
 public:
  Query(const Database& db, sqlite3_stmt* stmt, std::string what) : db_(db), stmt_(stmt), what_(std::move(what)) {}
  bool next();  // false at the end; throws ImportError on SQLite errors
  bool is_null(int i) const { return sqlite3_column_type(stmt_.get(), i) == SQLITE_NULL; }
  // SQLite's integer reading of the value (text that is no number reads as 0): for ids and kinds,
  // never for times (maybe_int64).
  int64_t int64(int i, int64_t fallback = 0) const {
    return is_null(i) ? fallback : static_cast<int64_t>(sqlite3_column_int64(stmt_.get(), i));
  }
  // The value when it is stored as an INTEGER, else nullopt.
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
  // Opens `path` read-only and immutable: no locks, no journal, nothing written next to it.
  explicit Database(const std::string& path);
  // A private in-memory database holding a copy of `image` (read-only: nothing is written back).
  Database(const std::string& source, InMemory memory);

  [[noreturn]] void fail(const std::string& what) const;
  Query prepare(const std::string& sql, std::string what) const;
  bool has_table(std::string_view name) const;
  std::vector<std::string> columns(std::string_view table) const;
  // SELECT the `wanted` columns of `table` in that order, NULL for the ones this nsys version
  // does not write.
  Query select(std::string_view table, std::initializer_list<std::string_view> wanted) const;
  // Refuses the file (ImportError naming the table and what it lacks) unless `table` has `all`
  // of these columns and, when given, one of `any_of`.
  void require_columns(std::string_view table, std::initializer_list<std::string_view> all,
                       std::initializer_list<std::string_view> any_of = {}) const;

 private:
  void read_schema();

  std::string path_;
  std::unique_ptr<sqlite3, DbCloser> db_;
  std::vector<std::string> tables_;
};

// The file itself, before SQLite sees it: SQLite reads pages lazily, so a truncated export might
// only fail in a table we do not read. The header says how long the file must be. `header`: the
// first 100 bytes (fewer when the input is shorter); `size`: the whole input's.
void check_header(std::string_view header, uint64_t size, const std::string& path);
void check_file(const std::string& path);

}  // namespace stepwatch::import_detail
