// The importer's event vector (libtrace/src/import/event_collector.h): sized once from the text's
// expected size, blocks past the estimate or without one, joined in order.
#include <gtest/gtest.h>

#include "import/event_collector.h"

namespace stepwatch::import_detail {
namespace {

std::vector<Event> collect(size_t n, uint64_t expected_text_bytes) {
  EventCollector events;
  for (size_t i = 0; i < n; ++i) {
    // 100 bytes of text per event so far; the whole text is `expected_text_bytes`.
    events.note_text(100 * (i + 1), expected_text_bytes);
    events.add().start_ns = static_cast<int64_t>(i);
  }
  return events.take();
}

void expect_in_order(const std::vector<Event>& events, size_t n) {
  ASSERT_EQ(events.size(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(events[i].start_ns, static_cast<int64_t>(i));
}

TEST(EventCollector, SizedOnceFromTheExpectedText) {
  const size_t n = 200000;
  const std::vector<Event> events = collect(n, 100 * n);
  expect_in_order(events, n);
  // One vector sized at the first growth (with its margin), never regrown: capacity past the
  // events is address space only.
  EXPECT_GE(events.capacity(), n);
  EXPECT_LE(events.capacity(), 2 * n);
}

TEST(EventCollector, BlocksWhenTheEstimateFallsShortOrIsUnknown) {
  const size_t n = 3 * EventCollector::kBlockEvents + 17;
  expect_in_order(collect(n, 0), n);                // a pipe: no size known
  expect_in_order(collect(n, 100 * 10000), n);      // an estimate far too small
  const std::vector<Event> exact = collect(n, 0);
  EXPECT_EQ(exact.capacity(), n);  // joined into one exact vector
  expect_in_order(collect(5, 0), 5);
  expect_in_order(collect(0, 0), 0);
}

}  // namespace
}  // namespace stepwatch::import_detail
