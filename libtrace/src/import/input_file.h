// One input, opened once: a path, or "-" for standard input. Private to libtrace/src/import.
//
// Pipes, FIFOs and /dev/stdin can be read only once, so nothing here reopens or seeks: the bytes
// that decide the format (gzip and SQLite magic) are peeked and then served again by read().
// Regular files also answer what only they can (size, the gzip size trailer) with pread(), which
// does not move the read position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepwatch::import_detail {

class InputFile {
 public:
  // Throws ImportError naming the input when it cannot be opened (missing, a directory, ...).
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The name for messages: the path, or "<stdin>" for "-".
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  bool is_stdin() const { return path_ == "-"; }
  bool is_regular() const { return regular_; }
  // Bytes of a regular file; 0 for anything else (a pipe cannot say).
  uint64_t size() const { return size_; }

  // Up to `n` first bytes, read now and kept: read() serves them again. Fewer at end of input.
  std::string_view peek(size_t n);
  // The next bytes, after the peeked ones; 0 at end of input. Throws ImportError on a read error,
  // or when cancel() was called while waiting for a pipe.
  size_t read(char* out, size_t n);
  // The last `n` bytes of a regular file (nullopt otherwise, or when shorter).
  std::optional<std::string> tail(size_t n) const;

  // Makes a read() waiting on a pipe or FIFO return (with ImportError), from any thread: a reader
  // thread must not outlive an import that already failed just because its writer went quiet.
  void cancel();

 private:
  size_t read_fd(char* out, size_t n);

  std::string path_;
  std::string name_;
  int fd_ = -1;
  int cancel_fd_ = -1;  // eventfd polled next to fd_ for non-regular inputs
  bool regular_ = false;
  uint64_t size_ = 0;
  std::string head_;
  size_t head_served_ = 0;
};

}  // namespace stepwatch::import_detail
