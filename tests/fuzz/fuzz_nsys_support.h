// What both nsys fuzzers check on a trace that imported: every event well-formed (end >= start,
// a name the trace's table knows), and the analysis with every detector keeps the breakdown
// invariant (compute + exposed comm + copy-only + idle == duration, no negative part).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"

namespace stepwatch::fuzz {

inline void analyze_and_check(Trace& trace) {
  for (const Event& e : trace.events) {
    if (e.end_ns < e.start_ns) {
      std::fprintf(stderr, "imported event ends before it starts: [%lld, %lld]\n", (long long)e.start_ns,
                   (long long)e.end_ns);
      std::abort();
    }
    (void)trace.names.view(e.name);
  }
  // Bounded: huge event counts only cost time, not coverage.
  if (trace.events.size() > 20000) return;
  AnalysisConfig config;
  auto detectors = make_detectors(config);
  const RankResult r = analyze_rank(trace, 0, config, std::move(detectors));
  for (const StepView& v : r.steps) {
    const int64_t sum = v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total();
    if (sum != v.duration_ns()) {
      std::fprintf(stderr, "breakdown invariant broken: step %lld [%lld, %lld]: %lld != %lld\n", (long long)v.step,
                   (long long)v.start_ns, (long long)v.end_ns, (long long)sum, (long long)v.duration_ns());
      std::abort();
    }
    for (int64_t part : v.idle.ns) {
      if (part < 0) std::abort();
    }
  }
}

}  // namespace stepwatch::fuzz
