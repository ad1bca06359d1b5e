// The Kineto importer on small inline traces: one test per mapping rule, format variant and
// failure mode. Real traces are covered by tests/corpus/corpus_import_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch {
namespace {

Trace import_json(std::string_view json) { return import_kineto_json(json, "inline.json"); }

std::vector<const Event*> events_of(const Trace& trace, EventKind kind) {
  std::vector<const Event*> out;
  for (const Event& e : trace.events) {
    if (e.kind == kind) out.push_back(&e);
  }
  return out;
}

const Event& single(const Trace& trace, EventKind kind) {
  const std::vector<const Event*> found = events_of(trace, kind);
  EXPECT_EQ(found.size(), 1u);
  static const Event kNone{};
  return found.empty() ? kNone : *found.front();
}

std::string_view name_of(const Trace& trace, const Event& e) { return trace.names.view(e.name); }

std::string wrap(std::string_view events) { return "{\"traceEvents\": [" + std::string(events) + "]}"; }

// --- GPU records --------------------------------------------------------------------------------

TEST(KinetoImporterTest, KernelTakesPlacementFromArgsAndTimesInNanoseconds) {
  const Trace t = import_json(wrap(R"j({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn",
      "pid": 0, "tid": 7, "ts": 1000.5, "dur": 2.25,
      "args": {"device": 3, "context": 1, "stream": 20, "correlation": 27, "grid": [8, 16, 5]}})j"));
  const Event& k = single(t, EventKind::kKernel);
  EXPECT_EQ(name_of(t, k), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(k.start_ns, 1'000'500);
  EXPECT_EQ(k.end_ns, 1'002'750);
  EXPECT_EQ(k.device, 3);
  EXPECT_EQ(k.stream, 20u);
  EXPECT_EQ(k.correlation, 27u);
  EXPECT_EQ(k.collective, CollectiveType::kNone);
  EXPECT_EQ(k.thread, 0u);
}

TEST(KinetoImporterTest, KernelFallsBackToPidAndTidForPlacement) {
  const Trace t = import_json(wrap(R"j({"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7,
      "ts": 10, "dur": 1, "args": {}})j"));
  const Event& k = single(t, EventKind::kKernel);
  EXPECT_EQ(k.device, 1);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.correlation, 0u);
}

TEST(KinetoImporterTest, NcclKernelsCarryTheirCollective) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
       "pid": 1, "tid": 7, "ts": 1, "dur": 5, "args": {"device": 1, "stream": 7, "correlation": 2}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       "pid": 1, "tid": 7, "ts": 9, "dur": 5, "args": {"device": 1, "stream": 7, "correlation": 3}})j"));
  const std::vector<const Event*> kernels = events_of(t, EventKind::kKernel);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]->collective, CollectiveType::kAllReduce);
  EXPECT_EQ(kernels[1]->collective, CollectiveType::kAllGather);
}

TEST(KinetoImporterTest, MemcpyDescribesDirectionMemoryAndBytes) {
  const Trace t = import_json(wrap(R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)",
      "pid": 0, "tid": 7, "ts": 100, "dur": 12,
      "args": {"device": 0, "stream": 7, "correlation": 14, "bytes": 92928, "memory bandwidth (GB/s)": 7.7}})j"));
  const Event& c = single(t, EventKind::kMemcpy);
  EXPECT_EQ(c.copy_kind(), CopyKind::kHtoD);
  EXPECT_EQ(c.src_memory, MemoryKind::kPageable);
  EXPECT_EQ(c.dst_memory, MemoryKind::kDevice);
  EXPECT_EQ(c.bytes, 92928u);
  EXPECT_EQ(c.correlation, 14u);
  EXPECT_EQ(c.stream, 7u);
}

TEST(KinetoImporterTest, AmdMemcpyTakesItsDirectionFromArgsKindWhenTheNameLacksIt) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy", "pid": 2, "tid": 0, "ts": 1, "dur": 1,
       "args": {"device": 2, "stream": 0, "correlation": 117, "kind": "DtoH"}},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)", "pid": 2, "tid": 0, "ts": 5, "dur": 1,
       "args": {"device": 2, "stream": 0, "correlation": 118, "kind": "HtoD"}})j"));
  const std::vector<const Event*> copies = events_of(t, EventKind::kMemcpy);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0]->copy_kind(), CopyKind::kDtoH);
  EXPECT_EQ(copies[0]->bytes, 0u);  // AMD copies may lack bytes
  EXPECT_EQ(copies[1]->copy_kind(), CopyKind::kHtoD);
  EXPECT_EQ(copies[1]->device, 2);
}

TEST(KinetoImporterTest, MemsetCarriesBytes) {
  const Trace t = import_json(wrap(R"j({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0,
      "tid": 20, "ts": 4, "dur": 1, "args": {"device": 0, "stream": 20, "correlation": 25, "bytes": 512}})j"));
  const Event& m = single(t, EventKind::kMemset);
  EXPECT_EQ(m.bytes, 512u);
  EXPECT_EQ(m.stream, 20u);
  EXPECT_EQ(m.correlation, 25u);
  EXPECT_TRUE(m.is_gpu_record());
}

// --- host calls and syncs -------------------------------------------------------------------

TEST(KinetoImporterTest, RuntimeAndDriverCallsAreClassified) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 948300, "tid": 948301,
       "ts": 10, "dur": 3, "args": {"cbid": 211, "correlation": 1482}},
      {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1, "tid": 2, "ts": 20, "dur": 1,
       "args": {"cbid": 307, "correlation": 1483}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 2, "ts": 30, "dur": 1,
       "args": {"correlation": 1484}},
      {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 1, "tid": 2, "ts": 40, "dur": 60,
       "args": {"stream": "0x0", "correlation": 117, "size": "2560", "kind": "1"}},
      {"ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 1, "tid": 2, "ts": 50, "dur": 1,
       "args": {"correlation": 118}})j"));
  const std::vector<const Event*> calls = events_of(t, EventKind::kApiCall);
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0]->api_class(), ApiClass::kLaunch);
  EXPECT_EQ(calls[0]->thread, 948301u);
  EXPECT_EQ(calls[0]->correlation, 1482u);
  EXPECT_EQ(calls[0]->device, -1);
  EXPECT_EQ(calls[1]->api_class(), ApiClass::kLaunch);
  EXPECT_EQ(calls[2]->api_class(), ApiClass::kStreamSync);
  EXPECT_EQ(calls[3]->api_class(), ApiClass::kMemcpySync);
  EXPECT_EQ(calls[3]->correlation, 117u);
  EXPECT_EQ(calls[4]->api_class(), ApiClass::kLaunch);
}

TEST(KinetoImporterTest, SyncRecordsTakeTheirKindFromArgsOrName) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1, "dur": 9,
       "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 15, "device": 0}},
      {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": -1, "ts": 2, "dur": 4,
       "args": {"cuda_sync_kind": "Event Sync", "stream": -1, "correlation": 24, "device": 0}},
      {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 3, "dur": 9,
       "args": {"cuda_sync_kind": "Context Sync", "stream": 4294967295, "correlation": 225, "device": 0}},
      {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 20, "ts": 4, "dur": 3,
       "args": {"stream": 20, "correlation": 5170, "device": 0}},
      {"ph": "X", "cat": "cuda_sync", "name": "Device Sync", "pid": 1, "tid": 7, "ts": 5, "dur": 1, "args": {}})j"));
  const std::vector<const Event*> syncs = events_of(t, EventKind::kSync);
  ASSERT_EQ(syncs.size(), 5u);
  EXPECT_EQ(syncs[0]->sync_kind(), SyncKind::kStream);
  EXPECT_EQ(syncs[0]->stream, 7u);
  EXPECT_EQ(syncs[0]->correlation, 15u);
  EXPECT_EQ(syncs[0]->thread, 0u);  // pid/tid of a sync record are device/stream, not a host thread
  EXPECT_EQ(syncs[1]->sync_kind(), SyncKind::kEvent);
  EXPECT_EQ(syncs[2]->sync_kind(), SyncKind::kContext);
  // "No stream" is -1 in some Kineto versions and 4294967295 in others; both mean the same.
  EXPECT_EQ(syncs[1]->stream, std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(syncs[2]->stream, std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(syncs[3]->sync_kind(), SyncKind::kStreamWaitEvent);  // from the name: args lack the kind
  EXPECT_EQ(syncs[4]->sync_kind(), SyncKind::kContext);
  EXPECT_EQ(syncs[4]->device, 1);
}

// --- ranges ------------------------------------------------------------------------------------

TEST(KinetoImporterTest, HostAndGpuRangesOverheadAndPythonFrames) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 10, "tid": 11, "ts": 0, "dur": 100,
       "args": {"External id": 1}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 12, "ts": 5, "dur": 10,
       "args": {"Input Dims": [[2, 3], [3, 4]]}},
      {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#2", "pid": 0, "tid": 7, "ts": 6, "dur": 90,
       "args": {"External id": 1}},
      {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 10, "tid": 11, "ts": 1, "dur": 2},
      {"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0, "ts": 3, "dur": 1})j"));
  ASSERT_EQ(t.events.size(), 5u);
  // A python_function is a frame of its thread (call sites), never a range.
  const std::vector<const Event*> frames = events_of(t, EventKind::kPythonFrame);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(name_of(t, *frames[0]), "train.py(12): step");
  EXPECT_EQ(frames[0]->thread, 11u);
  EXPECT_EQ(frames[0]->start_ns, 1'000);
  EXPECT_EQ(frames[0]->end_ns, 3'000);
  const std::vector<const Event*> ranges = events_of(t, EventKind::kRange);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(name_of(t, *ranges[0]), "ProfilerStep#2");
  EXPECT_EQ(ranges[0]->thread, 11u);
  EXPECT_FALSE(ranges[0]->has_flag(event_flags::kOnDevice));
  EXPECT_EQ(ranges[0]->end_ns, 100'000);
  EXPECT_EQ(name_of(t, *ranges[1]), "aten::mm");
  EXPECT_EQ(ranges[1]->thread, 12u);
  EXPECT_TRUE(ranges[2]->has_flag(event_flags::kOnDevice));
  EXPECT_EQ(ranges[2]->stream, 7u);
  EXPECT_EQ(ranges[2]->device, 0);
  EXPECT_EQ(ranges[2]->thread, 0u);
  EXPECT_EQ(name_of(t, single(t, EventKind::kOverhead)), "Activity Buffer Request");
}

// --- format variants ---------------------------------------------------------------------------

TEST(KinetoImporterTest, Accepts2021CategoriesCaseInsensitivelyWithStringStreamTids) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "Operator", "name": "ProfilerStep#1", "pid": 5, "tid": 6, "ts": 0, "dur": 50},
      {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 6, "ts": 1, "dur": 2,
       "args": {"correlation": 9}},
      {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 3, "dur": 4,
       "args": {"correlation": 9}},
      {"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": "stream 7",
       "ts": 8, "dur": 1, "args": {"bytes": 4}},
      {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 9, "dur": 1},
      {"ph": "X", "cat": "KERNEL", "name": "k2", "pid": 0, "tid": 7, "ts": 10, "dur": 1},
      {"ph": "X", "cat": "Cuda_Runtime", "name": "cudaDeviceSynchronize", "pid": 5, "tid": 6, "ts": 11, "dur": 1})j"));
  EXPECT_EQ(events_of(t, EventKind::kRange).size(), 1u);
  const std::vector<const Event*> calls = events_of(t, EventKind::kApiCall);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]->api_class(), ApiClass::kLaunch);
  EXPECT_EQ(calls[1]->api_class(), ApiClass::kDeviceSync);
  const std::vector<const Event*> kernels = events_of(t, EventKind::kKernel);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]->stream, 7u);
  EXPECT_EQ(kernels[0]->device, 0);
  EXPECT_EQ(kernels[0]->correlation, 9u);
  const Event& copy = single(t, EventKind::kMemcpy);
  EXPECT_EQ(copy.copy_kind(), CopyKind::kDtoH);
  EXPECT_EQ(copy.dst_memory, MemoryKind::kPinned);
  EXPECT_EQ(copy.stream, 7u);
  EXPECT_EQ(single(t, EventKind::kMemset).stream, 7u);
}

TEST(KinetoImporterTest, StringThreadIdsAreHashedStablyAndNumericStringsParsed) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "cpu_op", "name": "a", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 1},
      {"ph": "X", "cat": "cpu_op", "name": "b", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 2, "dur": 1},
      {"ph": "X", "cat": "cpu_op", "name": "c", "pid": "Spans", "tid": "other thread", "ts": 3, "dur": 1},
      {"ph": "X", "cat": "cpu_op", "name": "d", "pid": "1", "tid": "1234", "ts": 4, "dur": 1})j"));
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_NE(t.events[0].thread, 0u);
  EXPECT_EQ(t.events[0].thread, t.events[1].thread);
  EXPECT_NE(t.events[0].thread, t.events[2].thread);
  EXPECT_EQ(t.events[3].thread, 1234u);
  // Stable across runs and builds: FNV-1a, not std::hash.
  EXPECT_EQ(import_json(wrap(R"j({"ph": "X", "cat": "cpu_op", "name": "a", "tid": "PyTorch Profiler",
      "ts": 1, "dur": 1})j")).events.at(0).thread, t.events[0].thread);
}

TEST(KinetoImporterTest, BareArrayTopLevel) {
  const Trace t = import_json(R"j([
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1},
      {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "python3"}}])j");
  EXPECT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.rank, -1);
  EXPECT_EQ(t.format, "kineto");
  EXPECT_EQ(t.source, "inline.json");
}

TEST(KinetoImporterTest, IgnoresEverythingButCompleteEvents) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "s", "id": 14, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g"},
      {"ph": "f", "id": 14, "pid": 0, "tid": 7, "ts": 2, "cat": "ac2g", "name": "ac2g", "bp": "e"},
      {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "main"}},
      {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3},
      {"ph": "B", "cat": "cpu_op", "name": "begin", "pid": 1, "tid": 1, "ts": 4},
      {"ph": "i", "cat": "kernel", "name": "not complete", "pid": 1, "tid": 1, "ts": 5},
      {"ph": "X", "cat": "Trace", "ts": 0, "dur": 9, "pid": "Spans", "tid": "PyTorch Profiler",
       "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": 1, "tid": 1, "ts": 6, "dur": 1})j"));
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].api_class(), ApiClass::kFree);
}

TEST(KinetoImporterTest, FieldOrderDoesNotMatter) {
  const Trace t = import_json(wrap(R"j({"args": {"stream": 3, "device": 1, "correlation": 4}, "dur": 2,
      "ts": 1, "tid": 9, "pid": 9, "name": "k", "cat": "kernel", "ph": "X"})j"));
  const Event& k = single(t, EventKind::kKernel);
  EXPECT_EQ(k.stream, 3u);
  EXPECT_EQ(k.device, 1);
  EXPECT_EQ(k.correlation, 4u);
  EXPECT_EQ(k.end_ns, 3'000);
}

TEST(KinetoImporterTest, MissingOrMistypedFieldsSkipTheEventOrUseDefaults) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "kernel", "name": "no ts", "pid": 0, "tid": 7, "dur": 1},
      {"ph": "X", "cat": "kernel", "name": "ts is null", "ts": null, "dur": 1},
      {"ph": "X", "cat": "kernel", "name": "ts is text", "ts": "garbage", "dur": 1},
      {"ph": "X", "name": "no cat", "ts": 1, "dur": 1},
      {"ph": "X", "cat": 7, "name": "cat is a number", "ts": 1, "dur": 1},
      {"ph": 88, "cat": "kernel", "name": "ph is a number", "ts": 1, "dur": 1},
      "not an object", 42, null, [1, 2],
      {"ph": "X", "cat": "kernel", "name": "ts as string", "ts": "12.5", "dur": "1"},
      {"ph": "X", "cat": "kernel", "name": "no dur", "ts": 20},
      {"ph": "X", "cat": "kernel", "name": "negative dur", "ts": 30, "dur": -5},
      {"ph": "X", "cat": "kernel", "name": 12, "ts": 40, "dur": 1, "args": "not an object"},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 50, "dur": 1,
       "pid": "gpu", "tid": {"nested": true}, "args": {"device": "2", "stream": 3.0, "bytes": "4096",
       "correlation": [1]}})j"));
  const std::vector<const Event*> kernels = events_of(t, EventKind::kKernel);
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(name_of(t, *kernels[0]), "ts as string");
  EXPECT_EQ(kernels[0]->start_ns, 12'500);
  EXPECT_EQ(kernels[0]->end_ns, 13'500);
  EXPECT_EQ(kernels[1]->duration_ns(), 0);  // no dur: an instant
  EXPECT_EQ(name_of(t, *kernels[2]), "");
  EXPECT_EQ(kernels[2]->device, -1);
  // Records of known categories whose phase or times cannot be used are counted, never silent
  // (the record without a category is not one of ours and is not counted; ph 88 is no phase).
  const std::map<std::string, uint64_t, std::less<>> skipped = {
      {"missing_ph", 1}, {"missing_ts", 2}, {"negative_duration", 1}, {"unparsable_ts", 1}};
  EXPECT_EQ(t.skipped, skipped);
  const Event& copy = single(t, EventKind::kMemcpy);
  EXPECT_EQ(copy.device, 2);
  EXPECT_EQ(copy.stream, 3u);
  EXPECT_EQ(copy.bytes, 4096u);
  EXPECT_EQ(copy.correlation, 0u);
}

TEST(KinetoImporterTest, TimestampsAreExactNanoseconds) {
  // Epoch microseconds with ns decimals have 19 significant digits: more than a double holds.
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "kernel", "name": "a", "ts": 1712195495502094.565, "dur": 35115.869},
      {"ph": "X", "cat": "kernel", "name": "b", "ts": 1695835542514261, "dur": 43425283},
      {"ph": "X", "cat": "kernel", "name": "c", "ts": 1.0005, "dur": 0.0004},
      {"ph": "X", "cat": "kernel", "name": "d", "ts": 1.5e3, "dur": 2E-3},
      {"ph": "X", "cat": "kernel", "name": "e", "ts": -2.5, "dur": 1})j"));
  ASSERT_EQ(t.events.size(), 5u);
  EXPECT_EQ(t.events[0].start_ns, 1712195495502094565);
  EXPECT_EQ(t.events[0].duration_ns(), 35115869);
  EXPECT_EQ(t.events[1].start_ns, 1695835542514261000);
  EXPECT_EQ(t.events[1].duration_ns(), 43425283000);
  EXPECT_EQ(t.events[2].start_ns, 1001);  // rounds half away from zero, like llround
  EXPECT_EQ(t.events[2].duration_ns(), 0);
  EXPECT_EQ(t.events[3].start_ns, 1'500'000);
  EXPECT_EQ(t.events[3].duration_ns(), 2);
  EXPECT_EQ(t.events[4].start_ns, -2'500);
}

// Issue 17: events whose ts/dur did not parse vanished without a count, and the analysis was then
// confidently wrong ("GPU busy 0%, findings: none"). Exponent forms are numbers and import; every
// time that cannot be used (overflow, NaN and infinities, negative or day-long durations, times
// past the time domain, values of the wrong type) is counted by reason.
TEST(KinetoImporterTest, EveryUnusableTimeIsCountedByReason) {
  const Trace t = import_json(wrap(R"j(
      {"ph": "X", "cat": "kernel", "name": "ok", "ts": 10, "dur": 5},
      {"ph": "X", "cat": "kernel", "name": "exponent forms", "ts": 1.2e1, "dur": 5E-1},
      {"ph": "X", "cat": "kernel", "name": "ts overflows", "ts": 1e300, "dur": 1},
      {"ph": "X", "cat": "kernel", "name": "ts past int64 ns", "ts": 99999999999999999999, "dur": 1},
      {"ph": "X", "cat": "kernel", "name": "NaN ts", "ts": "NaN", "dur": 1},
      {"ph": "X", "cat": "cuda_runtime", "name": "ts is an object", "ts": {"v": 1}, "dur": 1},
      {"ph": "X", "cat": "kernel", "name": "dur overflows", "ts": 1, "dur": 1e300},
      {"ph": "X", "cat": "kernel", "name": "NaN dur", "ts": 1, "dur": "nan"},
      {"ph": "X", "cat": "kernel", "name": "infinite dur", "ts": 1, "dur": "-Infinity"},
      {"ph": "X", "cat": "cuda_runtime", "name": "dur is true", "ts": 1, "dur": true},
      {"ph": "X", "cat": "kernel", "name": "negative dur", "ts": 1, "dur": -0.5},
      {"ph": "X", "cat": "kernel", "name": "past 2^62 ns", "ts": 5e15, "dur": 1},
      {"ph": "X", "cat": "kernel", "name": "longer than a day", "ts": 1, "dur": 9e10})j"));
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[1].start_ns, 12'000);
  EXPECT_EQ(t.events[1].duration_ns(), 500);
  const std::map<std::string, uint64_t, std::less<>> skipped = {
      {"duration_over_a_day", 1}, {"negative_duration", 1}, {"timestamp_out_of_range", 1},
      {"unparsable_dur", 4},      {"unparsable_ts", 4}};
  EXPECT_EQ(t.skipped, skipped);
}

TEST(KinetoImporterTest, RankAndDeviceNameFromTheHeader) {
  const Trace t = import_json(R"j({"schemaVersion": 1,
      "deviceProperties": [{"id": 0, "name": "NVIDIA A100-PG509-200", "totalGlobalMem": 1},
                           {"id": 1, "name": "second"}],
      "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
      "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}],
      "traceName": "x"})j");
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.device_name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(t.events.size(), 1u);

  const Trace bare = import_json(R"j({"traceEvents": [], "distributedInfo": {"rank": "x"}, "deviceProperties": []})j");
  EXPECT_EQ(bare.rank, -1);
  EXPECT_EQ(bare.device_name, "");
}

TEST(KinetoImporterTest, HeaderAfterTheEventsIsStillRead) {
  const Trace t = import_json(R"j({"traceEvents": [], "distributedInfo": {"rank": 1},
      "deviceProperties": [{"name": "NVIDIA B200"}]})j");
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.device_name, "NVIDIA B200");
}

TEST(KinetoImporterTest, EscapedNamesAreUnescaped) {
  const Trace t = import_json(wrap(R"j({"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9", "ts": 1, "dur": 1})j"));
  EXPECT_EQ(name_of(t, single(t, EventKind::kRange)), "a\"b\\c\xc3\xa9");
}

// --- malformed text ----------------------------------------------------------------------------

TEST(KinetoImporterTest, TruncatedJsonThrowsWithTheSourceAndAnOffset) {
  const std::string full = wrap(R"j({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1})j");
  for (const size_t cut : {full.size() - 1, full.size() - 3, size_t{20}}) {
    try {
      import_kineto_json(std::string_view(full).substr(0, cut), "cut.json");
      ADD_FAILURE() << "no error for a cut at " << cut;
    } catch (const ImportError& e) {
      EXPECT_EQ(e.file(), "cut.json");
      EXPECT_GE(e.offset(), 0) << e.what();
      EXPECT_LE(e.offset(), static_cast<int64_t>(cut)) << e.what();
      EXPECT_NE(std::string(e.what()).find("cut.json"), std::string::npos);
    }
  }
}

TEST(KinetoImporterTest, MalformedJsonReportsWhere) {
  try {
    import_json(R"j({"traceEvents": [{"ph": "X", "cat": "kernel",, "ts": 1}]})j");
    FAIL() << "no error";
  } catch (const ImportError& e) {
    EXPECT_GT(e.offset(), 0) << e.what();
  }
}

TEST(KinetoImporterTest, NonTraceInputsThrow) {
  EXPECT_THROW(import_json(""), ImportError);
  EXPECT_THROW(import_json("   \n"), ImportError);
  EXPECT_THROW(import_json("hello, world"), ImportError);
  EXPECT_THROW(import_json("42"), ImportError);
  EXPECT_THROW(import_json(R"j({"not": "a trace"})j"), ImportError);
  EXPECT_THROW(import_json(R"j({"traceEvents": {}})j"), ImportError);
  EXPECT_THROW(import_json(R"j([{"ph": "X"}] ])j"), ImportError);  // content after the document
  EXPECT_NO_THROW(import_json("[]"));
  EXPECT_NO_THROW(import_json(R"j({"traceEvents": []})j"));
}

// Every prefix and many single-byte corruptions of a realistic trace either import or throw
// ImportError: never a crash, never another exception.
TEST(KinetoImporterTest, DamagedInputNeverCrashes) {
  const std::string full = R"j({"schemaVersion": 1, "deviceProperties": [{"name": "GPU"}],
    "distributedInfo": {"rank": 0}, "traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3,
     "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "k\u0041", "pid": 0, "tid": 7, "ts": 14, "dur": 2.25,
     "args": {"device": 0, "stream": 7, "correlation": 5, "grid": [1, 2, 3]}},
    {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 14, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 17, "dur": 1,
     "args": {"cuda_sync_kind": "Stream Sync", "stream": 7}}]})j";
  size_t imported = 0;
  for (size_t cut = 0; cut < full.size(); ++cut) {
    try {
      import_kineto_json(std::string_view(full).substr(0, cut), "prefix.json");
      ++imported;
    } catch (const ImportError&) {
    }
  }
  EXPECT_EQ(imported, 0u) << "a strict prefix of an object is never a complete document";

  std::mt19937 rng(12345);
  const std::string junk = "{}[],:\"\\0123456789.eE-+ tfnx\x80\xff";
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = full;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < edits; ++i) damaged[rng() % damaged.size()] = junk[rng() % junk.size()];
    try {
      import_kineto_json(damaged, "damaged.json");
    } catch (const ImportError&) {
    }
  }
}

// --- files and gzip ----------------------------------------------------------------------------

class KinetoImporterFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kineto_importer_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, std::string_view bytes) const {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }

  static std::string gzip(std::string_view text) {
    z_stream zs{};
    EXPECT_EQ(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 32, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    zs.avail_in = static_cast<uInt>(text.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    return out;
  }

  static std::string sample_trace() {
    std::string events;
    for (int i = 0; i < 2000; ++i) {
      if (i > 0) events += ",";
      events += R"j({"ph": "X", "cat": "kernel", "name": "kernel_)j" + std::to_string(i % 7) +
                R"j(", "pid": 0, "tid": 7, "ts": )j" + std::to_string(1000 + i * 10) +
                R"j(, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": )j" + std::to_string(i) + "}}";
    }
    return R"j({"distributedInfo": {"rank": 2}, "traceEvents": [)j" + events + "]}";
  }

  std::filesystem::path dir_;
};

TEST_F(KinetoImporterFileTest, PlainAndGzippedFilesImportTheSame) {
  const std::string text = sample_trace();
  const std::string plain = write("trace.json", text);
  const std::string gz = write("trace.json.gz", gzip(text));
  const std::string gz_without_suffix = write("trace.bin", gzip(text));  // detected by magic bytes

  EXPECT_EQ(read_file_maybe_gzip(plain), text);
  EXPECT_EQ(read_file_maybe_gzip(gz), text);
  EXPECT_EQ(read_file_maybe_gzip(gz_without_suffix), text);
  const Trace a = import_kineto_file(plain);
  const Trace b = import_kineto_file(gz);
  EXPECT_EQ(a.events.size(), 2000u);
  EXPECT_EQ(b.events.size(), 2000u);
  EXPECT_EQ(b.rank, 2);
  EXPECT_EQ(b.source, gz);
  EXPECT_EQ(b.events.back().correlation, 1999u);
}

TEST_F(KinetoImporterFileTest, MultiMemberGzipIsReadWhole) {
  const std::string text = sample_trace();
  const size_t half = text.size() / 2;
  const std::string path = write("multi.json.gz", gzip(text.substr(0, half)) + gzip(text.substr(half)));
  EXPECT_EQ(read_file_maybe_gzip(path), text);
  EXPECT_EQ(import_kineto_file(path).events.size(), 2000u);
}

TEST_F(KinetoImporterFileTest, HighlyCompressibleGzipGrowsItsBuffer) {
  // Past 64:1 the size trailer is not trusted as a first guess: the buffer starts smaller and grows.
  const std::string text = "[" + std::string(4u << 20, ' ') +
                           R"j({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}])j";
  const std::string path = write("spaces.json.gz", gzip(text));
  EXPECT_EQ(read_file_maybe_gzip(path), text);
  EXPECT_EQ(import_kineto_file(path).events.size(), 1u);
}

TEST_F(KinetoImporterFileTest, GzipWithACorruptSizeTrailerThrows) {
  std::string gz = gzip(sample_trace());
  gz[gz.size() - 4] = 1;
  gz[gz.size() - 3] = 0;
  gz[gz.size() - 2] = 0;
  gz[gz.size() - 1] = 0;
  EXPECT_THROW(read_file_maybe_gzip(write("lying.json.gz", gz)), ImportError);
}

TEST_F(KinetoImporterFileTest, TruncatedOrCorruptGzipThrows) {
  const std::string gz = gzip(sample_trace());
  for (const size_t keep : {gz.size() - 1, gz.size() / 2, size_t{12}, size_t{2}}) {
    const std::string path = write("cut.json.gz", gz.substr(0, keep));
    try {
      read_file_maybe_gzip(path);
      ADD_FAILURE() << "no error when keeping " << keep << " bytes";
    } catch (const ImportError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos) << e.what();
    }
  }
  std::string corrupt = gz;
  for (size_t i = 20; i < 60 && i < corrupt.size(); ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  EXPECT_THROW(read_file_maybe_gzip(write("corrupt.json.gz", corrupt)), ImportError);
}

TEST_F(KinetoImporterFileTest, TruncatedJsonInsideGzipThrowsWithOffset) {
  const std::string text = sample_trace();
  const std::string path = write("cut_json.json.gz", gzip(text.substr(0, text.size() - 10)));
  try {
    import_kineto_file(path);
    FAIL() << "no error";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_GE(e.offset(), 0);
  }
}

TEST_F(KinetoImporterFileTest, UnreadableEmptyAndNonJsonFilesThrow) {
  const std::string missing = (dir_ / "does_not_exist.json").string();
  try {
    import_kineto_file(missing);
    FAIL() << "no error";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.file(), missing);
    EXPECT_NE(std::string(e.what()).find("does_not_exist.json"), std::string::npos);
  }
  EXPECT_THROW(import_kineto_file(dir_.string()), ImportError);  // a directory
  EXPECT_THROW(import_kineto_file(write("empty.json", "")), ImportError);
  EXPECT_THROW(import_kineto_file(write("text.json", "this is not JSON\n")), ImportError);
  EXPECT_THROW(import_kineto_file(write("empty.json.gz", gzip(""))), ImportError);
}

}  // namespace
}  // namespace stepwatch
