// A rank's events plus the names they refer to: what an importer produces and what the
// offline analysis consumes. The live library keeps the same data in a bounded ring instead.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/core/name_table.h"

namespace stepwatch {

struct Trace {
  std::string source;     // file path or "live"
  std::string format;     // "kineto", "nsys", "stepwatch"
  int rank = -1;          // -1: unknown (assigned from file order)
  std::string device_name;
  // Kineto's `baseTimeNanoseconds` (0 when absent). Kept beside the events, never added to them:
  // the corpus's traces carry a wall-clock base rounded to the second next to `ts` on a host
  // monotonic clock, so base + ts is not a common clock. The multi-rank merge uses the bases'
  // difference only as a prior for the offset that collectives measure (stepwatch/ranks/).
  int64_t clock_base_ns = 0;
  // The GPU was traced over the whole trace, records or not (stepwatch's flight-recorder dumps:
  // a dump of steps with no kernel is an idle GPU, not a trace recorded without CUDA activity).
  bool gpu_traced = false;
  NameTable names;
  std::vector<Event> events;
  // Records of the input left out of `events`, by reason ("timestamp_out_of_range", ...): never
  // silent, the analysis reports them as data loss.
  std::map<std::string, uint64_t, std::less<>> skipped;

  void skip(std::string_view reason, uint64_t count = 1) {
    auto it = skipped.find(reason);
    if (it == skipped.end()) it = skipped.emplace(std::string(reason), 0).first;
    it->second += count;
  }

  // Interns and appends; returns the event for further filling.
  Event& add(EventKind kind, std::string_view name, int64_t start_ns, int64_t end_ns) {
    Event& e = events.emplace_back();
    e.kind = kind;
    e.name = names.intern(name);
    e.start_ns = start_ns;
    e.end_ns = end_ns;
    return e;
  }
};

}  // namespace stepwatch
