#include <gtest/gtest.h>

#include "stepwatch/core/config.h"

namespace stepwatch {
namespace {

TEST(CheckPattern, AcceptsTheDefaultsAndOrdinaryPatterns) {
  EXPECT_EQ(check_pattern(kDefaultStepPattern), "");
  EXPECT_EQ(check_pattern(kDefaultDataPattern), "");
  EXPECT_EQ(check_pattern("^fwd_bwd$"), "");
  EXPECT_EQ(check_pattern("step_\\d{1,6}"), "");
  EXPECT_EQ(check_pattern("a\\0b"), "");
}

TEST(CheckPattern, RefusesWhatTheRegexCompilerMishandles) {
  EXPECT_NE(check_pattern("(["), "");
  EXPECT_NE(check_pattern("(a)\\1"), "");
  // Found by fuzzing STEPWATCH_STEP_PATTERN: a huge back-reference number overflowed inside
  // libstdc++'s regex compiler.
  EXPECT_NE(check_pattern("^(PofrSeilt]ep#8d\\\\99999988999999994444449\\2729"), "");
  EXPECT_NE(check_pattern("a\\99999999999999999999"), "");
  EXPECT_NE(check_pattern("a{99999999999}"), "");
  EXPECT_NE(check_pattern("a{1,99999999999}"), "");
  EXPECT_NE(check_pattern(std::string(2000, 'a')), "");
}

}  // namespace
}  // namespace stepwatch
