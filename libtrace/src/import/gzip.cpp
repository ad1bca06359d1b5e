#include "import/gzip.h"

#include <libdeflate.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <system_error>

#include "stepwatch/import/kineto_importer.h"

namespace stepwatch::import_detail {
namespace {

// Smallest valid member: 10-byte header, an empty deflate block (2 bytes), 8-byte trailer.
constexpr size_t kMinGzipMemberBytes = 20;
// Deflate cannot expand by more than 1032:1, so larger output means corrupt data.
constexpr size_t kMaxDeflateRatio = 1032;
// A gzip ISIZE trailer larger than this ratio is more likely garbage (truncated file) than data:
// start smaller and grow instead of allocating gigabytes up front.
constexpr size_t kTrustedIsizeRatio = 64;
constexpr size_t kMinOutputBytes = 64u << 10;
constexpr size_t kFirstReadBytes = 64u << 10;

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// ISIZE: the last member's uncompressed size mod 2^32 (little endian). A size hint, not a promise.
size_t trailer_size_hint(std::string_view in) {
  const auto* p = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
  return static_cast<size_t>(p[0]) | static_cast<size_t>(p[1]) << 8 | static_cast<size_t>(p[2]) << 16 |
         static_cast<size_t>(p[3]) << 24;
}

size_t max_output_bytes(std::string_view in) { return in.size() * kMaxDeflateRatio + kMinOutputBytes; }

size_t initial_output_bytes(std::string_view in) {
  const size_t hint = trailer_size_hint(in);
  if (hint > in.size() * kTrustedIsizeRatio) return std::max(in.size() * 8, kMinOutputBytes);
  return std::max(hint, kMinOutputBytes);
}

// zlib counts in uInt; feed it at most this much per call so that huge buffers work too.
uInt zlib_chunk(size_t n) { return static_cast<uInt>(std::min<size_t>(n, UINT_MAX)); }

// Concatenated members (pigz, `cat a.gz b.gz`): libdeflate stops after the first one; zlib's
// streaming inflate with gzip auto-detection (windowBits 15+32) walks them all.
std::string gunzip_streaming(std::string_view in, const std::string& source) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw ImportError(source, "zlib initialisation failed");
  const std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, &inflateEnd);

  std::string out(initial_output_bytes(in) + kParsePaddingBytes, '\0');
  size_t in_pos = 0;
  size_t out_pos = 0;
  for (;;) {
    size_t capacity = out.size() - kParsePaddingBytes;
    if (out_pos == capacity) {
      if (capacity >= max_output_bytes(in)) throw ImportError(source, "corrupt gzip data (implausible expansion)");
      out.resize(std::min(capacity * 2, max_output_bytes(in)) + kParsePaddingBytes);
      capacity = out.size() - kParsePaddingBytes;
    }
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
    zs.avail_in = zlib_chunk(in.size() - in_pos);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
    zs.avail_out = zlib_chunk(capacity - out_pos);
    const uInt in_before = zs.avail_in;
    const uInt out_before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_before - zs.avail_in;
    out_pos += out_before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (!has_gzip_magic(in.substr(in_pos))) break;
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_BUF_ERROR && in_pos == in.size()) throw ImportError(source, "truncated gzip data");
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw ImportError(source, std::string("corrupt gzip data: ") + (zs.msg != nullptr ? zs.msg : "inflate failed"));
    }
  }
  out.resize(out_pos);
  return out;
}

using Decompressor = std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)>;

}  // namespace

bool has_gzip_magic(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view in, const std::string& source) {
  if (in.size() < kMinGzipMemberBytes) throw ImportError(source, "truncated gzip data");
  Decompressor decompressor(libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  if (!decompressor) throw ImportError(source, "out of memory allocating a decompressor");

  for (size_t capacity = initial_output_bytes(in);; capacity = std::min(capacity * 2, max_output_bytes(in))) {
    // The padding is allocated now so that the parser never has to copy the text.
    std::string out(capacity + kParsePaddingBytes, '\0');
    size_t in_used = 0;
    size_t out_size = 0;
    const libdeflate_result rc = libdeflate_gzip_decompress_ex(decompressor.get(), in.data(), in.size(), out.data(),
                                                               capacity, &in_used, &out_size);
    if (rc == LIBDEFLATE_SUCCESS) {
      if (in_used < in.size() && has_gzip_magic(in.substr(in_used))) return gunzip_streaming(in, source);
      out.resize(out_size);
      return out;
    }
    if (rc != LIBDEFLATE_INSUFFICIENT_SPACE) throw ImportError(source, "corrupt or truncated gzip data");
    if (capacity >= max_output_bytes(in)) throw ImportError(source, "corrupt gzip data (implausible expansion)");
  }
}

std::string read_whole_file(const std::string& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw ImportError(path, "cannot open: " + errno_text(errno));

  // st_size is only a hint (pipes and /proc files report 0): read until a short read.
  size_t want_bytes = kFirstReadBytes;
  struct stat info {};
  if (fstat(fileno(file.get()), &info) == 0 && info.st_size > 0) want_bytes = static_cast<size_t>(info.st_size) + 1;
  std::string bytes;
  size_t used = 0;
  for (;;) {
    bytes.resize(want_bytes + kParsePaddingBytes);
    used += std::fread(bytes.data() + used, 1, want_bytes - used, file.get());
    if (used < want_bytes) break;
    want_bytes *= 2;
  }
  if (std::ferror(file.get()) != 0) throw ImportError(path, "cannot read: " + errno_text(errno));
  bytes.resize(used);
  return bytes;
}

}  // namespace stepwatch::import_detail
