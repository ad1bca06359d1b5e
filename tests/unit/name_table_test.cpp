#include <gtest/gtest.h>

#include "stepwatch/core/name_table.h"

namespace stepwatch {
namespace {

TEST(NameTable, InternsOnceAndViewsBack) {
  NameTable t;
  const NameId a = t.intern("gemm");
  EXPECT_EQ(t.intern("gemm"), a);
  EXPECT_NE(t.intern("relu"), a);
  EXPECT_EQ(t.view(a), "gemm");
  EXPECT_EQ(t.view(kNoName), "");
  EXPECT_EQ(t.view(12345), "");
}

TEST(NameTable, BoundedWithCountedOverflow) {
  NameTable t(/*max_bytes=*/64);
  for (int i = 0; i < 100; ++i) t.intern("kernel_name_" + std::to_string(i));
  EXPECT_LE(t.bytes(), 64u);
  EXPECT_GT(t.overflowed(), 0u);
  EXPECT_EQ(t.intern("another_new_name"), t.overflow_id());
}

}  // namespace
}  // namespace stepwatch

#include <thread>
#include <vector>

namespace stepwatch {
namespace {

TEST(NameTable, ConcurrentInternAndViewAgree) {
  NameTable t;
  std::vector<std::thread> threads;
  std::vector<std::vector<NameId>> ids(4);
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 2000; ++i) {
        const std::string name = "kernel_" + std::to_string(i % 500);
        const NameId id = t.intern(name);
        ids[w].push_back(id);
        ASSERT_EQ(t.view(id), name);  // readable at once by the interning thread
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int w = 1; w < 4; ++w) EXPECT_EQ(ids[w], ids[0]);  // same names, same ids
  EXPECT_EQ(t.size(), 2u + 500u);
}

TEST(NameTable, MovesKeepTheNames) {
  NameTable a;
  const NameId id = a.intern("gemm");
  NameTable b = std::move(a);
  EXPECT_EQ(b.view(id), "gemm");
}

}  // namespace
}  // namespace stepwatch

namespace stepwatch {
namespace {

TEST(NameTable, CopiesKeepIds) {
  NameTable a;
  const NameId x = a.intern("x");
  const NameId y = a.intern("y");
  NameTable b = a;
  EXPECT_EQ(b.view(x), "x");
  EXPECT_EQ(b.intern("y"), y);
  EXPECT_EQ(b.size(), a.size());
  b.intern("z");
  EXPECT_EQ(a.size() + 1, b.size());
}

}  // namespace
}  // namespace stepwatch
