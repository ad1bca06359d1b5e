// The writer under every live output file (live/outputs/output_file.h), with its system calls
// failed on purpose: a disk that fills up part-way through a line, a truncate that fails too, a
// close or rename that fails, writes that come back short or interrupted. What must hold: a JSONL
// file ends at a whole line, a file written whole is all there or not there, every failure is
// returned with its reason, and every line not written is counted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "live/outputs/output_file.h"

namespace stepwatch::live {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A disk with `budget` bytes left: a write gets what still fits (a short write, as the kernel
// gives at the edge of a full filesystem), then ENOSPC.
struct FullDisk {
  size_t budget;
  int write_calls = 0;
  bool truncate_fails = false;
  FileIo io = posix_file_io();

  explicit FullDisk(size_t bytes) : budget(bytes) {
    io.write = [this](int fd, const void* data, size_t size) -> ssize_t {
      ++write_calls;
      const size_t n = std::min(size, budget);
      if (n == 0) {
        errno = ENOSPC;
        return -1;
      }
      budget -= n;
      return ::write(fd, data, n);
    };
    io.truncate = [this](int fd, off_t length) {
      if (!truncate_fails) return ::ftruncate(fd, length);
      errno = EIO;
      return -1;
    };
  }
};

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sw_output_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(OutputFileTest, AFullDiskPartWayThroughALineLeavesOnlyWholeLines) {
  FullDisk disk(25);  // two 10-byte lines fit, the third tears after 5 bytes
  const fs::path path = dir_ / "steps.jsonl";
  OutputFile file(path.string(), disk.io);
  EXPECT_TRUE(file.append_line("line 0001"));
  EXPECT_TRUE(file.append_line("line 0002"));
  EXPECT_FALSE(file.append_line("line 0003"));
  EXPECT_TRUE(file.failed());
  EXPECT_EQ(file.error(), "write failed after 2 lines: No space left on device");
  EXPECT_EQ(read_all(path), "line 0001\nline 0002\n") << "the torn third line is cut back";
  const int calls = disk.write_calls;
  disk.budget = 1000;  // space frees up: the file stays closed, it would otherwise have a gap
  EXPECT_FALSE(file.append_line("line 0004"));
  EXPECT_FALSE(file.append_line("line 0005"));
  EXPECT_EQ(disk.write_calls, calls) << "no write after the failure";
  EXPECT_EQ(file.lines_written(), 2u);
  EXPECT_EQ(file.lines_lost(), 3u) << "the failed line and every one after it";
  EXPECT_EQ(read_all(path), "line 0001\nline 0002\n");
}

TEST_F(OutputFileTest, ATruncateThatFailsTooIsSaid) {
  FullDisk disk(15);
  disk.truncate_fails = true;
  OutputFile file((dir_ / "findings.jsonl").string(), disk.io);
  EXPECT_TRUE(file.append_line("line 0001"));
  EXPECT_FALSE(file.append_line("line 0002"));
  EXPECT_EQ(file.error(),
            "write failed after 1 lines and the torn last line could not be cut (Input/output error): No space left on "
            "device");
}

TEST_F(OutputFileTest, ShortAndInterruptedWritesAreRetriedToAWholeLine) {
  FileIo io = posix_file_io();
  int calls = 0;
  io.write = [&](int fd, const void* data, size_t size) -> ssize_t {
    if (++calls % 2 == 0) {
      errno = EINTR;
      return -1;
    }
    return ::write(fd, data, std::min<size_t>(size, 3));
  };
  const fs::path path = dir_ / "steps.jsonl";
  OutputFile file(path.string(), io);
  ASSERT_TRUE(file.append_line(R"({"type":"meta"})"));
  ASSERT_TRUE(file.append_line(R"({"type":"step"})"));
  EXPECT_FALSE(file.failed());
  EXPECT_EQ(read_all(path), "{\"type\":\"meta\"}\n{\"type\":\"step\"}\n");
}

TEST_F(OutputFileTest, AFileThatCannotBeCreatedCountsItsLines) {
  OutputFile file((dir_ / "missing" / "steps.jsonl").string());
  EXPECT_FALSE(file.append_line("x"));
  EXPECT_TRUE(file.failed());
  EXPECT_EQ(file.error(), "cannot create it: No such file or directory");
  EXPECT_FALSE(file.append_line("y"));
  EXPECT_EQ(file.lines_lost(), 2u);
}

TEST_F(OutputFileTest, AFileWrittenWholeIsAllThereOrNotThere) {
  const fs::path path = dir_ / "summary.json";
  std::string error;
  ASSERT_TRUE(write_file_atomically(path.string(), "{\"old\":1}\n", error)) << error;

  FullDisk disk(4);  // the new text does not fit
  EXPECT_FALSE(write_file_atomically(path.string(), "{\"new\":2}\n", error, disk.io));
  EXPECT_EQ(error, path.string() + ": No space left on device");
  EXPECT_EQ(read_all(path), "{\"old\":1}\n") << "the old file stays, whole";

  FileIo bad_close = posix_file_io();
  bad_close.close = [](int fd) {
    ::close(fd);
    errno = EIO;  // NFS reports a deferred write error here
    return -1;
  };
  EXPECT_FALSE(write_file_atomically(path.string(), "{\"new\":3}\n", error, bad_close));
  EXPECT_EQ(error, path.string() + ": Input/output error");

  FileIo bad_rename = posix_file_io();
  bad_rename.rename = [](const char*, const char*) {
    errno = EXDEV;
    return -1;
  };
  EXPECT_FALSE(write_file_atomically(path.string(), "{\"new\":4}\n", error, bad_rename));
  EXPECT_EQ(read_all(path), "{\"old\":1}\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1) << "no temporary left behind";
}

}  // namespace
}  // namespace stepwatch::live
