// The Kineto importer on an input already opened (and possibly peeked at) by trace_file.cpp.
// Private to libtrace/src/import.
#pragma once

#include "import/input_file.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch::import_detail {

Trace import_kineto_input(InputFile& input, const ImportLimits& limits);

// import_kineto_json with chunks of `chunk_bytes` of text instead of ChunkProducer::kChunkBytes:
// for the fuzzer, which compares it with the one-chunk import to put chunk boundaries everywhere.
Trace import_kineto_json_in_chunks(std::string_view json, const std::string& source, size_t chunk_bytes);

}  // namespace stepwatch::import_detail
