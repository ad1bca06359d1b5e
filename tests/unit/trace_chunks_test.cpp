// The streaming cut of a Kineto trace's text (libtrace/src/import/trace_chunks.h, trace_scanner.h)
// at every possible chunk boundary, on text made to trip a boundary finder: braces, brackets,
// commas and escaped quotes inside strings, backslashes at a chunk's end, nested arrays and
// non-object elements, header members before and after the events. Every framed piece must be
// valid JSON whose elements are exactly the document's (checked against nlohmann::json's parse
// of the whole text), whatever the chunk size. Plus the gzip readers (ISA-L and zlib) on
// multi-member files.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "import/input_file.h"
#include "import/text_source.h"
#include "import/trace_chunks.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch::import_detail {
namespace {

using nlohmann::json;

struct Cut {
  json events = json::array();
  json members = json::object();
  uint64_t too_large = 0;
  size_t chunks = 0;
};

std::string key_name(TopKey k) {
  switch (k) {
    case TopKey::kDistributedInfo: return "distributedInfo";
    case TopKey::kDeviceProperties: return "deviceProperties";
    case TopKey::kBaseTime: return "baseTimeNanoseconds";
    default: return "?";
  }
}

Cut cut_text(std::string_view text, size_t chunk_bytes, size_t max_record_bytes = 1u << 20) {
  const auto source = memory_text(text, "t.json", UINT64_MAX);
  ChunkProducer producer(*source, "t.json", max_record_bytes, chunk_bytes);
  TextChunk chunk;
  Cut out;
  while (!producer.done()) {
    producer.produce(chunk);
    ++out.chunks;
    for (const TextPiece& p : chunk.pieces) {
      const std::string framed(chunk.data.get() + p.begin - 1, p.end - p.begin + 2);
      json parsed;
      try {
        parsed = json::parse(framed);
      } catch (const json::parse_error& e) {
        // What the importer's simdjson parse of the piece does with a malformed one.
        throw ImportError("t.json", std::string("a piece is not JSON: ") + e.what());
      }
      if (p.kind == TextPiece::Kind::kEvents) {
        for (const json& e : parsed) out.events.push_back(e);
      } else {
        EXPECT_EQ(parsed.size(), 1u) << framed;
        out.members[key_name(p.key)] = parsed.at(0);
      }
    }
    out.too_large += chunk.events_skipped_too_large;
  }
  return out;
}

// Raw strings keep the JSON escapes literal: "\"" is an escaped quote, "\\" a backslash.
const char* const kTrickyTrace = R"j({"schemaVersion": 1,
 "deviceProperties": [{"name": "GPU \"0\" {x}], [y]", "id": 0}],
 "weird, key \"}\"": [1, {"a": "]}", "b": [[], {}]}, "\\"],
 "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "a},{\"ph\":\"X\"", "ts": 1, "dur": 2},
  {"ph": "X", "cat": "cpu_op", "name": "back\\slash\\", "ts": 3, "dur": 1, "args": {"nested": [[{}], {"x": [1, 2, "]"]}]}},
	"a string element, with a comma and a ] and a }",
  42 , null,[1, [2, {"k": "}"}]] ,
  {"ph": "X", "cat": "kernel", "name": "\u007d\u005d\\\"\\\\", "ts": 5, "dur": 1, "args": {"s": "\\\\\\\""}},
  {}, [], "", "\\", {"e": {"f": {"g": [[[["deep,"]]]]}}}
 ],
 "distributedInfo": {"rank": 3, "note": "trailing \\"},
 "baseTimeNanoseconds": 1700000000000000000}
)j";

TEST(TraceChunks, EveryChunkSizeCutsTheSameEventsAndMembers) {
  const std::string text = kTrickyTrace;
  const json whole = json::parse(text);
  for (size_t chunk = 1; chunk <= text.size() + 1; ++chunk) {
    SCOPED_TRACE("chunk bytes " + std::to_string(chunk));
    const Cut cut = cut_text(text, chunk);
    ASSERT_EQ(cut.events, whole["traceEvents"]);
    EXPECT_EQ(cut.members["deviceProperties"], whole["deviceProperties"]);
    EXPECT_EQ(cut.members["distributedInfo"], whole["distributedInfo"]);
    EXPECT_EQ(cut.members["baseTimeNanoseconds"], whole["baseTimeNanoseconds"]);
    EXPECT_FALSE(cut.members.contains("?")) << "a member the importer does not read was cut out";
  }
}

TEST(TraceChunks, BareArrayAndEmptyArrays) {
  for (size_t chunk : {1, 2, 3, 5, 8, 13, 4096}) {
    SCOPED_TRACE(chunk);
    EXPECT_EQ(cut_text(R"j([ {"a": "],"}, 2 ,"x"] )j", chunk).events, json::parse(R"j([{"a": "],"}, 2, "x"])j"));
    EXPECT_EQ(cut_text("[]", chunk).events, json::array());
    EXPECT_EQ(cut_text("\n[ \n ]\n", chunk).events, json::array());
    EXPECT_EQ(cut_text(R"j({"traceEvents": []})j", chunk).events, json::array());
    EXPECT_EQ(cut_text(R"j({"traceEvents": [], "traceEvents": [1]})j", chunk).events, json::parse("[1]"));
  }
}

// Malformed structure is an ImportError at any chunk size, never a crash or a silent success.
TEST(TraceChunks, MalformedStructureFailsAtEveryChunkSize) {
  using namespace std::string_view_literals;
  const std::string_view bad[] = {
      R"j({"traceEvents": [{"a": 1]})j",  // bracket kinds
      R"j({"traceEvents": [1,,2]})j",     // doubled comma
      R"j({"traceEvents": [1,]})j",       // trailing comma
      R"j({"traceEvents": [,1]})j",       // leading comma
      R"j({"traceEvents": [1]} x)j",      // content after the document
      R"j({"traceEvents": [1]}})j",
      R"j({"traceEvents" [1]})j",         // no colon
      R"j({"traceEvents": [1] "x": 2})j",  // no comma between members
      R"j({"a": , "traceEvents": []})j",   // no value
      R"j({"traceEvents": [1], })j",       // no key after the comma
      "\0\0\0\0"sv,                        // not JSON (a bomb of zeros)
      "hello",
      "",
      "  \n\t ",
  };
  for (const std::string_view text : bad) {
    for (size_t chunk : {1, 2, 3, 7, 64}) {
      SCOPED_TRACE(std::string(text) + " / chunk " + std::to_string(chunk));
      EXPECT_THROW(cut_text(text, chunk), ImportError);
    }
  }
  // The importer's own parse rejects what the pieces above fail on.
  EXPECT_THROW(import_kineto_json(R"j({"traceEvents": [1,]})j", "t"), ImportError);
  EXPECT_THROW(import_kineto_json(R"j({"traceEvents": [{"ph": "X",, "ts": 1}]})j", "t"), ImportError);
}

TEST(TraceChunks, EveryStrictPrefixIsTruncated) {
  const std::string text = kTrickyTrace;
  const size_t end = text.find_last_of('}') + 1;
  for (size_t cut = 0; cut < end; ++cut) {
    SCOPED_TRACE(cut);
    EXPECT_THROW(cut_text(std::string_view(text).substr(0, cut), 5), ImportError);
  }
}

// An event longer than the record cap is scanned to its end without being kept, and counted; the
// events around it are kept, wherever the chunk boundaries fall.
TEST(TraceChunks, EventsOverTheRecordCapAreCountedNotKept) {
  const std::string huge = "{\"name\": \"" + std::string(300, 'x') + "\\\"},{\", \"ts\": [1, {\"a\": \"]\"}]}";
  const std::string text = R"j({"traceEvents": [{"i": 1}, )j" + huge + R"j(, {"i": 2}, )j" + huge + R"j(]})j";
  for (size_t chunk = 1; chunk <= 400; chunk += 7) {
    SCOPED_TRACE(chunk);
    const Cut cut = cut_text(text, chunk, 200);
    EXPECT_EQ(cut.events, json::parse(R"j([{"i": 1}, {"i": 2}])j"));
    EXPECT_EQ(cut.too_large, 2u);
  }
}

TEST(TraceChunks, LargeInputsStayInChunksOfTheirSize) {
  std::string text = "{\"traceEvents\": [";
  for (int i = 0; i < 20000; ++i) text += (i ? "," : "") + std::string(R"j({"ph": "X", "name": "k", "ts": 1})j");
  text += "]}";
  const Cut cut = cut_text(text, 4096);
  EXPECT_EQ(cut.events.size(), 20000u);
  EXPECT_GE(cut.chunks, text.size() / 4096);
}

// ---------------------------------------------------------------------------------------------

class GzipReaders : public ::testing::TestWithParam<GzipBackend> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("trace_chunks_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `header`, when given, is written into the member (file name, comment, extra field, header CRC).
  static std::string gzip(std::string_view text, gz_header* header = nullptr) {
    z_stream zs{};
    EXPECT_EQ(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    if (header != nullptr) {
      EXPECT_EQ(deflateSetHeader(&zs, header), Z_OK);
    }
    std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 32, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    zs.avail_in = static_cast<uInt>(text.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    return out;
  }

  std::string write(const std::string& name, std::string_view bytes) const {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }

  std::string read_text(const std::string& path) const {
    InputFile input(path);
    const auto text = open_text(input, UINT64_MAX, GetParam());
    std::string out;
    char buf[777];  // an odd size: output boundaries fall everywhere
    for (size_t got; (got = text->read(buf, sizeof buf)) > 0;) out.append(buf, got);
    return out;
  }

  std::filesystem::path dir_;
};

// igzip reads ahead into its bit buffer: at a member's end that buffer holds the next member's
// first bytes, which must be handed back. Many tiny members put every member end somewhere else.
TEST_P(GzipReaders, ManyMembersAndTrailingGarbageReadWhole) {
  std::string text;
  std::string gz;
  for (int i = 0; i < 3000; ++i) {
    const std::string part = "member " + std::to_string(i) + std::string(static_cast<size_t>(i % 37), '.');
    text += part;
    gz += gzip(part);
  }
  EXPECT_EQ(read_text(write("many.gz", gz)), text);
  EXPECT_EQ(read_text(write("garbage.gz", gz + "trailing bytes that are no gzip member")), text);
  EXPECT_EQ(read_text(write("one_byte.gz", gz + "\x1f")), text);
}

// What `gzip FILE` writes: a header with the file name (RFC 1952 FNAME), here with a comment, an
// extra field and a header CRC too. The input's first read is the 16-byte sniff, so the header
// always arrives in two pieces, ending inside the name: ISA-L 2.30's isal_inflate, left to parse
// the header itself, lost the header's flags between the two calls ("invalid distance" on every
// corpus trace under ASan, where the stack it read uninitialised held something else).
TEST_P(GzipReaders, HeaderWithNameCommentExtraAndCrcReadAcrossReads) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "{\"name\": \"kernel " + std::to_string(i % 97) + "\"},";
  std::string name = "rank-0.1730000000000.pt.trace.json";  // longer than the sniff
  std::string comment = "written by a test";
  std::string extra = std::string("XY") + '\x04' + '\0' + "abcd";  // one subfield: id "XY", length 4
  for (const bool with_extra : {false, true}) {
    SCOPED_TRACE(with_extra);
    gz_header header{};
    header.name = reinterpret_cast<Bytef*>(name.data());
    header.comment = reinterpret_cast<Bytef*>(comment.data());
    header.extra = with_extra ? reinterpret_cast<Bytef*>(extra.data()) : Z_NULL;
    header.extra_len = with_extra ? static_cast<uInt>(extra.size()) : 0;
    header.hcrc = with_extra ? 1 : 0;
    const std::string one = gzip(text, &header);
    EXPECT_EQ(read_text(write("named.gz", one)), text);
    EXPECT_EQ(read_text(write("named2.gz", one + one)), text + text);  // the second header after a member end
  }
  gz_header named{};
  named.name = reinterpret_cast<Bytef*>(name.data());
  std::string bad = gzip(text, &named);
  bad[3] = static_cast<char>(bad[3] | 0x02);  // FHCRC claimed, no CRC there: the header is corrupt
  EXPECT_THROW(read_text(write("bad_hcrc.gz", bad)), ImportError);
}

TEST_P(GzipReaders, TruncatedAndCorruptMembersThrow) {
  const std::string text(200000, 'a');
  const std::string gz = gzip(text + "tail");
  EXPECT_THROW(read_text(write("cut.gz", gz.substr(0, gz.size() - 3))), ImportError);
  EXPECT_THROW(read_text(write("cut2.gz", gz.substr(0, gz.size() / 2))), ImportError);
  std::string crc = gz;
  crc[crc.size() - 6] = static_cast<char>(crc[crc.size() - 6] ^ 0x55);  // the CRC-32 trailer
  EXPECT_THROW(read_text(write("crc.gz", crc)), ImportError);
}

INSTANTIATE_TEST_SUITE_P(Backends, GzipReaders, ::testing::Values(GzipBackend::kDefault, GzipBackend::kZlib),
                         [](const auto& p) { return p.param == GzipBackend::kZlib ? "zlib" : "default"; });

}  // namespace
}  // namespace stepwatch::import_detail
