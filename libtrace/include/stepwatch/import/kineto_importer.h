// Kineto (PyTorch profiler) Chrome-trace JSON importer, `.json` or `.json.gz`.
//
// Streams: the text is inflated, cut into runs of whole events and parsed a run at a time, never
// held whole, so memory is the events (64 bytes each) and their names, whatever the file's size,
// and there is no size limit but ImportLimits. Handles every format in the corpus: 2021-era
// categories (`Runtime`, `Kernel`, `Memcpy`, ..., matched case-insensitively),
// `cuda_runtime`/`cuda_driver`/`cuda_sync` (newer traces), NVIDIA and AMD (`hip*`) names, flow
// events (ignored). Rank from `distributedInfo.rank`, else -1 (the caller assigns file order).
// Records of our categories that cannot be used (times missing or unparsable, negative
// durations, times outside the time domain, events over the record cap) are left out and counted
// in Trace::skipped by reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "stepwatch/core/trace.h"

namespace stepwatch {

// Malformed, truncated or unreadable input. `what()` names the file and, where known, the offset
// (a byte offset into the uncompressed text).
class ImportError : public std::runtime_error {
 public:
  ImportError(const std::string& file, const std::string& reason, int64_t offset = -1);
  const std::string& file() const { return file_; }
  int64_t offset() const { return offset_; }

 private:
  std::string file_;
  int64_t offset_;
};

// The explicit bounds of one import (`stepwatch analyze --max-input-gb`, `--max-event-mb`).
struct ImportLimits {
  // Uncompressed text one input may have; past it the import fails with ImportError. A bound on
  // time, not memory (memory does not grow with the text): an endless or bomb-sized input stops
  // here. 64 GiB is ten times the largest trace benchmarked (docs/performance.md).
  uint64_t max_text_bytes = uint64_t{64} << 30;
  // The largest single traceEvents element (or top-level member) kept. A larger one is scanned to
  // its end without being kept and counted ("event_too_large"): one huge string cannot make
  // memory grow past a few times this. Kineto's largest events (ops with call stacks) are KiBs.
  size_t max_record_bytes = size_t{16} << 20;
};

// A file's whole text, gunzipped when it starts with gzip's magic bytes ("-" = standard input).
// For tests and tools: the importers themselves never hold the text. Throws ImportError.
std::string read_file_maybe_gzip(const std::string& path, const ImportLimits& limits = {});

// Parses Kineto JSON text. `source` names the input in errors. Throws ImportError.
Trace import_kineto_json(std::string_view json, const std::string& source, const ImportLimits& limits = {});

// Reads a file (gzipped or not, by magic bytes; "-" = standard input), once. Throws ImportError.
Trace import_kineto_file(const std::string& path, const ImportLimits& limits = {});

}  // namespace stepwatch
