// The scanner's block kernels (libtrace/src/import/trace_scanner.h): the AVX2 one, which the
// scanner uses where the CPU has it, finds every byte the SSE2 one finds, on random text and on
// text dense in the bytes it looks for, at every alignment.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "import/trace_scanner.h"

namespace stepwatch::import_detail {
namespace {

#if defined(__SSE2__)
TEST(ScannerKernels, Avx2MasksEqualSse2MasksOnEveryBlock) {
  if (!scanner_kernels::avx2_available()) GTEST_SKIP() << "this CPU has no AVX2: the scanner uses SSE2 only";
  std::mt19937 rng(11);
  const std::string alphabet = "\"\\,{}[]:ab 0\x7b\x5b\x7d\x5d\x3b\x1b\xfb\xdd";  // with the bit-5 neighbours of each
  std::string text(1 << 16, ' ');
  for (char& c : text) c = alphabet[rng() % alphabet.size()];
  for (size_t i = 0; i < 4096; ++i) text[rng() % text.size()] = static_cast<char>(rng());  // any byte
  for (size_t at = 0; at + 64 <= text.size(); at += 61) {  // every alignment mod 64 in turn
    const scanner_kernels::BlockMasks a = scanner_kernels::sse2(text.data() + at);
    const scanner_kernels::BlockMasks b = scanner_kernels::avx2(text.data() + at);
    ASSERT_EQ(a.quotes, b.quotes) << at;
    ASSERT_EQ(a.backslashes, b.backslashes) << at;
    ASSERT_EQ(a.brackets, b.brackets) << at;
    ASSERT_EQ(a.commas, b.commas) << at;
  }
  // Each kind of byte alone, at each position of a block.
  for (const char c : std::string("\"\\,{}[]")) {
    for (size_t pos = 0; pos < 64; ++pos) {
      std::string block(64, 'x');
      block[pos] = c;
      const scanner_kernels::BlockMasks b = scanner_kernels::avx2(block.data());
      const uint64_t bit = uint64_t{1} << pos;
      EXPECT_EQ(b.quotes, c == '"' ? bit : 0) << c << pos;
      EXPECT_EQ(b.backslashes, c == '\\' ? bit : 0) << c << pos;
      EXPECT_EQ(b.commas, c == ',' ? bit : 0) << c << pos;
      EXPECT_EQ(b.brackets, (c == '{' || c == '}' || c == '[' || c == ']') ? bit : 0) << c << pos;
    }
  }
}
#endif

}  // namespace
}  // namespace stepwatch::import_detail
