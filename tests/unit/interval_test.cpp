#include <gtest/gtest.h>

#include "stepwatch/core/interval.h"

namespace stepwatch {
namespace {

IntervalSet set(std::vector<Interval> v) { return IntervalSet::from_unsorted(std::move(v)); }

TEST(IntervalSet, MergesOverlappingAndTouchingAndDropsEmpty) {
  const IntervalSet s = set({{5, 10}, {0, 3}, {3, 4}, {8, 12}, {20, 20}, {30, 25}});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.intervals()[0], (Interval{0, 4}));
  EXPECT_EQ(s.intervals()[1], (Interval{5, 12}));
  EXPECT_EQ(s.total_length(), 11);
}

TEST(IntervalSet, MeasureWithinTrimsPartialParts) {
  const IntervalSet s = set({{0, 10}, {20, 30}, {40, 50}});
  EXPECT_EQ(s.measure_within(5, 45), 5 + 10 + 5);
  EXPECT_EQ(s.measure_within(10, 20), 0);
  EXPECT_EQ(s.measure_within(-100, 100), 30);
  EXPECT_EQ(s.measure_within(25, 26), 1);
  EXPECT_EQ(s.measure_within(50, 40), 0);
  EXPECT_EQ(IntervalSet().measure_within(0, 10), 0);
}

TEST(IntervalSet, ClipMatchesMeasure) {
  const IntervalSet s = set({{0, 10}, {20, 30}, {40, 50}});
  const IntervalSet c = s.clip(5, 45);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.intervals()[0], (Interval{5, 10}));
  EXPECT_EQ(c.intervals()[2], (Interval{40, 45}));
  EXPECT_EQ(c.total_length(), s.measure_within(5, 45));
}

TEST(IntervalSet, SetAlgebra) {
  const IntervalSet a = set({{0, 10}, {20, 30}});
  const IntervalSet b = set({{5, 25}});
  EXPECT_EQ(a.unite(b).total_length(), 30);
  EXPECT_EQ(a.intersect(b).total_length(), 10);
  const IntervalSet d = a.subtract(b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.intervals()[0], (Interval{0, 5}));
  EXPECT_EQ(d.intervals()[1], (Interval{25, 30}));
  // |A \ B| = |A| - |A ∩ B|
  EXPECT_EQ(d.total_length(), a.total_length() - a.intersect(b).total_length());
}

TEST(IntervalSet, SubtractWithOnePartCoveringSeveral) {
  const IntervalSet a = set({{0, 10}, {12, 14}, {16, 30}});
  const IntervalSet b = set({{5, 20}, {25, 26}});
  const IntervalSet d = a.subtract(b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.intervals()[0], (Interval{0, 5}));
  EXPECT_EQ(d.intervals()[1], (Interval{20, 25}));
  EXPECT_EQ(d.intervals()[2], (Interval{26, 30}));
}

TEST(IntervalSet, ComplementWithinGivesGaps) {
  const IntervalSet s = set({{10, 20}, {30, 40}});
  const IntervalSet g = s.complement_within(0, 50);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g.total_length(), 30);
  EXPECT_EQ(g.intervals()[1], (Interval{20, 30}));
}

TEST(IntervalSet, FirstEndingAfter) {
  const IntervalSet s = set({{10, 20}, {30, 40}});
  EXPECT_EQ(s.first_ending_after(0), 0u);
  EXPECT_EQ(s.first_ending_after(15), 0u);
  EXPECT_EQ(s.first_ending_after(20), 1u);
  EXPECT_EQ(s.first_ending_after(45), 2u);
}

}  // namespace
}  // namespace stepwatch
