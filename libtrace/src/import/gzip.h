// Whole-file reading and gunzipping for the importers. Private to libtrace/src/import.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stepwatch::import_detail {

// Bytes that every buffer returned here has allocated past its end, so that simdjson can parse it
// in place (it reads up to SIMDJSON_PADDING bytes beyond the data; checked where simdjson is used).
inline constexpr size_t kParsePaddingBytes = 64;

bool has_gzip_magic(std::string_view bytes);

// The decompressed content of every gzip member in `compressed` (bytes after the last member that
// do not start another member are ignored, as gzip(1) does). Throws ImportError naming `source`.
std::string gunzip(std::string_view compressed, const std::string& source);

// The raw bytes of a file. Throws ImportError naming `path` and the system's reason.
std::string read_whole_file(const std::string& path);

}  // namespace stepwatch::import_detail
