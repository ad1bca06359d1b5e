// The Kineto importer's driver: text in chunks (trace_chunks.h) through simdjson, one run of
// events at a time, into the trace.
//
// Memory: the events themselves (64 bytes each, event_collector.h), their names once each, and a few
// chunks of text (ChunkProducer::kChunkBytes each): the text is never held whole, so there is no
// size cap but the configurable ImportLimits. Time: one pass; the reader thread inflates, scans
// and indexes (simdjson's stage 1) while this thread walks the events and makes Events of them.
#include "stepwatch/import/kineto_importer.h"

#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "import/event_collector.h"
#include "import/input_file.h"
#include "import/kineto_records.h"
#include "import/text_source.h"
#include "import/trace_chunks.h"

namespace stepwatch {

ImportError::ImportError(const std::string& file, const std::string& reason, int64_t offset)
    : std::runtime_error(file + ": " + reason + (offset >= 0 ? " (at byte " + std::to_string(offset) + ")" : "")),
      file_(file),
      offset_(offset) {}

namespace import_detail {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

static_assert(ChunkProducer::kPaddingBytes >= simdjson::SIMDJSON_PADDING, "chunks must be parseable in place");

error_code read_distributed_info(od::value& v, Trace& trace) {
  od::json_type type{};
  SW_JSON_TRY(v.type().get(type));
  if (type != od::json_type::object) return simdjson::SUCCESS;
  od::object info;
  SW_JSON_TRY(v.get_object().get(info));
  for (auto field_result : info) {
    od::field field;
    SW_JSON_TRY(std::move(field_result).get(field));
    if (field.key() != "rank") continue;
    Scalar rank;
    SW_JSON_TRY(read_scalar(field.value(), rank));
    const std::optional<int64_t> r = to_int(rank);
    if (r && *r >= 0 && *r <= std::numeric_limits<int>::max()) trace.rank = static_cast<int>(*r);
  }
  return simdjson::SUCCESS;
}

// The first device's name; a multi-GPU trace lists every visible device, the first is enough to
// say what the trace ran on.
error_code read_device_properties(od::value& v, Trace& trace) {
  od::json_type type{};
  SW_JSON_TRY(v.type().get(type));
  if (type != od::json_type::array) return simdjson::SUCCESS;
  od::array devices;
  SW_JSON_TRY(v.get_array().get(devices));
  for (auto element : devices) {
    od::value device;
    SW_JSON_TRY(std::move(element).get(device));
    SW_JSON_TRY(device.type().get(type));
    if (type != od::json_type::object) break;
    od::object properties;
    SW_JSON_TRY(device.get_object().get(properties));
    for (auto field_result : properties) {
      od::field field;
      SW_JSON_TRY(std::move(field_result).get(field));
      if (field.key() != "name") continue;
      std::string_view name;
      SW_JSON_TRY(read_string(field.value(), name));
      trace.device_name = std::string(name);
    }
    break;
  }
  return simdjson::SUCCESS;
}

error_code read_member(TopKey key, od::value& v, Trace& trace) {
  switch (key) {
    case TopKey::kDistributedInfo: return read_distributed_info(v, trace);
    case TopKey::kDeviceProperties: return read_device_properties(v, trace);
    case TopKey::kBaseTime: {
      Scalar base;
      SW_JSON_TRY(read_scalar(v, base));
      trace.clock_base_ns = to_int(base).value_or(0);
      return simdjson::SUCCESS;
    }
    case TopKey::kGpuTraced: {
      // stepwatch's own dumps: the GPU was traced even where a step has no record.
      Scalar traced;
      SW_JSON_TRY(read_scalar(v, traced));
      trace.gpu_traced = to_int(traced).value_or(0) != 0;
      return simdjson::SUCCESS;
    }
    default: return simdjson::SUCCESS;
  }
}

// Where simdjson stood when a piece failed, as an index into the chunk; at stage 1 (bad UTF-8, an
// unclosed string) it has no location, and the piece's start is the best answer.
size_t failure_index(const TextChunk& chunk, const TextPiece& piece, od::document& doc, bool iterating) {
  const char* at = nullptr;
  if (iterating && doc.current_location().get(at) == simdjson::SUCCESS && at >= chunk.data.get() &&
      at <= chunk.data.get() + piece.end) {
    return static_cast<size_t>(at - chunk.data.get());
  }
  return piece.begin;
}

// simdjson's stage 1 over a piece, which is framed as a JSON array in place (trace_chunks.h).
error_code index_piece(const TextChunk& chunk, const TextPiece& piece, od::parser& parser, od::document& doc) {
  const char* framed = chunk.data.get() + piece.begin - 1;
  const size_t room = chunk.capacity + ChunkProducer::kPaddingBytes - (piece.begin - 1);
  return parser.iterate(simdjson::padded_string_view(framed, piece.end - piece.begin + 2, room)).get(doc);
}

// Runs `visit` on each element of an indexed piece; on failure, `error_index` says where.
template <typename Visit>
error_code walk_piece(const TextChunk& chunk, const TextPiece& piece, od::document& doc, size_t& error_index,
                      Visit&& visit) {
  auto walk = [&]() -> error_code {
    od::array elements;
    SW_JSON_TRY(doc.get_array().get(elements));
    for (auto element : elements) {
      od::value v;
      SW_JSON_TRY(std::move(element).get(v));
      SW_JSON_TRY(visit(v));
    }
    return simdjson::SUCCESS;
  };
  const error_code err = walk();
  if (err != simdjson::SUCCESS) error_index = failure_index(chunk, piece, doc, true);
  return err;
}

// A chunk's event pieces prepared on the reader thread right after its text is made: always
// indexed (simdjson's stage 1), and walked into records too when this thread has chunks waiting
// (it is the slower one: walking is most of the parse). Either way this thread adds the records in
// file order, so the import's result does not depend on which thread walked.
struct PreparedPieces final : ChunkWork {
  // One parser per events piece (almost always one a chunk): its document and the records' strings
  // stay valid until the chunk is reused; its buffers are kept from chunk to chunk.
  std::vector<std::unique_ptr<od::parser>> parsers;
  std::vector<od::document> docs;
  std::vector<error_code> stage1;  // per events piece: stage 1's result
  // Walked: every events piece's records (of a category we import), and the first failure.
  bool walked = false;
  std::vector<KinetoRecord> records;
  std::vector<size_t> ends;  // per events piece: where its records end
  error_code walk_error = simdjson::SUCCESS;
  size_t walk_error_index = 0;  // in the failing piece: the last one `ends` holds
};

void walk_chunk(const TextChunk& chunk, PreparedPieces& work) {
  work.walked = true;
  work.records.clear();
  work.ends.clear();
  work.walk_error = simdjson::SUCCESS;
  size_t k = 0;
  for (const TextPiece& piece : chunk.pieces) {
    if (piece.kind != TextPiece::Kind::kEvents) continue;
    error_code err = work.stage1[k];
    size_t error_index = piece.begin;
    if (err == simdjson::SUCCESS) {
      err = walk_piece(chunk, piece, work.docs[k], error_index, [&](od::value& v) {
        KinetoRecord& r = work.records.emplace_back();
        const error_code read = read_event(v, r);
        // Records of no category we import are not kept (add_record would ignore them).
        if (read != simdjson::SUCCESS || r.category == Category::kUnknown || r.category == Category::kIgnored) {
          work.records.pop_back();
        }
        return read;
      });
    }
    work.ends.push_back(work.records.size());
    if (err != simdjson::SUCCESS) {
      work.walk_error = err;
      work.walk_error_index = error_index;
      return;
    }
    ++k;
  }
}

void prepare_chunk(TextChunk& chunk, bool consumer_behind) {
  if (!chunk.work) chunk.work = std::make_unique<PreparedPieces>();
  auto& work = static_cast<PreparedPieces&>(*chunk.work);
  size_t used = 0;
  for (const TextPiece& piece : chunk.pieces) {
    if (piece.kind != TextPiece::Kind::kEvents) continue;
    if (used == work.parsers.size()) {
      work.parsers.push_back(std::make_unique<od::parser>());
      work.docs.emplace_back();
      work.stage1.emplace_back();
    }
    work.stage1[used] = index_piece(chunk, piece, *work.parsers[used], work.docs[used]);
    ++used;
  }
  work.walked = false;
  if (consumer_behind) walk_chunk(chunk, work);
}

// Turns each chunk's events into Events and reads the top-level members, in file order.
class ChunkParser {
 public:
  ChunkParser(Trace& trace, const std::string& name) : trace_(trace), name_(name), context_(trace, events_) {}

  void parse(const TextChunk& chunk) {
    saw_events_ = saw_events_ || chunk.events_array_seen;
    auto& work = static_cast<PreparedPieces&>(*chunk.work);
    size_t k = 0;      // events pieces so far
    size_t next = 0;   // walked records added so far
    for (const TextPiece& piece : chunk.pieces) {
      events_.note_text(chunk.offset + piece.end, chunk.expected_text_bytes);
      size_t error_index = piece.begin;
      error_code err = simdjson::SUCCESS;
      if (piece.kind == TextPiece::Kind::kEvents && work.walked) {
        for (; next < work.ends[k]; ++next) add_record(context_, work.records[next]);
        if (work.walk_error != simdjson::SUCCESS && k + 1 == work.ends.size()) {
          fail(chunk, work.walk_error, work.walk_error_index);
        }
        ++k;
        continue;
      }
      if (piece.kind == TextPiece::Kind::kEvents) {
        err = work.stage1[k];
        if (err == simdjson::SUCCESS) {
          err = walk_piece(chunk, piece, work.docs[k], error_index, [&](od::value& v) {
            SW_JSON_TRY(read_event(v, record_));
            add_record(context_, record_);
            return simdjson::SUCCESS;
          });
        }
        ++k;
      } else {
        od::document doc;
        err = index_piece(chunk, piece, parser_, doc);
        if (err == simdjson::SUCCESS) {
          err = walk_piece(chunk, piece, doc, error_index,
                           [&](od::value& v) { return read_member(piece.key, v, trace_); });
        }
      }
      if (err != simdjson::SUCCESS) fail(chunk, err, error_index);
    }
    if (chunk.events_skipped_too_large > 0) trace_.skip("event_too_large", chunk.events_skipped_too_large);
    if (chunk.members_skipped_too_large > 0) trace_.skip("header_member_too_large", chunk.members_skipped_too_large);
  }

  bool saw_events() const { return saw_events_; }
  std::vector<Event> take_events() { return events_.take(); }

 private:
  [[noreturn]] void fail(const TextChunk& chunk, error_code err, size_t index) {
    throw ImportError(name_, std::string("malformed JSON: ") + simdjson::error_message(err),
                      static_cast<int64_t>(chunk.offset + index));
  }

  Trace& trace_;
  const std::string& name_;
  EventCollector events_;
  EventContext context_;
  KinetoRecord record_;
  od::parser parser_;  // the top-level members'
  bool saw_events_ = false;
};

Trace import_text(TextSource& text, InputFile* input, const std::string& name, const ImportLimits& limits,
                  size_t chunk_bytes = ChunkProducer::kChunkBytes) {
  Trace trace;
  trace.source = name;
  trace.format = "kineto";
  ChunkProducer producer(text, name, limits.max_record_bytes, chunk_bytes);
  ChunkParser parser(trace, name);
  {
    // A file is read (and inflated, scanned and indexed) on its own thread while this one
    // parses; text already in memory has nothing to overlap.
    ChunkPipeline pipeline(producer, input, input != nullptr, prepare_chunk);
    while (TextChunk* chunk = pipeline.next()) {
      parser.parse(*chunk);
      pipeline.release(chunk);
    }
  }
  if (!parser.saw_events()) {
    throw ImportError(name, "not a Kineto trace: neither a traceEvents array nor a top-level array");
  }
  trace.events = parser.take_events();
  return trace;
}

}  // namespace

Trace import_kineto_input(InputFile& input, const ImportLimits& limits) {
  const std::unique_ptr<TextSource> text = open_text(input, limits.max_text_bytes);
  return import_text(*text, &input, input.name(), limits);
}

Trace import_kineto_json_in_chunks(std::string_view json, const std::string& source, size_t chunk_bytes) {
  const std::unique_ptr<TextSource> text = memory_text(json, source, ImportLimits{}.max_text_bytes);
  return import_text(*text, nullptr, source, ImportLimits{}, chunk_bytes);
}

}  // namespace import_detail

std::string read_file_maybe_gzip(const std::string& path, const ImportLimits& limits) {
  import_detail::InputFile input(path);
  const std::unique_ptr<import_detail::TextSource> text = import_detail::open_text(input, limits.max_text_bytes);
  std::string out;
  constexpr size_t kStep = 1u << 20;
  for (;;) {
    const size_t had = out.size();
    out.resize(had + kStep);
    const size_t got = text->read(out.data() + had, kStep);
    out.resize(had + got);
    if (got == 0) return out;
  }
}

Trace import_kineto_json(std::string_view json, const std::string& source, const ImportLimits& limits) {
  const std::unique_ptr<import_detail::TextSource> text = import_detail::memory_text(json, source, limits.max_text_bytes);
  return import_detail::import_text(*text, nullptr, source, limits);
}

Trace import_kineto_file(const std::string& path, const ImportLimits& limits) {
  import_detail::InputFile input(path);
  return import_detail::import_kineto_input(input, limits);
}

}  // namespace stepwatch
