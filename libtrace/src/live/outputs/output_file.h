// How every file of the live outputs reaches the disk: JSONL files that claim whole lines
// (steps.jsonl, findings.jsonl) and files written whole at once (summary.txt, summary.json, the
// metrics textfile).
//
// The contract a reader may rely on, also when the disk fills up or the job is killed:
// - an OutputFile holds only whole lines. Each line leaves in one write(2) (no user-space buffer,
//   so a SIGTERM'd job, which runs no atexit and no flush, loses nothing already appended). A write
//   that fails part-way is cut back (ftruncate) to the last whole line, and the file is closed for
//   good: every later line is counted as lost, never half written.
// - write_file_atomically leaves the old file or the new one, never part of one, and no temporary.
// Every failure is returned with the path and errno's text; the callers say it once in the job log
// and count it (RunOutputs::write_failures) for the exit summary. Nothing here logs or throws.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace stepwatch::live {

// The system calls an output makes, replaceable so that tests can fail them at will (a full disk
// part-way through a line, a failing close). Production uses posix_file_io().
struct FileIo {
  std::function<int(const char* path, int flags, mode_t mode)> open;
  std::function<ssize_t(int fd, const void* data, size_t size)> write;
  std::function<int(int fd, off_t length)> truncate;
  std::function<int(int fd)> close;
  std::function<int(const char* from, const char* to)> rename;
  std::function<int(const char* path)> unlink;
};
const FileIo& posix_file_io();

// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns the bytes written; on an
// error, fewer than data.size() with `error_number` set.
size_t write_fully(const FileIo& io, int fd, std::string_view data, int& error_number);

// One append-only file of whole lines, created (truncated) on the first append.
class OutputFile {
 public:
  OutputFile(std::string path, const FileIo& io = posix_file_io()) : path_(std::move(path)), io_(io) {}
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Appends `line` (no newline in it) and a newline. True when the whole line is on disk. False
  // when it is not: this append failed (failed() turns true and error() says why) or an earlier
  // one did (the line is counted in lines_lost()).
  bool append_line(std::string_view line);

  bool failed() const { return failed_; }
  // "steps.jsonl: No space left on device after 1234 lines" (the part the job log needs).
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  uint64_t lines_written() const { return lines_written_; }
  uint64_t lines_lost() const { return lines_lost_; }

 private:
  void fail(const std::string& what, int error_number);

  std::string path_;
  const FileIo& io_;
  int fd_ = -1;
  bool failed_ = false;
  std::string error_;
  off_t whole_bytes_ = 0;  // the end of the last whole line: where a torn write is cut back to
  uint64_t lines_written_ = 0;
  uint64_t lines_lost_ = 0;
};

// Writes `text` to `path` through a temporary file in the same folder (not ending in `path`'s
// suffix: a collector reading *.prom or *.json never sees it) and a rename. False with `error` set
// ("<path>: No space left on device") on failure, the temporary removed.
bool write_file_atomically(const std::string& path, std::string_view text, std::string& error,
                           const FileIo& io = posix_file_io());

}  // namespace stepwatch::live
