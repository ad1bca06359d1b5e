#include "import/trace_scanner.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define STEPWATCH_SCANNER_AVX2 1
#endif

namespace stepwatch::import_detail {
namespace {

// What a byte means outside strings; everything else (digits, letters, whitespace) is kPlain.
enum ByteClass : uint8_t { kPlain, kQuote, kOpen, kClose, kComma };

constexpr std::array<uint8_t, 256> make_classes() {
  std::array<uint8_t, 256> t{};
  t['"'] = kQuote;
  t['{'] = kOpen;
  t['['] = kOpen;
  t['}'] = kClose;
  t[']'] = kClose;
  t[','] = kComma;
  return t;
}
constexpr std::array<uint8_t, 256> kClasses = make_classes();

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The next '"' or '\\' in data[i, to), else `to`. Strings are most of a trace's bytes (names,
// keys), so this is the loop that sets the scanner's speed: 16 bytes per step where SSE2 exists.
size_t find_quote_or_backslash(const char* data, size_t i, size_t to) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; i + 16 <= to; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  for (; i < to; ++i) {
    if (data[i] == '"' || data[i] == '\\') return i;
  }
  return to;
}

TopKey top_key_of(std::string_view key) {
  if (key == "traceEvents") return TopKey::kTraceEvents;
  if (key == "distributedInfo") return TopKey::kDistributedInfo;
  if (key == "deviceProperties") return TopKey::kDeviceProperties;
  if (key == "baseTimeNanoseconds") return TopKey::kBaseTime;
  if (key == "stepwatchGpuTraced") return TopKey::kGpuTraced;
  return TopKey::kOther;
}

std::string describe_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  char buf[16];
  if (u >= 0x21 && u < 0x7f) {
    std::snprintf(buf, sizeof buf, "'%c'", c);
  } else {
    std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
  }
  return buf;
}

}  // namespace

TraceScanner::Result TraceScanner::fail(size_t at, std::string why) {
  state_ = State::kFailed;
  error_ = std::move(why);
  return Result{Stop::kError, at, at};
}

bool TraceScanner::push(char open) {
  if (depth_ >= kMaxDepth) return false;
  const uint64_t bit = uint64_t{1} << (depth_ % 64);
  if (open == '{') {
    object_bits_[depth_ / 64] |= bit;
  } else {
    object_bits_[depth_ / 64] &= ~bit;
  }
  ++depth_;
  return true;
}

bool TraceScanner::pop(char close) {
  --depth_;
  const bool was_object = (object_bits_[depth_ / 64] >> (depth_ % 64)) & 1;
  return was_object == (close == '}');
}

// One structural byte outside strings, at `at`: true when walk() must stop there (a byte at depth 0
// that ends the value or event, or bad nesting, which sets walk_failed_).
bool TraceScanner::structural(char c, size_t at, bool events) {
  switch (kClasses[static_cast<unsigned char>(c)]) {
    case kOpen:
      if (push(c)) return false;
      walk_failed_ = true;
      error_ = "malformed JSON: nesting deeper than 1024 levels";
      return true;
    case kClose:
      if (depth_ == 0) return true;
      if (pop(c)) return false;
      walk_failed_ = true;
      error_ = "malformed JSON: " + describe_byte(c) + " closes a bracket of the other kind";
      return true;
    default:  // kComma
      if (depth_ != 0) return false;
      if (!events || report_separator_ || at - event_start_ > max_event_bytes_) return true;  // scan() decides
      last_separator_ = at;
      event_start_ = at + 1;
      return false;
  }
}

#if defined(__SSE2__)
namespace scanner_kernels {

BlockMasks sse2(const char* p) {
  // '{' '[' are 0x7B 0x5B, '}' ']' are 0x7D 0x5D: with bit 5 set, two compares find all four.
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i comma = _mm_set1_epi8(',');
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  const __m128i bit5 = _mm_set1_epi8(0x20);
  BlockMasks m;
  for (int k = 0; k < 4; ++k) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i lower = _mm_or_si128(x, bit5);
    const __m128i brackets = _mm_or_si128(_mm_cmpeq_epi8(lower, open), _mm_cmpeq_epi8(lower, close));
    const auto bits = [k](__m128i v) {
      return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(v))) << (16 * k);
    };
    m.quotes |= bits(_mm_cmpeq_epi8(x, quote));
    m.backslashes |= bits(_mm_cmpeq_epi8(x, backslash));
    m.brackets |= bits(brackets);
    m.commas |= bits(_mm_cmpeq_epi8(x, comma));
  }
  return m;
}

#if defined(STEPWATCH_SCANNER_AVX2)
__attribute__((target("avx2"))) static uint64_t bits(__m256i lo, __m256i hi) {
  return static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(lo))) |
         static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(hi))) << 32;
}

// The same with 32-byte compares: half the instructions, on the CPUs that have AVX2 (chosen at
// run time: the build targets plain x86-64).
__attribute__((target("avx2"))) BlockMasks avx2(const char* p) {
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i comma = _mm256_set1_epi8(',');
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  const __m256i bit5 = _mm256_set1_epi8(0x20);
  const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  const __m256i l0 = _mm256_or_si256(x0, bit5);
  const __m256i l1 = _mm256_or_si256(x1, bit5);
  BlockMasks m;
  m.quotes = bits(_mm256_cmpeq_epi8(x0, quote), _mm256_cmpeq_epi8(x1, quote));
  m.backslashes = bits(_mm256_cmpeq_epi8(x0, backslash), _mm256_cmpeq_epi8(x1, backslash));
  m.brackets = bits(_mm256_or_si256(_mm256_cmpeq_epi8(l0, open), _mm256_cmpeq_epi8(l0, close)),
                    _mm256_or_si256(_mm256_cmpeq_epi8(l1, open), _mm256_cmpeq_epi8(l1, close)));
  m.commas = bits(_mm256_cmpeq_epi8(x0, comma), _mm256_cmpeq_epi8(x1, comma));
  return m;
}

bool avx2_available() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#else
BlockMasks avx2(const char* p) { return sse2(p); }
bool avx2_available() { return false; }
#endif

}  // namespace scanner_kernels

namespace {

using scanner_kernels::BlockMasks;

BlockMasks block_masks(const char* p) {
  static const auto kernel = scanner_kernels::avx2_available() ? scanner_kernels::avx2 : scanner_kernels::sse2;
  return kernel(p);
}

// Bit i set when an odd number of bits at or below i are set in `x`: with x the quotes of a block,
// the bytes inside strings (opening quote included, closing quote not).
uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// The bits from `begin` (inclusive) to `end` (exclusive), 0 <= begin <= end <= 64.
uint64_t bit_range(unsigned begin, unsigned end) {
  const uint64_t below_end = end >= 64 ? ~uint64_t{0} : (uint64_t{1} << end) - 1;
  const uint64_t below_begin = begin >= 64 ? ~uint64_t{0} : (uint64_t{1} << begin) - 1;
  return below_end & ~below_begin;
}

}  // namespace

// 64 bytes at once, as simdjson's first stage does: masks of quotes and structural bytes, the
// in-string mask by prefix XOR of the quotes, then only the structural bytes outside strings are
// visited. A block holding a backslash returns false untouched: escapes take the byte loop.
// Returns true when the block was consumed, with `stop` = 64 unless it stopped at a byte.
bool TraceScanner::walk_block(const char* p, bool events, size_t base, size_t& stop) {
  const BlockMasks m = block_masks(p);
  if (m.backslashes != 0) return false;
  const uint64_t inside = prefix_xor(m.quotes) ^ (in_string_ ? ~uint64_t{0} : 0);
  const uint64_t commas = m.commas & ~inside;
  // Between two brackets the depth does not change, and commas matter only at depth 0 (most are
  // inside events): visit the brackets, and the commas of the stretches that lie at depth 0.
  const auto stops_at_comma = [&](unsigned from, unsigned to_bit) {
    if (depth_ != 0) return false;
    for (uint64_t c = commas & bit_range(from, to_bit); c != 0; c &= c - 1) {
      const auto b = static_cast<unsigned>(__builtin_ctzll(c));
      if (structural(',', base + b, events)) {
        stop = b;
        return true;
      }
    }
    return false;
  };
  unsigned from = 0;
  bool stopped = false;
  for (uint64_t brackets = m.brackets & ~inside; brackets != 0 && !stopped; brackets &= brackets - 1) {
    const auto b = static_cast<unsigned>(__builtin_ctzll(brackets));
    stopped = stops_at_comma(from, b);
    if (!stopped && structural(p[b], base + b, events)) {
      stop = b;
      stopped = true;
    }
    from = b + 1;
  }
  if (stopped || stops_at_comma(from, 64)) {
    in_string_ = false;  // a structural byte is outside any string
    return true;
  }
  in_string_ = (inside >> 63) != 0;
  stop = 64;
  return true;
}
#endif

// Nested content: strings and brackets, until a byte at depth 0 that ends the value or event
// (',' or a closing bracket), whose index it returns; `to` when the piece ends first. Commas
// between events are noted on the way. Sets walk_failed_ (and error_) on bad nesting.
size_t TraceScanner::walk(const char* data, size_t i, size_t to) {
  const bool events = state_ == State::kEvents;
  for (;;) {
#if defined(__SSE2__)
    size_t stop = 0;
    if (!escape_ && i + 64 <= to && walk_block(data + i, events, i, stop)) {
      if (stop < 64) return i + stop;
      i += 64;
      continue;
    }
#endif
    // A byte at a time up to the next block (or the end): escapes, and the piece's tail.
    const size_t limit = std::min(to, i + 64);
    while (i < limit) {
      if (in_string_) {
        if (escape_) {
          ++i;
          escape_ = false;
          continue;
        }
        i = find_quote_or_backslash(data, i, limit);
        if (i == limit) break;
        if (data[i] == '\\') escape_ = true;
        else in_string_ = false;
        ++i;
        continue;
      }
      const char c = data[i];
      const uint8_t cls = kClasses[static_cast<unsigned char>(c)];
      if (cls == kQuote) {
        in_string_ = true;
      } else if (cls != kPlain && structural(c, i, events)) {
        return i;
      }
      ++i;
    }
    if (i >= to) return to;
  }
}

// A top-level key's characters up to its closing quote (kept raw, as simdjson's key comparison
// did: keys are compared before unescaping). Returns the index past the quote and sets `closed`,
// or returns `to` when the piece ends inside the key.
size_t TraceScanner::scan_key(const char* data, size_t i, size_t to, bool& closed) {
  closed = false;
  for (;;) {
    if (escape_) {
      if (i == to) return to;
      if (key_text_.size() < 32) key_text_ += data[i];
      ++i;
      escape_ = false;
    }
    const size_t at = find_quote_or_backslash(data, i, to);
    const size_t take = at - i;
    if (key_text_.size() + take <= 32) {
      key_text_.append(data + i, take);
    } else {
      key_too_long_ = true;
    }
    if (at == to) return to;
    if (data[at] == '\\') {
      if (key_text_.size() < 32) key_text_ += '\\';
      escape_ = true;
      i = at + 1;
      continue;
    }
    closed = true;
    return at + 1;
  }
}

TraceScanner::Result TraceScanner::scan(const char* data, size_t from, size_t to) {
  size_t i = from;
  while (i < to) {
    if (state_ == State::kEvents || state_ == State::kInValue) {
      const size_t at = walk(data, i, to);
      if (walk_failed_) return fail(at, error_);
      if (at == to) return Result{Stop::kEnd, to, to};
      const char c = data[at];
      if (state_ == State::kEvents) {
        if (c != ',' && c != ']') return fail(at, "malformed JSON: " + describe_byte(c) + " inside the events array");
        const size_t begin = event_start_;
        const bool oversized = !report_separator_ && at - begin > max_event_bytes_;
        if (c == ',') {
          event_start_ = at + 1;
          if (report_separator_) return Result{Stop::kSeparator, at, at + 1};
          return Result{Stop::kOversized, begin, at + 1, at};
        }
        if (oversized) {
          event_start_ = at;  // the ']' is scanned again, as the events' end
          return Result{Stop::kOversized, begin, at, at};
        }
        state_ = root_is_array_ ? State::kAfterRoot : State::kAfterValue;
        return Result{Stop::kEventsEnd, at, at + 1};
      }
      if (c == ']') return fail(at, "malformed JSON: ']' closes the top-level object");
      state_ = State::kAfterValue;
      if (key_ != TopKey::kOther) return Result{Stop::kValueEnd, at, at};
      i = at;
      continue;
    }
    const Result r = scan_grammar(data, i, to);
    if (r.stop != Stop::kEnd || r.next >= to) return r;
    i = r.next;
  }
  return Result{Stop::kEnd, to, to};
}

// The top level: the root's opening, member keys, ':' and ',' between members, what follows the
// root. Returns kEnd with `next` where nested content (a value, the events) begins.
TraceScanner::Result TraceScanner::scan_grammar(const char* data, size_t i, size_t to) {
  while (i < to) {
    if (state_ == State::kInKey) {
      bool closed = false;
      i = scan_key(data, i, to, closed);
      if (!closed) return Result{Stop::kEnd, to, to};
      state_ = State::kAfterKey;
      key_ = key_too_long_ ? TopKey::kOther : top_key_of(key_text_);
      continue;
    }
    const char c = data[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    switch (state_) {
      case State::kBeforeRoot:
        if (c == '{') {
          state_ = State::kBeforeKey;
        } else if (c == '[') {
          root_is_array_ = true;
          state_ = State::kEvents;
          event_start_ = i + 1;
          return Result{Stop::kEventsBegin, i + 1, i + 1};
        } else {
          return fail(i, "not a JSON trace: the text starts with " + describe_byte(c) +
                             " (a Kineto trace starts with '{' or '[')");
        }
        break;
      case State::kBeforeKey:
      case State::kBeforeNextKey:
        if (c == '}' && state_ == State::kBeforeKey) {
          state_ = State::kAfterRoot;
        } else if (c == '"') {
          state_ = State::kInKey;
          key_text_.clear();
          key_too_long_ = false;
        } else {
          return fail(i, "malformed JSON: " + describe_byte(c) + " where a member name belongs");
        }
        break;
      case State::kAfterKey:
        if (c != ':') return fail(i, "malformed JSON: " + describe_byte(c) + " where ':' belongs");
        state_ = State::kBeforeValue;
        break;
      case State::kBeforeValue:
        if (c == ',' || c == '}' || c == ']' || c == ':') {
          return fail(i, "malformed JSON: " + describe_byte(c) + " where a value belongs");
        }
        if (key_ == TopKey::kTraceEvents && c == '[') {
          state_ = State::kEvents;
          event_start_ = i + 1;
          return Result{Stop::kEventsBegin, i + 1, i + 1};
        }
        state_ = State::kInValue;
        if (key_ == TopKey::kTraceEvents) key_ = TopKey::kOther;  // not an array: not the events
        if (key_ != TopKey::kOther) return Result{Stop::kValueBegin, i, i};
        return Result{Stop::kEnd, i, i};
      case State::kAfterValue:
        if (c == ',') {
          state_ = State::kBeforeNextKey;
        } else if (c == '}') {
          state_ = State::kAfterRoot;
        } else {
          return fail(i, "malformed JSON: " + describe_byte(c) + " after a member (',' or '}' expected)");
        }
        break;
      case State::kAfterRoot:
        return fail(i, "malformed JSON: content after the document");
      default:
        return fail(i, error_.empty() ? "malformed JSON" : error_);
    }
    ++i;
  }
  return Result{Stop::kEnd, to, to};
}

std::string TraceScanner::finish() const {
  switch (state_) {
    case State::kAfterRoot: return {};
    case State::kBeforeRoot: return "not a JSON trace: no text (empty or only whitespace)";
    case State::kFailed: return error_;
    case State::kEvents: return "malformed JSON: the text ends inside the events array (truncated?)";
    default: return "malformed JSON: the text ends before the document does (truncated?)";
  }
}

}  // namespace stepwatch::import_detail
