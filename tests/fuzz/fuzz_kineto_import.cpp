// libFuzzer target: the Kineto (Chrome-trace JSON) importer on arbitrary bytes.
// Contract: any input either imports or throws stepwatch::ImportError; nothing else (no crash, no
// other exception, no leak, no UB). An imported trace must also survive the analysis.
// Differential: the streaming importer cuts its text into chunks (trace_chunks.h) of 512 KiB, so
// an input of the fuzzer's size is one chunk; it is imported again in chunks of 1..64 bytes (by the
// input's length), which must give the same verdict and, on success, the same events and counts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "import/kineto_input.h"
#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/import/kineto_importer.h"

namespace {

bool same_events(const stepwatch::Trace& a, const stepwatch::Trace& b) {
  if (a.events.size() != b.events.size() || a.skipped != b.skipped || a.rank != b.rank ||
      a.device_name != b.device_name || a.clock_base_ns != b.clock_base_ns) {
    return false;
  }
  for (size_t i = 0; i < a.events.size(); ++i) {
    const stepwatch::Event& x = a.events[i];
    const stepwatch::Event& y = b.events[i];
    if (x.kind != y.kind || x.start_ns != y.start_ns || x.end_ns != y.end_ns || x.correlation != y.correlation ||
        a.names.view(x.name) != b.names.view(y.name)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  stepwatch::Trace trace;
  bool imported = true;
  try {
    trace = stepwatch::import_kineto_json(json, "fuzz");
  } catch (const stepwatch::ImportError&) {
    imported = false;
  }
  try {
    const stepwatch::Trace chunked = stepwatch::import_detail::import_kineto_json_in_chunks(json, "fuzz", 1 + size % 64);
    if (!imported || !same_events(trace, chunked)) {
      std::fprintf(stderr, "chunked import differs from the one-chunk import (chunk %zu bytes)\n", 1 + size % 64);
      std::abort();
    }
  } catch (const stepwatch::ImportError& e) {
    if (imported) {
      std::fprintf(stderr, "only the chunked import failed: %s\n", e.what());
      std::abort();
    }
  }
  if (!imported) return 0;
  // Bounded: huge event counts only cost time, not coverage.
  if (trace.events.size() > 20000) return 0;
  stepwatch::AnalysisConfig config;
  auto detectors = stepwatch::make_detectors(config);
  const stepwatch::RankResult r = stepwatch::analyze_rank(trace, 0, config, std::move(detectors));
  for (const stepwatch::StepView& v : r.steps) {
    if (v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total() != v.duration_ns()) std::abort();
  }
  return 0;
}
