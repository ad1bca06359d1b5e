// Writes a Trace as Kineto-compatible Chrome-trace JSON: opens in Perfetto UI / chrome://tracing
// and reads back through import_kineto_json with the same events (the flight recorder's format,
// and how the synthetic generator ships demo traces).
#pragma once

#include <ostream>
#include <string>

#include "stepwatch/core/trace.h"

namespace stepwatch {

void write_kineto_json(const Trace& trace, std::ostream& out);
// Gzips when `path` ends in ".gz". Throws std::runtime_error on I/O failure.
void write_kineto_file(const Trace& trace, const std::string& path);

}  // namespace stepwatch
