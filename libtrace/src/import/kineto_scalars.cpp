#include "import/kineto_scalars.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace stepwatch::import_detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<int64_t> round_to_int64(double v) {
  // 9.2e18 stays below INT64_MAX after rounding; anything larger is garbage, not an id or a time.
  if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(v));
}

std::optional<double> parse_double(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The integer part of "123.456" (µs), advancing `i`; nullopt without digits or past the int64 ns
// range.
std::optional<int64_t> read_whole_us(std::string_view text, size_t& i) {
  constexpr int64_t kMaxWholeUs = (std::numeric_limits<int64_t>::max() - 1000) / 1000;
  const size_t first_digit = i;
  int64_t whole_us = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    // Compared with constants (no division per digit: this runs for every ts and dur); far from
    // int64's own limit, so the step itself cannot overflow.
    if (whole_us > kMaxWholeUs / 10) return std::nullopt;
    whole_us = whole_us * 10 + (text[i] - '0');
    if (whole_us > kMaxWholeUs) return std::nullopt;
  }
  if (i == first_digit) return std::nullopt;
  return whole_us;
}

// The decimals after the point (at `i`) in ns: three digits, the fourth rounds half away from
// zero like llround(ts * 1000), the rest cannot change the result. nullopt without digits.
std::optional<int64_t> read_fraction_ns(std::string_view text, size_t& i) {
  const size_t first_digit = i;
  int64_t frac_ns = 0;
  int64_t digit_ns = 100;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    const int digit = text[i] - '0';
    if (digit_ns > 0) {
      frac_ns += digit * digit_ns;
      digit_ns /= 10;
    } else if (i - first_digit == 3 && digit >= 5) {
      frac_ns += 1;
    }
  }
  if (i == first_digit) return std::nullopt;
  return frac_ns;
}

// Kineto times are microseconds with up to three decimals (ns). Parsing the decimal text keeps
// them exact: ts * 1000 in a double is not, once epoch microseconds (~1.7e15) are scaled past 2^53
// (hta-ns_resolution has 19 significant digits). Exponents and junk give nullopt.
std::optional<int64_t> parse_decimal_us_as_ns(std::string_view text) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  const std::optional<int64_t> whole_us = read_whole_us(text, i);
  if (!whole_us) return std::nullopt;
  int64_t frac_ns = 0;
  if (i < text.size() && text[i] == '.') {
    const std::optional<int64_t> frac = read_fraction_ns(text, ++i);
    if (!frac) return std::nullopt;
    frac_ns = *frac;
  }
  if (i != text.size()) return std::nullopt;
  const int64_t ns = *whole_us * 1000 + frac_ns;
  return negative ? -ns : ns;
}

// FNV-1a: stable across runs and platforms, unlike std::hash.
uint32_t stable_hash(std::string_view s) {
  uint32_t h = 2166136261u;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

}  // namespace

std::string_view trim(std::string_view s) {
  const auto not_space = [](char c) { return c != ' ' && c != '\t' && c != '\n' && c != '\r'; };
  while (!s.empty() && !not_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && !not_space(s.back())) s.remove_suffix(1);
  return s;
}

// Integers, hex ("0x7f": HIP streams and pointers) and floats, rounded ("3.0" is 3).
std::optional<int64_t> parse_integer(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  const char* const end = text.data() + text.size();
  int64_t v = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    const auto [p, ec] = std::from_chars(text.data() + 2, end, v, 16);
    return ec == std::errc{} && p == end ? std::optional<int64_t>(v) : std::nullopt;
  }
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc{} && p == end) return v;
  const std::optional<double> d = parse_double(text);
  return d ? round_to_int64(*d) : std::nullopt;
}

std::optional<int64_t> to_time_ns(const Scalar& s) {
  const std::string_view text = trim(s.text);
  if (text.empty()) return std::nullopt;
  if (const std::optional<int64_t> ns = parse_decimal_us_as_ns(text)) return ns;
  const std::optional<double> us = parse_double(text);
  return us ? round_to_int64(*us * 1000.0) : std::nullopt;
}

uint64_t to_count(const Scalar& s) {
  const std::optional<int64_t> v = to_int(s);
  return v && *v > 0 ? static_cast<uint64_t>(*v) : 0;
}

// A host thread id. Non-numeric tids ("PyTorch Profiler (0)") still name one thread consistently;
// 0 stays reserved for "unknown".
uint32_t thread_of(const Scalar& tid) {
  if (tid.text.empty()) return 0;
  if (const std::optional<int64_t> v = to_int(tid)) return static_cast<uint32_t>(*v);
  const uint32_t h = stable_hash(tid.text);
  return h != 0 ? h : 1;
}

// Old Kineto wrote GPU records with "tid": "stream 7": take the trailing number.
std::optional<int64_t> trailing_integer(std::string_view text) {
  text = trim(text);
  size_t digits_at = text.size();
  while (digits_at > 0 && is_digit(text[digits_at - 1])) --digits_at;
  if (digits_at == text.size()) return std::nullopt;
  return parse_integer(text.substr(digits_at));
}

}  // namespace stepwatch::import_detail
