// lower_bound_from answers as std::lower_bound does, whatever the hint: rising lookups (the case it
// is for), falling ones, repeated values, hints past the end, empty lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/hinted_search.h"

namespace stepwatch {
namespace {

TEST(LowerBoundFrom, AnswersAsLowerBoundFromAnyHint) {
  std::mt19937 rng(11);  // fixed: the same lists every run
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> v(rng() % 60);
    for (int64_t& x : v) x = static_cast<int64_t>(rng() % 40);  // repeats
    std::sort(v.begin(), v.end());
    size_t hint = rng() % (v.size() + 3);  // past the end too
    for (int q = 0; q < 100; ++q) {
      // Mostly rising, sometimes anywhere.
      const int64_t t = q % 7 == 6 ? static_cast<int64_t>(rng() % 45) - 2 : q * 45 / 100 - 2;
      const auto want = static_cast<size_t>(std::lower_bound(v.begin(), v.end(), t) - v.begin());
      const size_t got = lower_bound_from(v.size(), hint, [&](size_t k) { return v[k] < t; });
      ASSERT_EQ(got, want) << "trial " << trial << ", value " << t;
      EXPECT_EQ(hint, want);
    }
  }
}

TEST(LowerBoundFrom, AnEmptyListAnswersZero) {
  size_t hint = 5;
  EXPECT_EQ(lower_bound_from(0, hint, [](size_t) { return true; }), 0u);
  EXPECT_EQ(hint, 0u);
}

}  // namespace
}  // namespace stepwatch
