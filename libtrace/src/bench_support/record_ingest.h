// A CUPTI-free entry point for the benchmarks of the live ingest path (bench/cupti_ingest_bench.cpp):
// buffers of real CUPTI 13.0 activity records and the adapter's real parser over the real
// libcupti's cuptiActivityGetNextRecord — without any CUPTI type or header here, so that nothing
// outside libtrace/src/cupti/ and tests/ includes CUPTI. Implemented in
// libtrace/src/cupti/bench_support/record_ingest.cpp, built into stepwatch_bench only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/event_sink.h"

namespace stepwatch::bench {

// One activity buffer of real records, laid out as CUPTI lays them out.
class RecordBuffer {
 public:
  virtual ~RecordBuffer() = default;
  // Kernel records only, names cycling through `distinct_names` names (NCCL's among them).
  static std::unique_ptr<RecordBuffer> kernels(size_t bytes, size_t distinct_names);
  // A launch-bound mix: per launch a runtime API record and a kernel; an async copy every 16th.
  static std::unique_ptr<RecordBuffer> launches(size_t bytes, size_t distinct_names);
  virtual size_t records() const = 0;
  virtual size_t bytes() const = 0;
  virtual uint8_t* data() = 0;
};

// The adapter's record converter (cupti/cupti_records.h) bound to `sink`, over the real libcupti.
class RecordParser {
 public:
  virtual ~RecordParser() = default;
  // nullptr (and `error`) when the real libcupti.so.13 cannot be loaded.
  static std::unique_ptr<RecordParser> create(EventSink& sink, std::string& error);
  virtual uint64_t parse(RecordBuffer& buffer) = 0;       // records converted
  virtual uint64_t iterate_only(RecordBuffer& buffer) = 0;  // cuptiActivityGetNextRecord alone
};

}  // namespace stepwatch::bench
