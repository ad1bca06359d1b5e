// The activity-buffer pool: bounded, 8-byte aligned, zeroed, reused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "cupti/buffer_pool.h"

namespace stepwatch::live {
namespace {

bool all_zero(const uint8_t* p, size_t n) {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

TEST(CuptiBufferPoolTest, HandsOutAlignedZeroedBuffersUpToItsCap) {
  ActivityBufferPool pool(64 << 10, 3);
  std::vector<uint8_t*> got;
  for (int i = 0; i < 3; ++i) {
    uint8_t* b = pool.acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
    EXPECT_TRUE(all_zero(b, pool.buffer_bytes()));
    got.push_back(b);
  }
  EXPECT_EQ(pool.acquire(), nullptr);  // at the cap
  EXPECT_EQ(pool.outstanding(), 3);
  EXPECT_EQ(pool.bytes_allocated(), 3u * (64 << 10));
}

TEST(CuptiBufferPoolTest, ReleaseReZeroesTheUsedPartAndReuses) {
  ActivityBufferPool pool(64 << 10, 1);
  uint8_t* b = pool.acquire();
  ASSERT_NE(b, nullptr);
  std::memset(b, 0xAB, 1000);
  EXPECT_TRUE(pool.release(b, 1000));
  EXPECT_EQ(pool.outstanding(), 0);
  uint8_t* again = pool.acquire();
  EXPECT_EQ(again, b);
  EXPECT_TRUE(all_zero(again, pool.buffer_bytes()));
}

TEST(CuptiBufferPoolTest, ForeignAndDoubleReleasesAreRefused) {
  ActivityBufferPool pool(64 << 10, 2);
  uint8_t* b = pool.acquire();
  uint8_t foreign[64];
  EXPECT_FALSE(pool.release(foreign, sizeof(foreign)));
  EXPECT_FALSE(pool.release(nullptr, 0));
  EXPECT_TRUE(pool.release(b, 0));
  EXPECT_FALSE(pool.release(b, 0));  // already back
  EXPECT_EQ(pool.outstanding(), 0);
}

TEST(CuptiBufferPoolTest, ConcurrentUseNeverExceedsTheCap) {
  ActivityBufferPool pool(64 << 10, 4);
  std::atomic<int> in_hand{0}, max_in_hand{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        uint8_t* b = pool.acquire();
        if (b == nullptr) {
          refused.fetch_add(1);
          continue;
        }
        const int now = in_hand.fetch_add(1) + 1;
        int seen = max_in_hand.load();
        while (now > seen && !max_in_hand.compare_exchange_weak(seen, now)) {
        }
        b[0] = 1;
        in_hand.fetch_sub(1);
        EXPECT_TRUE(pool.release(b, 8));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(max_in_hand.load(), 4);
  EXPECT_LE(pool.bytes_allocated(), 4u * (64 << 10));
  EXPECT_EQ(pool.outstanding(), 0);
}

}  // namespace
}  // namespace stepwatch::live
