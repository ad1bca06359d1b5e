#include "import/input_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "stepwatch/import/kineto_importer.h"  // ImportError

namespace stepwatch::import_detail {
namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

InputFile::InputFile(const std::string& path) : path_(path), name_(path == "-" ? "<stdin>" : path) {
  if (is_stdin()) {
    fd_ = ::dup(STDIN_FILENO);  // our own descriptor: closing it leaves the process's stdin alone
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd_ < 0) throw ImportError(name_, "cannot open: " + errno_text(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int err = errno;
    ::close(fd_);
    throw ImportError(name_, "cannot open: " + errno_text(err));
  }
  if (S_ISDIR(info.st_mode)) {
    ::close(fd_);
    throw ImportError(name_, "cannot open: is a directory");
  }
  regular_ = S_ISREG(info.st_mode);
  size_ = regular_ ? static_cast<uint64_t>(info.st_size) : 0;
  if (!regular_) cancel_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (cancel_fd_ >= 0) ::close(cancel_fd_);
}

void InputFile::cancel() {
  if (cancel_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(cancel_fd_, &one, sizeof one);
}

size_t InputFile::read_fd(char* out, size_t n) {
  for (;;) {
    if (cancel_fd_ >= 0) {
      pollfd fds[2] = {{fd_, POLLIN, 0}, {cancel_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        throw ImportError(name_, "cannot read: " + errno_text(errno));
      }
      if (fds[1].revents != 0) throw ImportError(name_, "reading stopped: the import already failed");
    }
    const ssize_t got = ::read(fd_, out, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno == EINTR || errno == EAGAIN) continue;
    throw ImportError(name_, "cannot read: " + errno_text(errno));
  }
}

std::string_view InputFile::peek(size_t n) {
  while (head_.size() < n) {
    const size_t had = head_.size();
    head_.resize(n);
    const size_t got = read_fd(head_.data() + had, n - had);
    head_.resize(had + got);
    if (got == 0) break;
  }
  return std::string_view(head_).substr(0, n);
}

size_t InputFile::read(char* out, size_t n) {
  if (head_served_ < head_.size()) {
    const size_t k = std::min(n, head_.size() - head_served_);
    std::memcpy(out, head_.data() + head_served_, k);
    head_served_ += k;
    return k;
  }
  return read_fd(out, n);
}

std::optional<std::string> InputFile::tail(size_t n) const {
  if (!regular_ || size_ < n) return std::nullopt;
  std::string bytes(n, '\0');
  const ssize_t got = ::pread(fd_, bytes.data(), n, static_cast<off_t>(size_ - n));
  if (got != static_cast<ssize_t>(n)) return std::nullopt;
  return bytes;
}

}  // namespace stepwatch::import_detail
