// Hand-built traces for unit tests: each call appends one event at µs times.
#pragma once

#include <cstdint>
#include <string>

#include "stepwatch/core/classify.h"
#include "stepwatch/core/trace.h"

namespace stepwatch::testing {

inline int64_t us(double v) { return static_cast<int64_t>(v * 1000.0); }

class TraceBuilder {
 public:
  TraceBuilder& kernel(double start_us, double end_us, uint64_t correlation = 0, std::string name = "gemm") {
    Event& e = trace.add(EventKind::kKernel, name, us(start_us), us(end_us));
    e.correlation = correlation;
    e.collective = classify_collective(name);
    e.stream = 7;
    e.device = 0;
    return *this;
  }
  TraceBuilder& nccl(double start_us, double end_us, uint64_t correlation = 0,
                     std::string name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL") {
    return kernel(start_us, end_us, correlation, std::move(name));
  }
  TraceBuilder& copy(double start_us, double end_us, uint64_t correlation, std::string name, uint64_t bytes = 0) {
    Event& e = trace.add(EventKind::kMemcpy, name, us(start_us), us(end_us));
    const CopyDescription d = describe_copy(name);
    e.detail = static_cast<uint8_t>(d.kind);
    e.src_memory = d.src;
    e.dst_memory = d.dst;
    e.correlation = correlation;
    e.bytes = bytes;
    return *this;
  }
  TraceBuilder& api(double start_us, double end_us, std::string name, uint64_t correlation = 0, uint32_t thread = 1) {
    Event& e = trace.add(EventKind::kApiCall, name, us(start_us), us(end_us));
    e.detail = static_cast<uint8_t>(classify_api(name));
    e.correlation = correlation;
    e.thread = thread;
    return *this;
  }
  TraceBuilder& launch(double start_us, double end_us, uint64_t correlation, uint32_t thread = 1) {
    return api(start_us, end_us, "cudaLaunchKernel", correlation, thread);
  }
  TraceBuilder& range(double start_us, double end_us, std::string name, uint32_t thread = 1) {
    Event& e = trace.add(EventKind::kRange, name, us(start_us), us(end_us));
    e.thread = thread;
    return *this;
  }
  Trace trace;
};

}  // namespace stepwatch::testing
