// The completeness watermark's bookkeeping (libtrace/src/cupti/launch_tracker.h): which record
// completes which call, the bounded wait, and the per-thread rings.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cupti/launch_tracker.h"

namespace stepwatch::live {
namespace {

constexpr int64_t kNoLimit = INT64_MAX / 4;

TEST(LaunchTracker, AGpuCallIsWaitedForUntilItsGpuRecordArrives) {
  LaunchTracker t;
  t.enter(7, 1'000, /*needs_gpu_record=*/true);
  LaunchTracker::Tick r = t.tick(5'000, kNoLimit);
  EXPECT_EQ(r.pending, 1u);
  EXPECT_EQ(r.watermark_ns, 1'000) << "held at the launch";
  const uint32_t api[] = {7};
  t.arrived(api, {});
  EXPECT_EQ(t.tick(6'000, kNoLimit).pending, 1u) << "its API record is not its kernel";
  const uint32_t gpu[] = {7};
  t.arrived({}, gpu);
  r = t.tick(7'000, kNoLimit);
  EXPECT_EQ(r.pending, 0u);
  EXPECT_EQ(r.watermark_ns, 7'000);
}

TEST(LaunchTracker, ABlockingCallIsCompletedByItsApiRecord) {
  LaunchTracker t;
  t.enter(9, 1'000, /*needs_gpu_record=*/false);
  const uint32_t api[] = {9};
  t.arrived(api, {});
  EXPECT_EQ(t.tick(2'000, kNoLimit).pending, 0u);
}

// cudaMemsetAsync: the memset's record carries the driver call's id only (cupti_activity.h:2455-2457).
TEST(LaunchTracker, TheNestedDriverCallsIdCompletesTheOuterCall) {
  LaunchTracker t;
  t.enter(20, 1'000, true);
  t.nested(21);
  EXPECT_EQ(t.tick(2'000, kNoLimit).pending, 1u);
  const uint32_t gpu[] = {21};
  t.arrived({}, gpu);
  EXPECT_EQ(t.tick(3'000, kNoLimit).pending, 0u);
}

TEST(LaunchTracker, PastTheLimitCallsAreGivenUpAndTheWatermarkMovesOn) {
  LaunchTracker t;
  t.enter(30, 1'000, true);
  t.enter(31, 50'000, true);
  const LaunchTracker::Tick r = t.tick(100'000, /*wait_limit_ns=*/60'000);
  EXPECT_EQ(r.gave_up, 1u);
  EXPECT_EQ(r.gave_up_from_ns, 1'000);
  EXPECT_EQ(r.pending, 1u);
  EXPECT_EQ(r.watermark_ns, 50'000);
}

TEST(LaunchTracker, RecordsOfUntrackedCallsAreForgottenAfterTwoTicks) {
  LaunchTracker t;
  const uint32_t gpu[] = {99};
  t.arrived({}, gpu);
  t.tick(1'000, kNoLimit);
  t.tick(2'000, kNoLimit);
  t.tick(3'000, kNoLimit);
  t.enter(99, 4'000, true);  // an id reused much later is waited for, not taken as arrived
  EXPECT_EQ(t.tick(5'000, kNoLimit).pending, 1u);
}

TEST(LaunchTracker, ABusyThreadsCallsAllFitBetweenTwoTicks) {
  LaunchTracker t;
  std::thread producer([&] {
    for (uint32_t i = 1; i <= 100'000; ++i) t.enter(i, 1'000 + i, true);
  });
  producer.join();
  EXPECT_EQ(t.tick(200'000, kNoLimit).pending, 100'000u);
  EXPECT_EQ(t.overflows(), 0u);
}

TEST(LaunchTracker, PastItsBoundARingOverflowsAndTheOverflowIsHeldThenGivenUp) {
  LaunchTracker t(/*ring_entries=*/4096);
  for (uint32_t i = 1; i <= 5'000; ++i) t.enter(i, 1'000 + i, true);
  EXPECT_EQ(t.overflows(), 5'000u - 4'096u);
  LaunchTracker::Tick r = t.tick(10'000, kNoLimit);
  EXPECT_EQ(r.pending, 4'096u);
  std::vector<uint32_t> all(4'096);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i + 1;
  t.arrived({}, all);
  r = t.tick(20'000, kNoLimit);
  EXPECT_EQ(r.pending, 0u);
  EXPECT_EQ(r.watermark_ns, 1'000 + 4'097) << "the untracked calls hold it";
  r = t.tick(20'000, /*wait_limit_ns=*/5'000);
  EXPECT_GE(r.gave_up, 1u);
}

TEST(LaunchTracker, DisabledAndClearedTrackNothing) {
  LaunchTracker t;
  t.set_enabled(false);
  t.enter(1, 1'000, true);
  EXPECT_EQ(t.tick(2'000, kNoLimit).pending, 0u);
  t.set_enabled(true);
  t.enter(2, 3'000, true);
  t.clear();
  EXPECT_EQ(t.tick(4'000, kNoLimit).pending, 0u);
}

}  // namespace
}  // namespace stepwatch::live
