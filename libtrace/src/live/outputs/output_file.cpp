#include "live/outputs/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace stepwatch::live {

const FileIo& posix_file_io() {
  // Leaked on purpose: outputs may be written from atexit, after static destructors ran.
  static const FileIo* io = new FileIo{
      [](const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); },
      [](int fd, const void* data, size_t size) { return ::write(fd, data, size); },
      [](int fd, off_t length) { return ::ftruncate(fd, length); },
      [](int fd) { return ::close(fd); },
      [](const char* from, const char* to) { return std::rename(from, to); },
      [](const char* path) { return ::unlink(path); },
  };
  return *io;
}

size_t write_fully(const FileIo& io, int fd, std::string_view data, int& error_number) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = io.write(fd, data.data() + written, data.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // A write of 0 bytes to a file makes no progress: treat it as the error it stands for.
    error_number = n < 0 ? errno : EIO;
    return written;
  }
  return written;
}

OutputFile::~OutputFile() {
  // Nothing is buffered here (each line left in its own write), so close has nothing to report
  // on a local filesystem; the process-wide session is leaked and never gets here anyway.
  if (fd_ >= 0) io_.close(fd_);
}

void OutputFile::fail(const std::string& what, int error_number) {
  failed_ = true;
  error_ = what + std::strerror(error_number);
}

bool OutputFile::append_line(std::string_view line) {
  if (failed_) {
    ++lines_lost_;
    return false;
  }
  if (fd_ < 0) {
    fd_ = io_.open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      fail("cannot create it: ", errno);
      ++lines_lost_;
      return false;
    }
  }
  std::string whole;
  whole.reserve(line.size() + 1);
  whole.append(line);
  whole.push_back('\n');
  int error_number = 0;
  const size_t written = write_fully(io_, fd_, whole, error_number);
  if (written == whole.size()) {
    whole_bytes_ += static_cast<off_t>(written);
    ++lines_written_;
    return true;
  }
  // Part of the line may be on disk: cut it off, so the file still ends at a whole line. A
  // shrinking truncate needs no free space, so it works on a full disk too.
  std::string what = "write failed after " + std::to_string(lines_written_) + " lines: ";
  if (written > 0 && io_.truncate(fd_, whole_bytes_) != 0) {
    const int truncate_errno = errno;
    what = "write failed after " + std::to_string(lines_written_) + " lines and the torn last line could not be cut (" +
           std::strerror(truncate_errno) + "): ";
  }
  fail(what, error_number);
  ++lines_lost_;
  // Closed for good: a later line could succeed once space frees up, but a file with a gap in it
  // would claim a history it does not have.
  io_.close(fd_);
  fd_ = -1;
  return false;
}

bool write_file_atomically(const std::string& path, std::string_view text, std::string& error, const FileIo& io) {
  const std::string tmp = path + "." + std::to_string(::getpid()) + ".tmp";
  const int fd = io.open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = tmp + ": " + std::strerror(errno);
    return false;
  }
  int error_number = 0;
  const bool written = write_fully(io, fd, text, error_number) == text.size();
  // close is checked too: on NFS it is where a deferred write error shows up.
  const bool closed = io.close(fd) == 0;
  if (!closed && written) error_number = errno;
  if (!written || !closed) {
    error = path + ": " + std::strerror(error_number);
    io.unlink(tmp.c_str());
    return false;
  }
  if (io.rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": " + std::strerror(errno);
    io.unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace stepwatch::live
