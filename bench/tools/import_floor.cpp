// stepwatch-import-floor: what an import of a Kineto trace costs at the least, and what stepwatch's
// importer costs alone, as whole processes for bench/compare_hta.sh and bench/large_trace.sh.
//
//   stepwatch-import-floor floor FILE    libdeflate inflates the whole file into one buffer sized by
//                                        the gzip size trailer (plain JSON is read whole), then
//                                        simdjson On-Demand visits every key of every traceEvents
//                                        element: the work any importer of the format must do,
//                                        with the fastest whole-buffer inflater and parser there are
//   stepwatch-import-floor dom FILE      the same with simdjson's DOM parse (every value built)
//   stepwatch-import-floor import FILE   stepwatch's importer alone (import_trace_file, no analysis)
//   stepwatch-import-floor phases FILE   RSS (now / peak) after the import, after the analysis's
//                                        sort, with its Timeline built, and after analyze_rank:
//                                        where a whole `stepwatch analyze` spends its memory
//
// Prints one line: mode, bytes of text (floor/dom) or events (import), seconds, peak RSS.
// The floor holds the whole text, so it is limited to 4 GiB (the size trailer, simdjson).
#include <libdeflate.h>
#include <simdjson.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "stepwatch/core/analysis.h"
#include "stepwatch/core/timeline.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/import/trace_file.h"

namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot open ") + path);
  in.seekg(0, std::ios::end);
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// The text in a buffer with simdjson's padding, not zero-filled (as a careful importer would).
struct Text {
  std::unique_ptr<char[]> data;
  size_t size = 0;
};

Text inflate_whole(const std::string& file) {
  Text t;
  const auto* p = reinterpret_cast<const unsigned char*>(file.data());
  const bool gz = file.size() >= 18 && p[0] == 0x1f && p[1] == 0x8b;
  if (!gz) {
    t.data.reset(new char[file.size() + simdjson::SIMDJSON_PADDING]);
    std::memcpy(t.data.get(), file.data(), file.size());
    t.size = file.size();
    return t;
  }
  const unsigned char* trailer = p + file.size() - 4;
  const size_t isize = size_t{trailer[0]} | size_t{trailer[1]} << 8 | size_t{trailer[2]} << 16 | size_t{trailer[3]} << 24;
  t.data.reset(new char[isize + simdjson::SIMDJSON_PADDING]);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  size_t out = 0;
  const libdeflate_result rc = libdeflate_gzip_decompress(d, file.data(), file.size(), t.data.get(), isize, &out);
  libdeflate_free_decompressor(d);
  if (rc != LIBDEFLATE_SUCCESS) throw std::runtime_error("libdeflate failed (multi-member or over 4 GiB?)");
  t.size = out;
  return t;
}

// Every key of every traceEvents element (values are skipped, as On-Demand does for unread ones).
size_t visit_events(const Text& t) {
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc = parser.iterate(t.data.get(), t.size, t.size + simdjson::SIMDJSON_PADDING);
  size_t keys = 0;
  const auto visit_array = [&](simdjson::ondemand::array events) {
    for (auto element : events) {
      simdjson::ondemand::object event;
      if (element.get_object().get(event) != simdjson::SUCCESS) continue;
      for (auto field : event) {
        (void)field.key();
        ++keys;
      }
    }
  };
  if (doc.type() == simdjson::ondemand::json_type::array) {
    visit_array(doc.get_array());
    return keys;
  }
  for (auto field : doc.get_object()) {
    if (field.key() == "traceEvents") visit_array(field.value().get_array());
  }
  return keys;
}

double rss_now_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / double(1 << 20);
}

void phases(const char* path) {
  const auto report = [](const char* what) { std::printf("%-26s now %7.1f MiB, peak %7.1f MiB\n", what, rss_now_mib(), peak_rss_mib()); };
  stepwatch::Trace trace = stepwatch::import_trace_file(path);
  std::printf("%zu events (%.1f MiB of Event)\n", trace.events.size(),
              static_cast<double>(trace.events.size() * sizeof(stepwatch::Event)) / double(1 << 20));
  report("after the import");
  // analyze_rank's first step, as it does it (it sorts again below: already sorted, same buffer).
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const stepwatch::Event& a, const stepwatch::Event& b) { return a.start_ns < b.start_ns; });
  report("after its stable_sort");
  const stepwatch::AnalysisConfig config;
  {
    const stepwatch::Timeline timeline(trace.events, trace.names, config);
    report("with the Timeline");
  }
  auto detectors = stepwatch::make_detectors(config);
  const stepwatch::RankResult result = stepwatch::analyze_rank(trace, 0, config, std::move(detectors));
  std::printf("%zu steps\n", result.steps.size());
  report("after analyze_rank");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: stepwatch-import-floor floor|dom|import|phases FILE\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  const auto start = std::chrono::steady_clock::now();
  try {
    size_t count = 0;
    if (mode == "phases") {
      phases(argv[2]);
      return 0;
    }
    if (mode == "import") {
      count = stepwatch::import_trace_file(argv[2]).events.size();
    } else {
      const Text text = inflate_whole(read_file(argv[2]));
      count = text.size;
      if (mode == "dom") {
        simdjson::dom::parser parser;
        simdjson::dom::element root;
        if (parser.parse(text.data.get(), text.size, false).get(root) != simdjson::SUCCESS) throw std::runtime_error("parse");
      } else {
        (void)visit_events(text);
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s %zu %.3f s %.1f MiB\n", argv[1], count, s, peak_rss_mib());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stepwatch-import-floor: %s\n", e.what());
    return 1;
  }
  return 0;
}
