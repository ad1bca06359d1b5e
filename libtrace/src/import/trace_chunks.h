// A Kineto trace's text cut into chunks that simdjson can parse one at a time, read ahead on a
// thread of its own. Private to libtrace/src/import.
//
// The reader fills a chunk with text (inflating as it goes), the TraceScanner finds where events
// and the header members end, and the chunk leaves with a list of pieces: runs of whole events,
// and the values of the top-level members the importer reads. What is still open at the chunk's
// end (one event at most) is carried into the next chunk, so the text is never held whole and a
// chunk stays about kChunkBytes: memory is a few chunks, whatever the input's size.
//
// Each piece is framed as a JSON array in place: the byte before it and the byte after it are
// separators (a ',', the array's '[' or ']', a member's ':' and ',') that belong to no piece, and
// become '[' and ']' (the chunk's byte 0 is reserved for a '[' in front of carried text). So a run
// of events is parsed as one small document, `[{...},{...}]`, and the copy that framing would
// otherwise cost is never made.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "import/text_source.h"
#include "import/trace_scanner.h"

namespace stepwatch::import_detail {

struct TextPiece {
  enum class Kind : uint8_t { kEvents, kMember };
  Kind kind = Kind::kEvents;
  TopKey key = TopKey::kOther;  // kMember: which member
  size_t begin = 0;             // data[begin - 1] == '[', data[end] == ']'
  size_t end = 0;
};

// What a consumer makes of a chunk on the reader thread besides its text and pieces (the Kineto
// importer: its parsed records), kept with the chunk and reused with it.
struct ChunkWork {
  virtual ~ChunkWork() = default;
};

struct TextChunk {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;  // usable bytes; the allocation has padding for simdjson past it
  size_t size = 0;
  // Text offset of data[0], which is the reserved '[' and stands for no text byte: offset + 1 is
  // the offset of data[1] (for the first chunk, offset is -1 in unsigned arithmetic).
  uint64_t offset = 0;
  std::vector<TextPiece> pieces;
  uint64_t events_skipped_too_large = 0;  // events longer than the record cap, left out
  uint64_t members_skipped_too_large = 0;
  uint64_t expected_text_bytes = 0;  // the source's guess when the chunk was made (0: unknown)
  bool events_array_seen = false;    // an events array opened in this chunk (it may be empty)
  bool last = false;
  std::unique_ptr<ChunkWork> work;  // the `prepare` step's, if any (ChunkPipeline)
};

class ChunkProducer {
 public:
  // Bytes of padding past a chunk's capacity: simdjson reads up to 64 bytes past a document.
  static constexpr size_t kPaddingBytes = 64;
  // 256 KiB: the chunks in flight, their simdjson indexes and records stay within the two cores'
  // L2 and touch half the pages 512 KiB did; 3-7% faster on every corpus trace above 10 MB
  // (interleaved runs; 128 KiB no better).
  static constexpr size_t kChunkBytes = 256u << 10;

  // `chunk_bytes`: the text a chunk takes (tests cut the text at every offset with tiny ones).
  ChunkProducer(TextSource& source, std::string name, size_t max_record_bytes, size_t chunk_bytes = kChunkBytes);
  // Fills `chunk` with the next text and its pieces. Throws ImportError (with the text offset)
  // on malformed structure, truncation, and whatever the source throws.
  void produce(TextChunk& chunk);
  bool done() const { return done_; }

 private:
  void fill(TextChunk& chunk, size_t until);
  void scan(TextChunk& chunk, size_t from);
  void push_events(TextChunk& chunk, size_t begin, size_t end, bool array_ends);
  void close_chunk(TextChunk& chunk);
  [[noreturn]] void fail(uint64_t offset, const std::string& why) const;

  static constexpr size_t kClosed = static_cast<size_t>(-1);
  TextSource& source_;
  std::string name_;
  size_t max_record_bytes_;
  size_t chunk_bytes_;
  TraceScanner scanner_;
  std::vector<char> carry_;     // the open piece's text so far, for the next chunk
  bool carry_open_ = false;     // a piece is open (its text, possibly empty, is carry_)
  size_t open_ = kClosed;       // in the chunk being produced: where the open piece starts
  bool open_is_events_ = false;  // the open piece is a run of events, else a member's value
  bool skipping_ = false;        // the open event or member is over the record cap: not kept
  bool events_separated_ = false;  // a comma was seen in the current events array
  uint64_t text_offset_ = 0;     // text bytes read so far
  bool done_ = false;
};

// Runs a producer `ahead` chunks in front of the consumer on its own thread (or inline, for
// in-memory text, where there is no reading to overlap). The consumer takes chunks in order.
// `prepare`, when given, runs on each chunk right after it is produced, on the same thread: work
// that needs only the chunk moves off the consumer's thread. Its flag says whether the consumer
// has chunks waiting (it is behind: the reader may take on more). What it throws is rethrown by
// next() in order, like the producer's errors.
class ChunkPipeline {
 public:
  using Prepare = std::function<void(TextChunk&, bool consumer_behind)>;
  ChunkPipeline(ChunkProducer& producer, InputFile* input, bool threaded, Prepare prepare = {});
  ~ChunkPipeline();
  ChunkPipeline(const ChunkPipeline&) = delete;
  ChunkPipeline& operator=(const ChunkPipeline&) = delete;

  // The next chunk, nullptr after the last. Rethrows what the producer threw, in order.
  TextChunk* next();
  // Hands a chunk back for reuse once its pieces are parsed.
  void release(TextChunk* chunk);

 private:
  void run();

  ChunkProducer& producer_;
  InputFile* input_;
  bool threaded_;
  Prepare prepare_;
  static constexpr size_t kChunksInFlight = 4;
  std::vector<std::unique_ptr<TextChunk>> chunks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<TextChunk*> free_;
  std::vector<TextChunk*> ready_;  // FIFO: front is next
  size_t ready_front_ = 0;
  std::exception_ptr error_;
  bool finished_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stepwatch::import_detail
