// CorrelationIndex: a GPU record's launching call (an async copy's record) by correlation id, in
// both of its forms — the table by id for dense ids, the sorted index for sparse ones — which must
// answer alike: the earliest-starting event of an id (an older nsys export's outer call), the
// first added of equal starts, nothing for id 0 or an id never added.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "stepwatch/core/correlation_index.h"

namespace stepwatch {
namespace {

Event call(uint64_t correlation, int64_t start_ns) {
  Event e;
  e.kind = EventKind::kApiCall;
  e.correlation = correlation;
  e.start_ns = start_ns;
  e.end_ns = start_ns + 10;
  return e;
}

// Ids from `first` with `stride` between them (stride 1: dense; 100: sparse), each id's events
// added out of start order; id 0 events (no correlation) among them.
std::vector<Event> calls(uint64_t first, uint64_t stride) {
  std::vector<Event> events;
  for (uint64_t k = 0; k < 50; ++k) {
    const uint64_t id = first + k * stride;
    const auto t = static_cast<int64_t>(1000 * k);
    events.push_back(call(id, t + 5));  // the inner row, added first
    events.push_back(call(id, t));      // the outer call: starts first
    events.push_back(call(0, t));
    if (k % 10 == 0) events.push_back(call(id, t));  // equal start: the earlier-added one stands
  }
  return events;
}

CorrelationIndex index_of(std::span<const Event> events) {
  CorrelationIndex index;
  for (uint32_t i = 0; i < events.size(); ++i) index.add(events, i);
  index.build(events);
  return index;
}

class CorrelationIndexForms : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CorrelationIndexForms, FindTheEarliestEventOfEachId) {
  const uint64_t stride = GetParam();
  const std::vector<Event> events = calls(7, stride);
  const CorrelationIndex index = index_of(events);
  size_t at = 0;
  for (uint64_t k = 0; k < 50; ++k) {
    const Event* found = index.find(events, 7 + k * stride);
    ASSERT_NE(found, nullptr) << "id " << 7 + k * stride;
    EXPECT_EQ(found, &events[at + 1]) << "the outer call (earliest start, first added of equals)";
    at += k % 10 == 0 ? 4 : 3;
  }
  EXPECT_EQ(index.find(events, 0), nullptr);
  EXPECT_EQ(index.find(events, 6), nullptr);                // below the first id
  EXPECT_EQ(index.find(events, 7 + 50 * stride), nullptr);  // past the last
  if (stride > 1) EXPECT_EQ(index.find(events, 8), nullptr);  // between two ids
}

INSTANTIATE_TEST_SUITE_P(DenseAndSparse, CorrelationIndexForms, ::testing::Values(uint64_t{1}, uint64_t{1000}),
                         [](const auto& info) { return info.param == 1 ? "dense" : "sparse"; });

TEST(CorrelationIndex, NothingAddedFindsNothing) {
  const std::vector<Event> events{call(0, 1)};
  const CorrelationIndex index = index_of(events);
  EXPECT_EQ(index.find(events, 1), nullptr);
}

}  // namespace
}  // namespace stepwatch
