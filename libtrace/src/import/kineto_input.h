// The Kineto importer on an input already opened (and possibly peeked at) by trace_file.cpp.
// Private to libtrace/src/import.
#pragma once

#include "import/input_file.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch::import_detail {

Trace import_kineto_input(InputFile& input, const ImportLimits& limits);

}  // namespace stepwatch::import_detail
