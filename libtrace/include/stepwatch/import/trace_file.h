// Any trace file, by content: an Nsight Systems SQLite export, else Kineto JSON (gzipped or not).
#pragma once

#include <string>

#include "stepwatch/core/trace.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch {

// Opens `path` once ("-" = standard input; FIFOs and /dev/stdin work, nothing is reopened or
// seeked) and imports it with the importer its first bytes call for. An nsys report
// (.nsys-rep/.qdrep) is refused with the export command to run. Throws ImportError.
Trace import_trace_file(const std::string& path, const ImportLimits& limits = {});

}  // namespace stepwatch
