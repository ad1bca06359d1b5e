#include "import/text_source.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(STEPWATCH_HAVE_ISAL)
#include <isa-l/igzip_lib.h>
#endif

#include "stepwatch/import/kineto_importer.h"  // ImportError

namespace stepwatch::import_detail {
namespace {

constexpr size_t kCompressedReadBytes = 256u << 10;

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GiB", static_cast<double>(bytes) / double(1ull << 30));
  return buf;
}

[[noreturn]] void over_cap(const std::string& name, uint64_t cap) {
  throw ImportError(name, "more text than the input cap of " + gib(cap) +
                              " (stepwatch analyze --max-input-gb raises it)");
}

// Counts the text handed out and refuses more than the cap: an endless or bomb-sized input stops
// at the cap, whatever it is made of.
class CappedSource : public TextSource {
 public:
  CappedSource(std::string name, uint64_t cap) : name_(std::move(name)), cap_(cap) {}
  size_t read(char* out, size_t n) final {
    const size_t got = read_text(out, n);
    produced_ += got;
    if (produced_ > cap_) over_cap(name_, cap_);
    return got;
  }

 protected:
  virtual size_t read_text(char* out, size_t n) = 0;
  const std::string& name() const { return name_; }
  uint64_t produced() const { return produced_; }

 private:
  std::string name_;
  uint64_t cap_;
  uint64_t produced_ = 0;
};

class PlainSource final : public CappedSource {
 public:
  PlainSource(InputFile& in, uint64_t cap) : CappedSource(in.name(), cap), in_(in) {}
  uint64_t expected_bytes() const override { return in_.size(); }

 private:
  size_t read_text(char* out, size_t n) override { return in_.read(out, n); }
  InputFile& in_;
};

class MemorySource final : public CappedSource {
 public:
  MemorySource(std::string_view text, const std::string& name, uint64_t cap) : CappedSource(name, cap), text_(text) {}
  uint64_t expected_bytes() const override { return text_.size(); }

 private:
  size_t read_text(char* out, size_t n) override {
    const size_t k = std::min(n, text_.size() - at_);
    std::memcpy(out, text_.data() + at_, k);
    at_ += k;
    return k;
  }
  std::string_view text_;
  size_t at_ = 0;
};

// One deflate engine behind the gzip member loop. `inflate` consumes from `in` and fills `out`,
// advancing both; it returns true when the current member (trailer checked) has ended.
class Inflater {
 public:
  virtual ~Inflater() = default;
  virtual bool inflate(const uint8_t*& in, size_t& in_len, uint8_t*& out, size_t& out_len) = 0;
  virtual void reset() = 0;  // for the next member
  // Input bytes the engine took past the member's end (they belong to what follows).
  virtual std::string take_read_ahead() { return {}; }
};

class ZlibInflater final : public Inflater {
 public:
  explicit ZlibInflater(const std::string& name) : name_(name) {
    if (inflateInit2(&zs_, 15 + 16) != Z_OK) throw ImportError(name_, "zlib initialisation failed");
  }
  ~ZlibInflater() override { inflateEnd(&zs_); }
  bool inflate(const uint8_t*& in, size_t& in_len, uint8_t*& out, size_t& out_len) override {
    // zlib counts in uInt: feed it at most that much per call so that huge buffers work too.
    zs_.next_in = const_cast<Bytef*>(in);
    zs_.avail_in = static_cast<uInt>(std::min<size_t>(in_len, UINT_MAX));
    zs_.next_out = out;
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(out_len, UINT_MAX));
    const uInt in_before = zs_.avail_in;
    const uInt out_before = zs_.avail_out;
    const int rc = ::inflate(&zs_, Z_NO_FLUSH);
    in += in_before - zs_.avail_in;
    in_len -= in_before - zs_.avail_in;
    out += out_before - zs_.avail_out;
    out_len -= out_before - zs_.avail_out;
    if (rc == Z_STREAM_END) return true;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw ImportError(name_, std::string("corrupt gzip data: ") + (zs_.msg != nullptr ? zs_.msg : "inflate failed"));
    }
    return false;
  }
  void reset() override { inflateReset(&zs_); }

 private:
  const std::string& name_;
  z_stream zs_{};
};

#if defined(STEPWATCH_HAVE_ISAL)
class IsalInflater final : public Inflater {
 public:
  explicit IsalInflater(const std::string& name) : name_(name), state_(std::make_unique<inflate_state>()) { reset(); }
  bool inflate(const uint8_t*& in, size_t& in_len, uint8_t*& out, size_t& out_len) override {
    // igzip counts in uint32_t as well.
    state_->next_in = const_cast<uint8_t*>(in);
    state_->avail_in = static_cast<uint32_t>(std::min<size_t>(in_len, UINT32_MAX));
    state_->next_out = out;
    state_->avail_out = static_cast<uint32_t>(std::min<size_t>(out_len, UINT32_MAX));
    const uint32_t in_before = state_->avail_in;
    const uint32_t out_before = state_->avail_out;
    int rc = ISAL_DECOMP_OK;
    if (!header_read_) {
      // ISAL_END_INPUT: the header goes on in the next input (what was read of it is kept in
      // state_ and header_).
      rc = isal_read_gzip_header(state_.get(), &header_);
      header_read_ = rc == ISAL_DECOMP_OK;
    }
    if (header_read_) rc = isal_inflate(state_.get());
    in += in_before - state_->avail_in;
    in_len -= in_before - state_->avail_in;
    out += out_before - state_->avail_out;
    out_len -= out_before - state_->avail_out;
    if (rc < 0) throw ImportError(name_, std::string("corrupt gzip data: ") + problem(rc));
    return state_->block_state == ISAL_BLOCK_FINISH;
  }
  // igzip loads its bit buffer 8 bytes at a time, so at a member's end the buffer may hold the
  // first bytes of the next member (whole bytes: the trailer ends byte-aligned).
  std::string take_read_ahead() override {
    std::string bytes;
    for (int32_t bits = state_->read_in_length; bits >= 8; bits -= 8) {
      bytes += static_cast<char>(state_->read_in & 0xff);
      state_->read_in >>= 8;
    }
    state_->read_in_length = 0;
    return bytes;
  }
  // The header is read here, with a header record that lives as long as the member: isal_inflate's
  // own header parsing (crc_flag ISAL_GZIP, ISA-L 2.30) keeps it in a local that a header split
  // over two calls loses — a member with a file name (what `gzip FILE` writes) stops the first call
  // inside the name, and the second then read uninitialised flags and took the name's last bytes
  // for deflate data ("invalid distance", seen under ASan and on every build where the stack held
  // something else).
  void reset() override {
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_GZIP_NO_HDR_VER;  // deflate data, then the CRC-32 and size trailer checked
    isal_gzip_header_init(&header_);           // no buffers: the name, comment and extra field are skipped
    header_read_ = false;
  }

 private:
  static const char* problem(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK: return "invalid deflate block";
      case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK: return "invalid distance";
      case ISAL_INVALID_WRAPPER: return "invalid gzip header";
      case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
      case ISAL_INCORRECT_CHECKSUM: return "CRC or length check failed";
      default: return "inflate failed";
    }
  }
  const std::string& name_;
  std::unique_ptr<inflate_state> state_;  // ~40 KiB: on the heap
  isal_gzip_header header_{};
  bool header_read_ = false;
};
#endif

std::unique_ptr<Inflater> make_inflater(GzipBackend backend, const std::string& name) {
#if defined(STEPWATCH_HAVE_ISAL)
  if (backend == GzipBackend::kDefault) return std::make_unique<IsalInflater>(name);
#endif
  (void)backend;
  return std::make_unique<ZlibInflater>(name);
}

class GzipSource final : public CappedSource {
 public:
  GzipSource(InputFile& in, uint64_t cap, GzipBackend backend)
      : CappedSource(in.name(), cap), in_(in), inflater_(make_inflater(backend, in.name())), buffer_(kCompressedReadBytes) {
    if (const std::optional<std::string> trailer = in.tail(4)) {
      const auto* p = reinterpret_cast<const unsigned char*>(trailer->data());
      size_trailer_ = static_cast<uint64_t>(p[0]) | static_cast<uint64_t>(p[1]) << 8 |
                      static_cast<uint64_t>(p[2]) << 16 | static_cast<uint64_t>(p[3]) << 24;
    }
  }

  uint64_t expected_bytes() const override;

 private:
  size_t read_text(char* out, size_t n) override;
  bool fill(size_t k);
  void put_back(const std::string& bytes);
  bool another_member();

  InputFile& in_;
  std::unique_ptr<Inflater> inflater_;
  std::vector<uint8_t> buffer_;
  const uint8_t* next_ = nullptr;
  size_t available_ = 0;
  uint64_t consumed_ = 0;  // compressed bytes handed to the inflater
  std::optional<uint64_t> size_trailer_;
  bool finished_ = false;
  bool input_ended_ = false;
};

// Makes at least `k` bytes available, keeping the ones not consumed yet; false at end of input.
bool GzipSource::fill(size_t k) {
  while (available_ < k) {
    if (input_ended_) return false;
    // next_ is null before the first read; memmove's source must not be, even for 0 bytes.
    if (available_ > 0) std::memmove(buffer_.data(), next_, available_);
    next_ = buffer_.data();
    const size_t got = in_.read(reinterpret_cast<char*>(buffer_.data()) + available_, buffer_.size() - available_);
    if (got == 0) {
      input_ended_ = true;
      return false;
    }
    available_ += got;
  }
  return true;
}

void GzipSource::put_back(const std::string& bytes) {
  if (bytes.empty()) return;
  std::vector<uint8_t> joined(bytes.begin(), bytes.end());
  joined.insert(joined.end(), next_, next_ + available_);
  consumed_ -= bytes.size();
  available_ = joined.size();
  if (buffer_.size() < joined.size()) buffer_.resize(joined.size());
  std::memcpy(buffer_.data(), joined.data(), joined.size());
  next_ = buffer_.data();
}

// After a member's trailer: does another member follow?
bool GzipSource::another_member() {
  put_back(inflater_->take_read_ahead());
  return fill(2) && next_[0] == 0x1f && next_[1] == 0x8b;
}

size_t GzipSource::read_text(char* out, size_t n) {
  auto* dst = reinterpret_cast<uint8_t*>(out);
  size_t room = n;
  while (room > 0 && !finished_) {
    if (available_ == 0 && !fill(1)) throw ImportError(name(), "truncated gzip data");
    const size_t before = available_;
    const size_t room_before = room;
    const bool member_ended = inflater_->inflate(next_, available_, dst, room);
    consumed_ += before - available_;
    if (!member_ended && available_ == before && room == room_before) {
      // Stuck on the bytes it has: give it more, else the data ends inside a member.
      if (available_ < buffer_.size() && fill(available_ + 1)) continue;
      throw ImportError(name(), available_ < buffer_.size() ? "truncated gzip data" : "corrupt gzip data");
    }
    if (member_ended) {
      if (!another_member()) {
        finished_ = true;
        break;
      }
      inflater_->reset();
    }
  }
  return n - room;
}

uint64_t GzipSource::expected_bytes() const {
  if (!in_.is_regular() || consumed_ == 0) return 0;
  const double ratio = static_cast<double>(produced()) / static_cast<double>(consumed_);
  const double guess = ratio * static_cast<double>(in_.size());
  if (!size_trailer_) return static_cast<uint64_t>(guess);
  // The trailer holds the size mod 2^32: take the candidate nearest to what the ratio says, never
  // less than what has been produced already.
  const double wrap = 4294967296.0;
  const double k = std::max(0.0, std::round((guess - static_cast<double>(*size_trailer_)) / wrap));
  uint64_t candidate = *size_trailer_ + static_cast<uint64_t>(k) * (uint64_t{1} << 32);
  while (candidate < produced()) candidate += uint64_t{1} << 32;
  return candidate;
}

}  // namespace

bool has_gzip_magic(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::unique_ptr<TextSource> open_text(InputFile& input, uint64_t max_text_bytes, GzipBackend backend) {
  if (has_gzip_magic(input.peek(2))) return std::make_unique<GzipSource>(input, max_text_bytes, backend);
  return std::make_unique<PlainSource>(input, max_text_bytes);
}

std::unique_ptr<TextSource> memory_text(std::string_view text, const std::string& source, uint64_t max_text_bytes) {
  return std::make_unique<MemorySource>(text, source, max_text_bytes);
}

bool gzip_uses_isal() {
#if defined(STEPWATCH_HAVE_ISAL)
  return true;
#else
  return false;
#endif
}

}  // namespace stepwatch::import_detail
