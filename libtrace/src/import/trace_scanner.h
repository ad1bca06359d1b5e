// Where a Kineto trace's parts begin and end, found in one forward pass over text that arrives in
// pieces. Private to libtrace/src/import.
//
// Why a scanner of our own and not simdjson's document streams: `iterate_many` reads documents
// separated by whitespace (NDJSON); the events of a trace are the comma-separated elements of one
// array inside one object, and simdjson 3.0's streams cannot split those (the comma-separated mode
// of later versions needs the whole input in one batch, which is what must not happen: it holds
// the text, and simdjson's 4 GiB document limit would cap traces). Cutting the text at an element
// boundary needs only three facts per byte — inside a string or not, escaped or not, nesting
// depth — so this scanner tracks exactly those and leaves all JSON parsing and validation of what
// it cuts out to simdjson. It is correct for arbitrary JSON: braces, brackets and commas inside
// strings are string content (a quote preceded by an unescaped backslash does not end a string,
// and an escape split across two pieces is carried over), and bracket kinds are checked with a
// bounded stack (1,024 levels, simdjson's own default limit), so memory never grows with input.
//
// The document shapes it accepts: an object whose `traceEvents` member is the array of events
// (other top-level members are reported by key so that the few the importer reads can be cut out
// and parsed; the rest is skipped without being kept), or a bare array of events.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stepwatch::import_detail {

// The top-level members the importer reads.
enum class TopKey : uint8_t { kOther, kTraceEvents, kDistributedInfo, kDeviceProperties, kBaseTime, kGpuTraced };

class TraceScanner {
 public:
  enum class Stop : uint8_t {
    kEnd,          // everything given was scanned
    kEventsBegin,  // the events array opens: its first element may start at `at` (past the '[')
    kEventsEnd,    // `at` is the ']' that closes the events array
    kValueBegin,   // the value of a member the importer reads (key()) starts at `at`
    kValueEnd,     // ... and ends before `at` (the ',' or '}' after it, not yet consumed)
    kSeparator,    // only after report_next_separator(): `at` is the next comma between events
    kOversized,    // an event longer than the limit, seen whole in this piece: it starts at `at`
                   // (just past the ',' or '[' before it) and ends before `separator`
    kError,        // error() says why; `at` is where
  };
  struct Result {
    Stop stop = Stop::kEnd;
    size_t at = 0;         // an index into the piece, see Stop
    size_t next = 0;       // where to continue scanning this piece
    size_t separator = 0;  // kOversized: the ',' or ']' after the event
  };

  // Events whose text (from the byte after the ',' or '[' before them to the ',' or ']' after
  // them) is longer than this are reported as kOversized.
  explicit TraceScanner(size_t max_event_bytes = static_cast<size_t>(-1)) : max_event_bytes_(max_event_bytes) {}

  // Scans data[from, to), continuing the previous call's state: the pieces form one text.
  Result scan(const char* data, size_t from, size_t to);
  // After the last piece: empty when the document is complete, else why not.
  std::string finish() const;

  // The last comma between events seen in this piece since clear_separator(); kNone if none.
  static constexpr size_t kNone = static_cast<size_t>(-1);
  size_t last_separator() const { return last_separator_; }
  void clear_separator() { last_separator_ = kNone; }
  // Stop at the next comma between events (to resume after an event that was not kept).
  void report_next_separator(bool on) { report_separator_ = on; }
  // Where the current event starts in the current piece (the producer moves it when the text
  // before it is dropped and the rest carried into the next piece).
  void set_event_start(size_t at) { event_start_ = at; }

  TopKey key() const { return key_; }
  const std::string& error() const { return error_; }
  bool in_events() const { return state_ == State::kEvents; }
  bool root_is_array() const { return root_is_array_; }

 private:
  enum class State : uint8_t {
    kBeforeRoot,
    kBeforeKey,        // right after '{': a key or '}'
    kBeforeNextKey,    // after ',': a key
    kInKey,
    kAfterKey,         // ':'
    kBeforeValue,
    kInValue,          // a member's value (nested content)
    kAfterValue,       // ',' or '}'
    kEvents,           // inside the events array
    kAfterRoot,        // only whitespace may follow
    kFailed,
  };
  static constexpr size_t kMaxDepth = 1024;

  Result scan_grammar(const char* data, size_t i, size_t to);
  size_t walk(const char* data, size_t i, size_t to);
  bool walk_block(const char* block, bool events, size_t base, size_t& stop);
  bool structural(char c, size_t at, bool events);
  size_t scan_key(const char* data, size_t i, size_t to, bool& closed);
  Result fail(size_t at, std::string why);
  bool push(char open);
  bool pop(char close);

  State state_ = State::kBeforeRoot;
  bool root_is_array_ = false;
  bool in_string_ = false;
  bool escape_ = false;
  bool report_separator_ = false;
  bool walk_failed_ = false;
  size_t depth_ = 0;  // nesting inside the current value or event
  std::array<uint64_t, kMaxDepth / 64> object_bits_{};  // per level: 1 = '{', 0 = '['
  size_t last_separator_ = kNone;
  size_t max_event_bytes_;
  size_t event_start_ = 0;
  std::string key_text_;
  bool key_too_long_ = false;
  TopKey key_ = TopKey::kOther;
  std::string error_;
};

#if defined(__SSE2__)
// The scanner's 64-byte block step: one bit per byte of a block for the bytes it looks at. SSE2
// everywhere on x86-64; AVX2 where the CPU has it (chosen once at run time). Here for the test
// that holds the two to each other.
namespace scanner_kernels {
struct BlockMasks {
  uint64_t quotes = 0;
  uint64_t backslashes = 0;
  uint64_t brackets = 0;  // { } [ ]
  uint64_t commas = 0;
};
BlockMasks sse2(const char* block);
BlockMasks avx2(const char* block);  // only where avx2_available()
bool avx2_available();
}  // namespace scanner_kernels
#endif

}  // namespace stepwatch::import_detail
