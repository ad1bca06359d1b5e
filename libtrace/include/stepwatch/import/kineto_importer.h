// Kineto (PyTorch profiler) Chrome-trace JSON importer, `.json` or `.json.gz`.
//
// Handles every format in the corpus: 2021-era categories (`Runtime`, `Kernel`, `Memcpy`, ...,
// matched case-insensitively), `cuda_runtime`/`cuda_driver`/`cuda_sync` (newer traces), NVIDIA
// and AMD (`hip*`) names, flow events (ignored). Rank from `distributedInfo.rank`, else -1
// (the caller assigns file order).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "stepwatch/core/trace.h"

namespace stepwatch {

// Malformed, truncated or unreadable input. `what()` names the file and, where known, the offset.
class ImportError : public std::runtime_error {
 public:
  ImportError(const std::string& file, const std::string& reason, int64_t offset = -1);
  const std::string& file() const { return file_; }
  int64_t offset() const { return offset_; }

 private:
  std::string file_;
  int64_t offset_;
};

// Reads a file, transparently gunzipping it (by magic bytes, not by name). Throws ImportError.
std::string read_file_maybe_gzip(const std::string& path);

// Parses Kineto JSON text. `source` names the input in errors. Throws ImportError.
Trace import_kineto_json(std::string_view json, const std::string& source);

// read_file_maybe_gzip + import_kineto_json.
Trace import_kineto_file(const std::string& path);

}  // namespace stepwatch
