#include "stepwatch/import/trace_file.h"

#include <string_view>

#include "import/input_file.h"
#include "import/kineto_input.h"
#include "stepwatch/import/nsys_importer.h"

namespace stepwatch {
namespace {

bool has_suffix(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// SQLite needs random access, which a pipe does not give: an export arriving on one is read into
// memory, within the input cap.
std::string read_all(import_detail::InputFile& input, uint64_t max_bytes) {
  std::string bytes;
  constexpr size_t kStep = 1u << 20;
  for (;;) {
    const size_t had = bytes.size();
    bytes.resize(had + kStep);
    const size_t got = input.read(bytes.data() + had, kStep);
    bytes.resize(had + got);
    if (got == 0) return bytes;
    if (bytes.size() > max_bytes) throw ImportError(input.name(), "larger than the input cap (--max-input-gb)");
  }
}

}  // namespace

Trace import_trace_file(const std::string& path, const ImportLimits& limits) {
  import_detail::InputFile input(path);
  if (has_sqlite_magic(input.peek(16))) {
    // A regular file is opened again by SQLite (reading it did not consume it); standard input,
    // even when redirected from a file, has no path SQLite could open.
    if (input.is_regular() && !input.is_stdin()) return import_nsys_sqlite(path);
    return import_nsys_sqlite_bytes(read_all(input, limits.max_text_bytes), input.name());
  }
  if (has_suffix(path, ".nsys-rep") || has_suffix(path, ".qdrep")) {
    throw ImportError(path, "an Nsight Systems report, not an SQLite export: export it with "
                            "nsys export --type sqlite " + path);
  }
  return import_detail::import_kineto_input(input, limits);
}

}  // namespace stepwatch
