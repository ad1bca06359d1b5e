// The Kineto importer's driver: text in chunks (trace_chunks.h) through simdjson, one run of
// events at a time, into the trace.
//
// Memory: the events themselves (64 bytes each, event_collector.h), their names once each, and a few
// chunks of text (ChunkProducer::kChunkBytes each): the text is never held whole, so there is no
// size cap but the configurable ImportLimits. Time: one pass; the reader thread inflates and
// scans while this thread parses.
#include "stepwatch/import/kineto_importer.h"

#include <simdjson.h>

#include <limits>
#include <optional>

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

// Parses the pieces of each chunk: a piece is framed as a JSON array in place (trace_chunks.h).
class ChunkParser {
 public:
  ChunkParser(Trace& trace, const std::string& name) : trace_(trace), name_(name), context_(trace, events_) {}

  void parse(const TextChunk& chunk) {
    saw_events_ = saw_events_ || chunk.events_array_seen;
    for (const TextPiece& piece : chunk.pieces) {
      events_.note_text(chunk.offset + piece.end, chunk.expected_text_bytes);
      if (const error_code err = parse_piece(chunk, piece); err != simdjson::SUCCESS) fail(chunk, piece, err);
    }
    if (chunk.events_skipped_too_large > 0) trace_.skip("event_too_large", chunk.events_skipped_too_large);
    if (chunk.members_skipped_too_large > 0) trace_.skip("header_member_too_large", chunk.members_skipped_too_large);
  }

  bool saw_events() const { return saw_events_; }
  std::vector<Event> take_events() { return events_.take(); }

 private:
  error_code parse_piece(const TextChunk& chunk, const TextPiece& piece) {
    const char* framed = chunk.data.get() + piece.begin - 1;
    const size_t room = chunk.capacity + ChunkProducer::kPaddingBytes - (piece.begin - 1);
    iterating_ = false;
    SW_JSON_TRY(parser_.iterate(simdjson::padded_string_view(framed, piece.end - piece.begin + 2, room)).get(doc_));
    iterating_ = true;
    od::array elements;
    SW_JSON_TRY(doc_.get_array().get(elements));
    for (auto element : elements) {
      od::value v;
      SW_JSON_TRY(std::move(element).get(v));
      if (piece.kind == TextPiece::Kind::kEvents) {
        SW_JSON_TRY(read_event(v, context_));
      } else {
        SW_JSON_TRY(read_member(piece.key, v, trace_));
      }
    }
    return simdjson::SUCCESS;
  }

  // Where simdjson stood when it failed; at stage 1 (bad UTF-8, unclosed string) it has no
  // location, and the piece's start is the best answer.
  [[noreturn]] void fail(const TextChunk& chunk, const TextPiece& piece, error_code err) {
    const char* at = nullptr;
    size_t index = piece.begin;
    if (iterating_ && doc_.current_location().get(at) == simdjson::SUCCESS && at >= chunk.data.get() &&
        at <= chunk.data.get() + piece.end) {
      index = static_cast<size_t>(at - chunk.data.get());
    }
    throw ImportError(name_, std::string("malformed JSON: ") + simdjson::error_message(err),
                      static_cast<int64_t>(chunk.offset + index));
  }

  Trace& trace_;
  const std::string& name_;
  EventCollector events_;
  EventContext context_;
  od::parser parser_;
  od::document doc_;
  bool iterating_ = false;  // doc_ belongs to the piece being parsed (stage 1 succeeded)
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
    // A file is read (and inflated, and scanned) on its own thread while this one parses; text
    // already in memory has nothing to overlap.
    ChunkPipeline pipeline(producer, input, input != nullptr);
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
