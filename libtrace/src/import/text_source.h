// The text of a trace, in order and once: the input's bytes as they are, or gunzipped while they
// are read (by magic bytes, not by name). Private to libtrace/src/import.
//
// Streaming, never whole: the reader pulls the next piece into its own buffer, so memory does not
// grow with the input. Gzip is inflated with ISA-L's igzip when the build found it (streaming and
// about 3x zlib's speed, on a par with libdeflate, which has no streaming interface), else zlib.
// Both read concatenated members (pigz, `cat a.gz b.gz`) and ignore bytes after the last member
// that do not start another one, as gzip(1) does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "import/input_file.h"

namespace stepwatch::import_detail {

bool has_gzip_magic(std::string_view bytes);

class TextSource {
 public:
  virtual ~TextSource() = default;
  // Up to `n` next bytes of text into `out`; 0 at the end. Throws ImportError naming the input
  // (corrupt or truncated gzip data, read errors, more text than `max_text_bytes`).
  virtual size_t read(char* out, size_t n) = 0;
  // The best guess of the whole text's size in bytes, 0 when unknown (a pipe). Exact for plain
  // files; for gzip the size trailer (ISIZE: the size mod 2^32) placed by the ratio seen so far.
  virtual uint64_t expected_bytes() const = 0;
};

enum class GzipBackend { kDefault, kZlib };

// The text of `input`, which must outlive the source.
std::unique_ptr<TextSource> open_text(InputFile& input, uint64_t max_text_bytes,
                                      GzipBackend backend = GzipBackend::kDefault);
// Text already in memory (not copied; `text` must outlive the source).
std::unique_ptr<TextSource> memory_text(std::string_view text, const std::string& source, uint64_t max_text_bytes);

// True when this build inflates with ISA-L (kDefault), false when with zlib.
bool gzip_uses_isal();

}  // namespace stepwatch::import_detail
