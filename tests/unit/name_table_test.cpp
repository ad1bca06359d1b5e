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
