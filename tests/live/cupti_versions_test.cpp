// The table of CUPTI versions stepwatch reads (cupti/record_layouts.h) and the choice of library:
// the table itself, the driver hint, and — in the per-version runs, where STEPWATCH_TEST_PRELOAD_CUPTI
// names a pinned release's libcupti — that the library a process has loaded is the one used.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cupti/cupti_api.h"
#include "cupti/record_layouts.h"

namespace stepwatch::live {
namespace {

TEST(CuptiVersionTable, RangesAreDisjointAndSizesKeepRecordsAligned) {
  uint32_t previous_last = 0;
  for (const RecordLayout& l : known_record_layouts()) {
    EXPECT_LE(l.first_version, l.last_version) << l.name;
    EXPECT_GT(l.first_version, previous_last) << l.name << ": ranges must be ordered and disjoint";
    previous_last = l.last_version;
    EXPECT_EQ(l.major, l.first_version >= 130000 ? 13u : 12u) << l.name;
    for (const RecordLayout::Kind& k :
         {l.kernel, l.memcpy, l.peer_copy, l.memset, l.sync, l.api, l.memory, l.overhead}) {
      EXPECT_EQ(k.bytes % 8, 0) << l.name << " " << k.record;
      // Every read field lies inside every record (the last one read: kernel name at 104).
      EXPECT_GE(k.bytes, 40) << l.name << " " << k.record;
    }
    EXPECT_GE(l.kernel.bytes, 112) << l.name;  // name (104) + 8
  }
}

TEST(CuptiVersionTable, TheCompiledLayoutIsTheHeadersOwn) {
  const RecordLayout& l = compiled_record_layout();
  EXPECT_EQ(l.kernel.bytes, sizeof(CUpti_ActivityKernel10));
  EXPECT_EQ(l.memcpy.bytes, sizeof(CUpti_ActivityMemcpy6));
  EXPECT_EQ(l.peer_copy.bytes, sizeof(CUpti_ActivityMemcpyPtoP4));
  EXPECT_EQ(l.memset.bytes, sizeof(CUpti_ActivityMemset4));
  EXPECT_EQ(l.sync.bytes, sizeof(CUpti_ActivitySynchronization2));
  EXPECT_EQ(l.api.bytes, sizeof(CUpti_ActivityAPI));
  EXPECT_EQ(l.memory.bytes, sizeof(CUpti_ActivityMemory4));
  EXPECT_EQ(l.overhead.bytes, sizeof(CUpti_ActivityOverhead3));
  EXPECT_EQ(record_layout(CUPTI_API_VERSION), &l);
}

TEST(CuptiVersionTable, VersionsOutsideTheTableAreRefused) {
  // 12.4 (v22) and 12.5 (v23) write CUpti_ActivityMemory3; 12.7 (v25) was never released.
  for (const uint32_t v : {0u, 19u, 22u, 23u, 25u, 29u, 120800u, 129999u, 130600u, 140000u}) {
    EXPECT_EQ(record_layout(v), nullptr) << v;
  }
  EXPECT_STREQ(record_layout(24)->name, "CUDA 12.6");
  EXPECT_STREQ(record_layout(28)->name, "CUDA 12.8-12.9");
  EXPECT_STREQ(record_layout(130001)->name, "CUDA 13.0");
  EXPECT_STREQ(record_layout(130500)->name, "CUDA 13.4-13.5");
  EXPECT_EQ(known_record_layouts_text(), "12.6, 12.8-12.9, 13.0, 13.1, 13.2, 13.3, 13.4-13.5");
}

std::string write_temp(const std::string& text) {
  char path[] = "/tmp/stepwatch_nvidia_version_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  if (fd >= 0) {
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
  }
  return path;
}

// /proc/driver/nvidia/version as the proprietary and the open kernel modules write it.
TEST(CuptiLibraryChoice, TheDriverHintReadsTheKernelModuleVersion) {
  const std::string r570 = write_temp(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 16 05:19:05 UTC 2025\n"
      "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  const std::string r580 = write_temp(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16-I3-B03-4-3)\n");
  const std::string other = write_temp("no version here\n");
  EXPECT_EQ(driver_cuda_major_hint(r570.c_str()), 12);
  EXPECT_EQ(driver_cuda_major_hint(r580.c_str()), 13);
  EXPECT_EQ(driver_cuda_major_hint(other.c_str()), 0);
  EXPECT_EQ(driver_cuda_major_hint("/nonexistent/version"), 0);
  for (const std::string& p : {r570, r580, other}) std::remove(p.c_str());
}

// Run per pinned release in a process of its own (tests/CMakeLists.txt): the libcupti a process
// has loaded — torch's wheel copy, libcupti.so.12 or .13 — is the one stepwatch uses.
TEST(CuptiLibraryChoice, TheLibcuptiTheProcessHasLoadedIsUsed) {
  const char* preload = std::getenv("STEPWATCH_TEST_PRELOAD_CUPTI");
  if (preload == nullptr || *preload == '\0') GTEST_SKIP() << "STEPWATCH_TEST_PRELOAD_CUPTI not set";
  void* h = dlopen(preload, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  CuptiApi api;
  std::string error;
  ASSERT_TRUE(load_cupti_api("", api, error)) << error;
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_TRUE(api.already_loaded);
  EXPECT_EQ(api.library_path, preload);
  uint32_t version = 0;
  ASSERT_EQ(api.cuptiGetVersion(&version), CUPTI_SUCCESS);
  const RecordLayout* layout = record_layout(version);
  ASSERT_NE(layout, nullptr) << version;
  EXPECT_NE(std::string(preload).find("libcupti.so." + std::to_string(layout->major)), std::string::npos);
  // CUPTI 12 exports cuptiSubscribe only; the table resolves what the library has.
  EXPECT_EQ(api.cuptiSubscribe_v2 != nullptr, layout->major >= 13);
  EXPECT_NE(api.cuptiSubscribe, nullptr);
  EXPECT_TRUE(api.complete());
}

}  // namespace
}  // namespace stepwatch::live
