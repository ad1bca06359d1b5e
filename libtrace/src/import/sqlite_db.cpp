#include "import/sqlite_db.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stepwatch/import/kineto_importer.h"  // ImportError

namespace stepwatch::import_detail {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};

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

uint32_t big_endian(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Database::Database(const std::string& path) : path_(path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(immutable_uri(path).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) fail("opening the file");
  read_schema();
}

Database::Database(const std::string& source, InMemory memory) : path_(source) {
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

void Database::fail(const std::string& what) const {
  throw ImportError(path_, "SQLite error " + what + ": " + (db_ ? sqlite3_errmsg(db_.get()) : "out of memory"));
}

Query Database::prepare(const std::string& sql, std::string what) const {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_.get(), sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    fail(what);
  }
  return Query(*this, stmt, std::move(what));
}

bool Database::has_table(std::string_view name) const {
  return std::find(tables_.begin(), tables_.end(), name) != tables_.end();
}

std::vector<std::string> Database::columns(std::string_view table) const {
  std::vector<std::string> out;
  Query q = prepare("PRAGMA table_info(" + quoted(table) + ")", "reading the columns of " + std::string(table));
  while (q.next()) out.emplace_back(q.text(1));
  return out;
}

Query Database::select(std::string_view table, std::initializer_list<std::string_view> wanted) const {
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

void Database::require_columns(std::string_view table, std::initializer_list<std::string_view> all,
                               std::initializer_list<std::string_view> any_of) const {
  const std::vector<std::string> have = columns(table);
  const auto has = [&](std::string_view c) { return std::find(have.begin(), have.end(), c) != have.end(); };
  std::string missing;
  for (const std::string_view c : all) {
    if (!has(c)) missing += (missing.empty() ? "" : ", ") + std::string(c);
  }
  if (any_of.size() > 0 && std::none_of(any_of.begin(), any_of.end(), has)) {
    std::string one_of;
    for (const std::string_view c : any_of) one_of += (one_of.empty() ? "" : "/") + std::string(c);
    missing += (missing.empty() ? "one of " : ", one of ") + one_of;
  }
  if (missing.empty()) return;
  std::string listed;
  for (const std::string& c : have) listed += (listed.empty() ? "" : ", ") + c;
  throw ImportError(path_, std::string(table) + " does not have the columns of an Nsight Systems export: no " + missing +
                               " (it has: " + (listed.empty() ? "none" : listed) + ")");
}

// sqlite_master is read on first use: a file that is no database fails here.
void Database::read_schema() {
  Query tables = prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view')", "reading the schema");
  while (tables.next()) tables_.emplace_back(tables.text(0));
}

bool Query::next() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(what_);
}

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

}  // namespace stepwatch::import_detail
