// libFuzzer target: the nsys SQLite importer on arbitrary bytes taken as a database image.
// Contract: any input either imports or throws stepwatch::ImportError; nothing else (no crash, no
// other exception, no leak, no UB, no hang). An imported trace must also survive the analysis.
//
// Plain random bytes almost never form an SQLite file: the seeds are small nsys-shaped exports
// written by tests/fuzz/make_nsys_seeds.py, which the mutations corrupt (headers, b-tree pages,
// schema text, record payloads). fuzz_nsys_rows covers the importer's logic on well-formed files.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_nsys_support.h"
#include "stepwatch/import/nsys_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view image(reinterpret_cast<const char*>(data), size);
  stepwatch::Trace trace;
  try {
    trace = stepwatch::import_nsys_sqlite_bytes(image, "fuzz.sqlite");
  } catch (const stepwatch::ImportError&) {
    return 0;
  }
  stepwatch::fuzz::analyze_and_check(trace);
  return 0;
}
