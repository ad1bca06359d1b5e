#include <gtest/gtest.h>

#include <string>

#include "stepwatch/core/step_ring.h"

namespace stepwatch {
namespace {

TEST(StepRing, KeepsTheLastKInOrderAndCountsEvictions) {
  StepRing<int> ring(3);
  EXPECT_TRUE(ring.empty());
  for (int i = 1; i <= 5; ++i) ring.push(i);
  ASSERT_EQ(ring.size(), 3u);
  EXPECT_EQ(ring.at(0), 3);
  EXPECT_EQ(ring.at(2), 5);
  EXPECT_EQ(ring.newest(), 5);
  EXPECT_EQ(ring.evicted(), 2u);
  std::string seen;
  ring.for_each([&](int v) { seen += std::to_string(v); });
  EXPECT_EQ(seen, "345");
}

TEST(StepRing, PartiallyFilledAndCleared) {
  StepRing<std::string> ring(4);
  ring.push("a");
  ring.push("b");
  EXPECT_EQ(ring.at(0), "a");
  EXPECT_EQ(ring.newest(), "b");
  EXPECT_EQ(ring.evicted(), 0u);
  ring.clear();
  EXPECT_TRUE(ring.empty());
  ring.push("c");
  EXPECT_EQ(ring.at(0), "c");
}

TEST(StepRing, ZeroCapacityHoldsOne) {
  StepRing<int> ring(0);
  ring.push(1);
  ring.push(2);
  EXPECT_EQ(ring.size(), 1u);
  EXPECT_EQ(ring.newest(), 2);
}

}  // namespace
}  // namespace stepwatch
