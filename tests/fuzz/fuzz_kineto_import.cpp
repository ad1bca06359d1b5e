// libFuzzer target: the Kineto (Chrome-trace JSON) importer on arbitrary bytes.
// Contract: any input either imports or throws stepwatch::ImportError; nothing else (no crash, no
// other exception, no leak, no UB). An imported trace must also survive the analysis.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/import/kineto_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  stepwatch::Trace trace;
  try {
    trace = stepwatch::import_kineto_json(json, "fuzz");
  } catch (const stepwatch::ImportError&) {
    return 0;
  }
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
