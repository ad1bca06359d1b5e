// Nsight Systems SQLite importer: files written by `nsys export --type sqlite`.
//
// Schemas differ across nsys versions (columns added, renamed, dropped): every table is read by the
// columns PRAGMA table_info reports, and a missing column or table reads as absent, never as an
// error. Tables read: CUPTI_ACTIVITY_KIND_{KERNEL,MEMCPY,MEMSET,RUNTIME,DRIVER,SYNCHRONIZATION},
// NVTX_EVENTS (ranges), OSRT_API (blocking host calls as "osrt:<call>" annotation ranges),
// StringIds, TARGET_INFO_{CUDA_GPU,GPU} (device name), ENUM_CUDA_MEM_KIND / ENUM_CUDA_MEMCPY_OPER.
// Older nsys versions write two runtime rows per call (`cudaMemcpy` and `cudaMemcpy_v3020`, one
// correlationId): they become one kApiCall, the outer (earliest) row. Rank stays -1: an export
// does not say which rank it is (the caller assigns file order).
#pragma once

#include <string>
#include <string_view>

#include "stepwatch/core/trace.h"
#include "stepwatch/import/kineto_importer.h"  // ImportError

namespace stepwatch {

// True when `bytes` start with the SQLite header "SQLite format 3\0".
bool has_sqlite_magic(std::string_view bytes);

// Reads an nsys SQLite export. Throws ImportError naming the file and the SQLite error for
// missing, unreadable, truncated or corrupt files, and for SQLite files that are no nsys export.
Trace import_nsys_sqlite(const std::string& path);

// The same on a database image in memory (the bytes of an export; copied, never written back).
// `source` names the input in errors. Used by the fuzzers; same errors as above.
Trace import_nsys_sqlite_bytes(std::string_view image, const std::string& source);

}  // namespace stepwatch
