#include "import/trace_chunks.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "stepwatch/import/kineto_importer.h"  // ImportError

namespace stepwatch::import_detail {
namespace {

bool blank(const char* data, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    const char c = data[i];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

}  // namespace

ChunkProducer::ChunkProducer(TextSource& source, std::string name, size_t max_record_bytes, size_t chunk_bytes)
    : source_(source),
      name_(std::move(name)),
      max_record_bytes_(max_record_bytes),
      chunk_bytes_(chunk_bytes),
      scanner_(max_record_bytes) {}

void ChunkProducer::fail(uint64_t offset, const std::string& why) const {
  throw ImportError(name_, why, static_cast<int64_t>(offset));
}

void ChunkProducer::produce(TextChunk& c) {
  c.pieces.clear();
  c.events_skipped_too_large = 0;
  c.members_skipped_too_large = 0;
  c.events_array_seen = false;
  c.last = false;
  // Room for the carried text and at least as much new text again (an event longer than a chunk
  // grows the next one; a chunk grown once shrinks back when its event has passed). The allocation
  // grows geometrically, but a chunk carrying a long event is filled with one chunk_bytes_ of new
  // text only: the memory touched stays the event so far plus a chunk, per chunk in flight.
  const size_t want = std::max(chunk_bytes_, 2 * (1 + carry_.size()));
  if (c.capacity < want || c.capacity > 4 * want) {
    c.data.reset(new char[want + kPaddingBytes]);  // not zero-filled: every byte read is written first
    c.capacity = want;
  }
  c.data[0] = '[';
  if (!carry_.empty()) std::memcpy(c.data.get() + 1, carry_.data(), carry_.size());
  c.size = 1 + carry_.size();
  c.offset = text_offset_ - carry_.size() - 1;
  open_ = carry_open_ ? 1 : kClosed;
  // The carried text starts with the event in progress (close_chunk keeps events from there).
  if (carry_open_ && open_is_events_) scanner_.set_event_start(1);
  const size_t scan_from = c.size;
  fill(c, std::min(c.capacity, c.size + chunk_bytes_));
  text_offset_ += c.size - scan_from;
  c.expected_text_bytes = source_.expected_bytes();
  scan(c, scan_from);
  if (c.last) {
    const std::string problem = scanner_.finish();
    if (!problem.empty()) fail(text_offset_, problem);
    done_ = true;
  }
  close_chunk(c);
}

// Reads until the chunk holds `until` bytes or the text ends (pipes deliver in small reads).
void ChunkProducer::fill(TextChunk& c, size_t until) {
  while (c.size < until) {
    const size_t got = source_.read(c.data.get() + c.size, until - c.size);
    if (got == 0) {
      c.last = true;
      return;
    }
    c.size += got;
  }
}

void ChunkProducer::push_events(TextChunk& c, size_t begin, size_t end, bool array_ends) {
  if (blank(c.data.get(), begin, end)) {
    // "[]" is an empty trace; a blank run after a comma is a trailing or doubled comma.
    if (array_ends && !events_separated_) return;
    fail(c.offset + end, "malformed JSON: a comma with no event after it");
  }
  c.pieces.push_back(TextPiece{TextPiece::Kind::kEvents, TopKey::kOther, begin, end});
}

void ChunkProducer::scan(TextChunk& c, size_t from) {
  const char* data = c.data.get();
  size_t i = from;
  for (;;) {
    const TraceScanner::Result r = scanner_.scan(data, i, c.size);
    switch (r.stop) {
      case TraceScanner::Stop::kEnd:
        return;
      case TraceScanner::Stop::kError:
        fail(c.offset + r.at, scanner_.error());
      case TraceScanner::Stop::kEventsBegin:
        c.events_array_seen = true;
        open_ = r.at;
        open_is_events_ = true;
        events_separated_ = false;
        scanner_.clear_separator();
        break;
      case TraceScanner::Stop::kEventsEnd:
        if (skipping_) {
          skipping_ = false;
          scanner_.report_next_separator(false);
          ++c.events_skipped_too_large;
        } else if (open_ != kClosed) {
          push_events(c, open_, r.at, true);
        }
        open_ = kClosed;
        open_is_events_ = false;
        break;
      case TraceScanner::Stop::kOversized:
        // The events before it (up to the ',' in front of it) stay one piece; it is dropped.
        if (open_ != kClosed && r.at >= open_ + 1) push_events(c, open_, r.at - 1, false);
        ++c.events_skipped_too_large;
        events_separated_ = true;
        open_ = data[r.separator] == ']' ? kClosed : r.next;
        break;
      case TraceScanner::Stop::kSeparator:  // the end of an event that was not kept
        skipping_ = false;
        scanner_.report_next_separator(false);
        ++c.events_skipped_too_large;
        events_separated_ = true;
        open_ = r.at + 1;
        scanner_.clear_separator();
        break;
      case TraceScanner::Stop::kValueBegin:
        open_ = r.at;
        open_is_events_ = false;
        break;
      case TraceScanner::Stop::kValueEnd:
        if (skipping_ || r.at - open_ > max_record_bytes_) {
          skipping_ = false;
          ++c.members_skipped_too_large;
        } else {
          c.pieces.push_back(TextPiece{TextPiece::Kind::kMember, scanner_.key(), open_, r.at});
        }
        open_ = kClosed;
        break;
    }
    i = r.next;
  }
}

// What the chunk ends with: the whole events since the last piece, up to the last comma between
// events, become one piece; the rest of what is open travels to the next chunk, unless it is
// already longer than any record may be (then it is scanned to its end, but not kept).
void ChunkProducer::close_chunk(TextChunk& c) {
  char* data = c.data.get();
  if (open_ != kClosed && open_is_events_) {
    const size_t sep = scanner_.last_separator();
    if (sep != TraceScanner::kNone && sep >= open_) {
      push_events(c, open_, sep, false);
      events_separated_ = true;
      open_ = sep + 1;
    }
  }
  scanner_.clear_separator();
  carry_open_ = open_ != kClosed;
  carry_.assign(carry_open_ ? data + open_ : data, carry_open_ ? data + c.size : data);
  if (carry_.size() > max_record_bytes_) {
    skipping_ = true;
    if (open_is_events_) scanner_.report_next_separator(true);
    carry_.clear();
    carry_open_ = false;
  }
  // Frame every piece as an array, in place (see the header).
  for (const TextPiece& p : c.pieces) {
    data[p.begin - 1] = '[';
    data[p.end] = ']';
  }
}

// ---------------------------------------------------------------------------------------------

ChunkPipeline::ChunkPipeline(ChunkProducer& producer, InputFile* input, bool threaded, Prepare prepare)
    : producer_(producer), input_(input), threaded_(threaded), prepare_(std::move(prepare)) {
  const size_t n = threaded_ ? kChunksInFlight : 1;
  for (size_t i = 0; i < n; ++i) {
    chunks_.push_back(std::make_unique<TextChunk>());
    free_.push_back(chunks_.back().get());
  }
  if (threaded_) thread_ = std::thread([this] { run(); });
}

ChunkPipeline::~ChunkPipeline() {
  if (!threaded_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    // A reader waiting on a pipe whose writer went quiet would never see stop_: wake it.
    if (input_ != nullptr && !finished_) input_->cancel();
  }
  changed_.notify_all();
  thread_.join();
}

void ChunkPipeline::run() {
  try {
    for (;;) {
      TextChunk* chunk = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || !free_.empty(); });
        if (stop_) return;
        chunk = free_.back();
        free_.pop_back();
      }
      producer_.produce(*chunk);
      if (prepare_) {
        bool behind = false;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          behind = ready_front_ < ready_.size();
        }
        prepare_(*chunk, behind);
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.push_back(chunk);
        finished_ = chunk->last;
      }
      changed_.notify_all();
      if (chunk->last) return;
    }
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      finished_ = true;
    }
    changed_.notify_all();
  }
}

TextChunk* ChunkPipeline::next() {
  if (!threaded_) {
    if (producer_.done()) return nullptr;
    TextChunk* chunk = free_.front();
    producer_.produce(*chunk);
    if (prepare_) prepare_(*chunk, false);
    return chunk;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return ready_front_ < ready_.size() || finished_; });
  if (ready_front_ < ready_.size()) {
    TextChunk* chunk = ready_[ready_front_++];
    if (ready_front_ == ready_.size()) {
      ready_.clear();
      ready_front_ = 0;
    }
    return chunk;
  }
  if (error_) std::rethrow_exception(error_);
  return nullptr;
}

void ChunkPipeline::release(TextChunk* chunk) {
  if (!threaded_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(chunk);
  }
  changed_.notify_all();
}

}  // namespace stepwatch::import_detail
