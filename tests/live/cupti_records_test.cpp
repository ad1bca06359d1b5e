// Record conversion through the REAL cuptiActivityGetNextRecord (libcupti.so.13 and .12 work
// without a driver for parsing: CUPTI_NOTES §9), fed with records of that library's own layout.
// STEPWATCH_TEST_REAL_CUPTI names another release's library (the per-version runs of
// tests/CMakeLists.txt: each CUPTI in the layout table whose parser runs without a GPU).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cupti/cupti_adapter.h"
#include "cupti/cupti_api.h"
#include "cupti/cupti_records.h"
#include "cupti/layout_check.h"
#include "cupti/cupti_record_builder.h"
#include "recording_sink.h"
#include "stepwatch/core/event.h"

namespace stepwatch::live {
namespace {

using test_support::RecordingSink;

std::string test_cupti_path() {
  const char* env = std::getenv("STEPWATCH_TEST_REAL_CUPTI");
  return env != nullptr && *env != '\0' ? env : STEPWATCH_DEFAULT_CUPTI_DIR "/libcupti.so.13";
}

const CuptiApi& real_cupti() {
  static const CuptiApi* api = [] {
    auto* a = new CuptiApi();
    std::string error;
    // By its file: in this process the fake (soname libcupti.so.13) may be loaded already.
    if (!open_cupti_library(test_cupti_path(), *a, error)) {
      ADD_FAILURE() << "real libcupti not found: " << error;
    }
    return a;
  }();
  return *api;
}

// The layout of the library under test: every record here is built at its sizes.
const RecordLayout& test_layout() {
  static const RecordLayout* layout = [] {
    uint32_t version = 0;
    if (real_cupti().cuptiGetVersion != nullptr) real_cupti().cuptiGetVersion(&version);
    const RecordLayout* l = record_layout(version);
    if (l == nullptr) ADD_FAILURE() << test_cupti_path() << ": CUPTI API version " << version << " is not in the table";
    return l != nullptr ? l : &compiled_record_layout();
  }();
  return *layout;
}

class CuptiRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(real_cupti().cuptiActivityGetNextRecord, nullptr); }
  BufferParseResult parse(ActivityBufferBuilder& b) { return converter_.parse(b.data(), b.size()); }

  CuptiRecordsTest() { converter_.set_layout(test_layout()); }

  RecordingSink sink_;
  RecordConverter converter_{real_cupti(), sink_};
};

TEST(CuptiApiTest, LoadsTheRealLibcupti) {
  CuptiApi api;
  std::string error;
  ASSERT_TRUE(load_cupti_api("", api, error)) << error;
  EXPECT_TRUE(api.complete());
  EXPECT_FALSE(api.library_path.empty());
  EXPECT_TRUE(error.empty());
  uint32_t version = 0;
  ASSERT_EQ(api.cuptiGetVersion(&version), CUPTI_SUCCESS);
  // The toolkit's 13.0, or — in a per-version run — the release this process loaded first.
  EXPECT_NE(record_layout(version), nullptr) << version;
}

TEST(CuptiApiTest, ExplicitPathFirstThenFallbackWithANote) {
  CuptiApi api;
  std::string error;
  ASSERT_TRUE(load_cupti_api("/nonexistent/libcupti.so.13", api, error));
  EXPECT_NE(api.library_path, "/nonexistent/libcupti.so.13");
  EXPECT_NE(error.find("/nonexistent/libcupti.so.13"), std::string::npos) << error;
}

TEST(CuptiApiTest, ResolveNamesMissingSymbols) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(libc, nullptr);
  CuptiApi api;
  std::string error;
  EXPECT_FALSE(resolve_cupti_api(libc, api, error));
  EXPECT_NE(error.find("cuptiSubscribe_v2"), std::string::npos) << error;
  EXPECT_FALSE(api.complete());
}

std::vector<std::string> g_logged;
void capture_log(std::string_view line) noexcept { g_logged.emplace_back(line); }

TEST(CuptiApiTest, ErrorCheckLogsCallFileLineAndResultAndRateLimitsPerSite) {
  g_logged.clear();
  set_cupti_log(&capture_log);
  std::atomic<uint32_t> site{0};
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(cupti_check(real_cupti(), CUPTI_ERROR_NOT_INITIALIZED, "cuptiActivityEnable(kind)", "/x/y/z.cpp", 12,
                          site),
              CUPTI_ERROR_NOT_INITIALIZED);
  }
  EXPECT_EQ(cupti_check(real_cupti(), CUPTI_SUCCESS, "ok()", "z.cpp", 1, site), CUPTI_SUCCESS);
  set_cupti_log(nullptr);
  ASSERT_EQ(g_logged.size(), 5u);  // the first 3, then the 1000th and 2000th with a count
  EXPECT_EQ(g_logged[0], "CUPTI call failed: cuptiActivityEnable(kind) -> CUPTI_ERROR_NOT_INITIALIZED (15) at z.cpp:12");
  EXPECT_NE(g_logged[3].find("(1000 failures at this site)"), std::string::npos) << g_logged[3];
}

TEST(CuptiApiTest, ErrorMacroReturnsTheStatusAndNamesTheCall) {
  CuptiApi api = real_cupti();
  api.cuptiActivityEnable = [](CUpti_ActivityKind) -> CUptiResult { return CUPTI_ERROR_NOT_INITIALIZED; };
  g_logged.clear();
  set_cupti_log(&capture_log);
  EXPECT_EQ(SW_CUPTI_CALL(api, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)), CUPTI_ERROR_NOT_INITIALIZED);
  api.cuptiActivityEnable = [](CUpti_ActivityKind) -> CUptiResult { return CUPTI_SUCCESS; };
  EXPECT_EQ(SW_CUPTI_CALL(api, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)), CUPTI_SUCCESS);
  set_cupti_log(nullptr);
  // The per-site count survives --gtest_repeat: logged on the first runs only.
  ASSERT_LE(g_logged.size(), 1u);
  if (!g_logged.empty()) {
    EXPECT_NE(g_logged[0].find("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)"), std::string::npos) << g_logged[0];
    EXPECT_NE(g_logged[0].find("cupti_records_test.cpp:"), std::string::npos) << g_logged[0];
  }
}

TEST_F(CuptiRecordsTest, KernelBecomesAKernelEvent) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  static const char kName[] = "_Z6gemm_kIfEvPKT_";
  b.kernel(kName, 1'000, 3'500, 42, /*device=*/1, /*stream=*/13);
  const BufferParseResult r = parse(b);
  EXPECT_EQ(r.records, 1u);
  EXPECT_EQ(r.events, 1u);
  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 1u);
  const Event& e = events[0];
  EXPECT_EQ(e.kind, EventKind::kKernel);
  EXPECT_EQ(e.start_ns, 1'000);
  EXPECT_EQ(e.end_ns, 3'500);
  EXPECT_EQ(e.correlation, 42u);
  EXPECT_EQ(e.device, 1);
  EXPECT_EQ(e.stream, 13u);
  EXPECT_EQ(sink_.name(e.name), kName);
  EXPECT_EQ(e.collective, CollectiveType::kNone);
}

TEST_F(CuptiRecordsTest, NcclKernelsAreCollectives) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.kernel("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE", 10, 20, 1);
  b.kernel("_Z24ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE", 30, 40, 2);
  parse(b);
  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].collective, CollectiveType::kAllReduce);
  EXPECT_EQ(events[1].collective, CollectiveType::kAllGather);
}

TEST_F(CuptiRecordsTest, RepeatedKernelNamesInternOnceAndDifferentNamesStayApart) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  const std::string a = "_Z1av", c = "_Z1cv";
  for (int i = 0; i < 100; ++i) b.kernel((i % 2 == 0 ? a : c).c_str(), 10 + i, 20 + i, static_cast<uint32_t>(i));
  parse(b);
  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 100u);
  EXPECT_NE(events[0].name, events[1].name);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].name, events[i % 2].name);
  EXPECT_EQ(sink_.name(events[0].name), a);
  EXPECT_EQ(sink_.name(events[1].name), c);
}

TEST_F(CuptiRecordsTest, MemcpyCarriesKindMemoryBytesAsyncAndTheRuntimeCorrelation) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
           /*async=*/true, 64 << 20, 100, 900, /*corr=*/7, /*runtime corr=*/77, 0, 3);
  b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
           /*async=*/false, 4096, 1000, 1100, /*corr=*/8, /*runtime corr=*/0);
  b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED,
           true, 1, 1200, 1300, 9);
  b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
           false, 1, 1400, 1500, 10);
  parse(b);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].kind, EventKind::kMemcpy);
  EXPECT_EQ(ev[0].copy_kind(), CopyKind::kHtoD);
  EXPECT_EQ(ev[0].src_memory, MemoryKind::kPageable);
  EXPECT_EQ(ev[0].dst_memory, MemoryKind::kDevice);
  EXPECT_EQ(ev[0].bytes, uint64_t{64} << 20);
  EXPECT_TRUE(ev[0].has_flag(event_flags::kAsync));
  EXPECT_EQ(ev[0].correlation, 77u);  // the runtime correlation when there is one
  EXPECT_EQ(ev[0].stream, 3u);
  EXPECT_EQ(ev[0].start_ns, 100);
  EXPECT_EQ(ev[0].end_ns, 900);
  EXPECT_EQ(ev[1].copy_kind(), CopyKind::kDtoH);
  EXPECT_EQ(ev[1].dst_memory, MemoryKind::kPinned);
  EXPECT_FALSE(ev[1].has_flag(event_flags::kAsync));
  EXPECT_EQ(ev[1].correlation, 8u);  // else the driver correlation
  EXPECT_EQ(ev[2].copy_kind(), CopyKind::kDtoD);
  EXPECT_EQ(ev[2].dst_memory, MemoryKind::kManaged);
  EXPECT_EQ(ev[3].copy_kind(), CopyKind::kHtoH);
}

TEST_F(CuptiRecordsTest, PeerCopyIsAPtoPMemcpy) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.peer_memcpy(1 << 20, 50, 60, 11, /*src=*/0, /*dst=*/1);
  parse(b);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, EventKind::kMemcpy);
  EXPECT_EQ(ev[0].copy_kind(), CopyKind::kPtoP);
  EXPECT_EQ(ev[0].bytes, uint64_t{1} << 20);
  EXPECT_EQ(ev[0].correlation, 11u);
  EXPECT_EQ(ev[0].src_memory, MemoryKind::kDevice);
  EXPECT_TRUE(ev[0].has_flag(event_flags::kAsync));
}

TEST_F(CuptiRecordsTest, MemsetBecomesAMemsetEvent) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.memset(256, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, /*async=*/true, 5, 6, 12, 2, 9);
  b.memset(128, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, /*async=*/false, 7, 8, 13);
  parse(b);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, EventKind::kMemset);
  EXPECT_EQ(ev[0].bytes, 256u);
  EXPECT_EQ(ev[0].device, 2);
  EXPECT_EQ(ev[0].stream, 9u);
  EXPECT_EQ(ev[0].correlation, 12u);
  EXPECT_TRUE(ev[0].has_flag(event_flags::kAsync));
  EXPECT_FALSE(ev[1].has_flag(event_flags::kAsync));
}

TEST_F(CuptiRecordsTest, SynchronizationRecordsCarryTheirKind) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 10, 20, 1);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 30, 31, 2, 5);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 40, 90, 3, 7);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 100, 200, 4);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN, 300, 301, 5);
  parse(b);
  // No API record to pair them with in this buffer: held for it two flushes, then submitted as
  // they are (sync_pairing.h).
  EXPECT_EQ(sink_.event_count(), 0u);
  EXPECT_EQ(converter_.oldest_held_ns(), 10);
  converter_.tick();
  converter_.tick();
  auto ev = sink_.events();
  std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& c) { return a.start_ns < c.start_ns; });
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(converter_.oldest_held_ns(), INT64_MAX);
  EXPECT_EQ(ev[0].kind, EventKind::kSync);
  EXPECT_EQ(ev[0].sync_kind(), SyncKind::kEvent);
  EXPECT_EQ(ev[0].stream, 0u);  // CUPTI_SYNCHRONIZATION_INVALID_VALUE -> none
  EXPECT_EQ(ev[1].sync_kind(), SyncKind::kStreamWaitEvent);
  EXPECT_EQ(ev[1].stream, 5u);
  EXPECT_EQ(ev[2].sync_kind(), SyncKind::kStream);
  EXPECT_EQ(ev[2].correlation, 3u);
  EXPECT_EQ(ev[2].start_ns, 40);
  EXPECT_EQ(ev[2].end_ns, 90);
  EXPECT_EQ(ev[3].sync_kind(), SyncKind::kContext);
  EXPECT_EQ(ev[4].sync_kind(), SyncKind::kUnknown);
}

TEST_F(CuptiRecordsTest, RuntimeAndDriverApiRecordsAreNamedAndClassified) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, 15, 111, 1);
  // CUDA 13's launch entry point where the library has it; CUDA 12's cudaLaunchKernelExC otherwise.
  const bool cuda13 = test_layout().major >= 13;
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME,
        cuda13 ? CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 : CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
        20, 25, 111, 2);
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000, 30, 80, 111, 3);
  b.api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, 31, 79, 111, 4);
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 90, 99, 222, 5);
  b.api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 100, 101, 222, 6);
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 110, 115, 333, 7);
  parse(b);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_EQ(ev[0].kind, EventKind::kApiCall);
  EXPECT_EQ(sink_.name(ev[0].name), "cudaLaunchKernel");  // CUPTI's _v7000 dropped
  EXPECT_EQ(ev[0].api_class(), ApiClass::kLaunch);
  EXPECT_EQ(ev[0].thread, 111u);
  EXPECT_EQ(ev[0].correlation, 1u);
  EXPECT_EQ(sink_.name(ev[1].name), cuda13 ? "__cudaLaunchKernel" : "cudaLaunchKernelExC");
  EXPECT_EQ(ev[1].api_class(), ApiClass::kLaunch);
  EXPECT_EQ(sink_.name(ev[2].name), "cudaStreamSynchronize_ptsz");
  EXPECT_EQ(ev[2].api_class(), ApiClass::kStreamSync);
  EXPECT_EQ(sink_.name(ev[3].name), "cuStreamSynchronize");
  EXPECT_EQ(ev[3].api_class(), ApiClass::kStreamSync);
  EXPECT_EQ(ev[4].api_class(), ApiClass::kMemcpySync);
  EXPECT_EQ(ev[4].thread, 222u);
  EXPECT_EQ(ev[5].api_class(), ApiClass::kLaunch);
  EXPECT_EQ(ev[6].name, ev[0].name);  // cached per (domain, cbid)
}

TEST_F(CuptiRecordsTest, UnknownCbidGivesAnUnnamedApiCall) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, 99999, 10, 15, 1, 1);
  parse(b);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].name, kNoName);
  EXPECT_EQ(ev[0].api_class(), ApiClass::kOther);
}

TEST_F(CuptiRecordsTest, MemoryRecordsAreAllocations) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 30, 5000, 21, 3);
  b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 30, 6000, 22, 3);
  parse(b);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, EventKind::kAllocation);
  EXPECT_EQ(ev[0].detail, 1);
  EXPECT_EQ(ev[0].bytes, uint64_t{1} << 30);
  EXPECT_EQ(ev[0].start_ns, 5000);
  EXPECT_EQ(ev[0].end_ns, 5000);
  EXPECT_EQ(ev[0].device, 3);
  EXPECT_EQ(ev[0].correlation, 21u);
  EXPECT_EQ(ev[1].detail, 2);
  EXPECT_EQ(ev[1].start_ns, 6000);
}

TEST_F(CuptiRecordsTest, OverheadRecordsAreConvertedAndTheirDataFreed) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  auto* r1 = b.overhead(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 100, 400, 0, /*overhead data=*/64);
  auto* r2 = b.overhead(CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL, 500, 600, 3, 16);
  ASSERT_NE(r1->overheadData, nullptr);
  const BufferParseResult r = parse(b);
  // The client owns overheadData: freed during the parse (ASan builds check the leak), and
  // cleared so that nothing can free it twice.
  EXPECT_EQ(r1->overheadData, nullptr);
  EXPECT_EQ(r2->overheadData, nullptr);
  EXPECT_EQ(r.cupti_overhead_ns, 400);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, EventKind::kOverhead);
  EXPECT_EQ(sink_.name(ev[0].name), "CUPTI overhead: buffer flush");
  EXPECT_EQ(sink_.name(ev[1].name), "CUPTI overhead: command buffer full");
  EXPECT_EQ(ev[1].correlation, 3u);
}

TEST_F(CuptiRecordsTest, ZeroTimestampsAreSkippedAndReportedOncePerBuffer) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.kernel("_Z1kv", 0, 0, 1);
  b.kernel("_Z1kv", 10, 20, 2);
  b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true,
           8, 0, 0, 3);
  b.memset(8, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 0, 0, 4);
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 0, 1, 5);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 0, 0, 6);
  b.overhead(CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE, 0, 0, 7, 8);
  b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 8, 0, 8);
  const BufferParseResult r = parse(b);
  EXPECT_EQ(r.records, 8u);
  EXPECT_EQ(r.events, 1u);
  EXPECT_EQ(r.zero_timestamp, 7u);
  EXPECT_EQ(sink_.event_count(), 1u);
  EXPECT_EQ(sink_.loss(LossKind::kZeroTimestamp), 7u);
  EXPECT_EQ(sink_.loss_calls(LossKind::kZeroTimestamp), 1u);
}

TEST_F(CuptiRecordsTest, AnIncompleteRecordStopsTheBufferAndIsReported) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.kernel("_Z1kv", 10, 20, 1);
  b.append_raw(/*not a CUPTI kind*/ 777, 64);
  b.kernel("_Z1kv", 30, 40, 2);  // unreachable: CUPTI cannot step over the bad record
  const BufferParseResult r = parse(b);
  EXPECT_TRUE(r.incomplete);
  EXPECT_EQ(r.events, 1u);
  // What follows the first record is skipped: counted in records, estimated at the mean size of the
  // records read before it (the bad one and the unreachable kernel).
  EXPECT_EQ(r.skipped_bytes, 64u + test_layout().kernel.bytes);
  EXPECT_EQ(sink_.loss(LossKind::kIncompleteRecord), 2u);
  EXPECT_EQ(sink_.loss_calls(LossKind::kIncompleteRecord), 1u);
}

TEST_F(CuptiRecordsTest, KindInvalidIsIncompleteToo) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.append_raw(CUPTI_ACTIVITY_KIND_INVALID, 40);
  const BufferParseResult r = parse(b);
  EXPECT_TRUE(r.incomplete);
  EXPECT_EQ(r.events, 0u);
  EXPECT_EQ(sink_.loss(LossKind::kIncompleteRecord), 1u);
}

TEST_F(CuptiRecordsTest, KindsOfOtherClientsAreIgnored) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  auto* marker = b.append<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  marker->timestamp = 10;
  b.kernel("_Z1kv", 10, 20, 1);
  const BufferParseResult r = parse(b);
  EXPECT_EQ(r.records, 2u);
  EXPECT_EQ(r.ignored, 1u);
  EXPECT_EQ(r.events, 1u);
  EXPECT_FALSE(r.incomplete);
}

TEST_F(CuptiRecordsTest, ValidSizeBoundsTheRecordsRead) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.kernel("_Z1kv", 10, 20, 1);
  b.kernel("_Z1kv", 30, 40, 2);
  const BufferParseResult r = converter_.parse(b.data(), test_layout().kernel.bytes);
  EXPECT_EQ(r.records, 1u);
  EXPECT_EQ(converter_.parse(b.data(), 0).records, 0u);
  EXPECT_EQ(converter_.parse(nullptr, 100).records, 0u);
}

TEST_F(CuptiRecordsTest, EveryKindInOneBuffer) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 2, 1, 1);
  b.kernel("_Z1kv", 3, 4, 1);
  b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true,
           8, 5, 6, 2);
  b.peer_memcpy(8, 7, 8, 3, 0, 1);
  b.memset(8, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 9, 10, 4);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 11, 12, 0);  // no API to pair: as it is
  b.api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 13, 14, 1, 6);
  b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 8, 15, 6);
  b.overhead(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, 16, 17, 0, 8);
  const BufferParseResult r = parse(b);
  EXPECT_EQ(r.records, 9u);
  EXPECT_EQ(r.events, 9u);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 9u);
  const EventKind expected[] = {EventKind::kApiCall, EventKind::kKernel,     EventKind::kMemcpy,
                                EventKind::kMemcpy,  EventKind::kMemset,     EventKind::kSync,
                                EventKind::kApiCall, EventKind::kAllocation, EventKind::kOverhead};
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(ev[i].kind, expected[i]) << i;
  EXPECT_EQ(ev[6].api_class(), ApiClass::kMalloc);
}

}  // namespace
}  // namespace stepwatch::live

// ---- issue 13: the records CUPTI really delivers -------------------------------------------------

namespace stepwatch::live {
namespace {

// A completed cudaEventQuery still leaves a SYNCHRONIZATION record (cupti_activity.h:8256-8266:
// EnableAllSyncRecords(0) only drops queries that were not complete), which reads as the host
// blocked; paired with its API record it is dropped, and a real wait gets its API call's thread.
TEST_F(CuptiRecordsTest, SyncRecordsArePairedWithTheirApiRecord) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, 100, 105, 4242, 7);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 100, 105, 7);
  b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 200, 900, 4243, 8);
  b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 200, 900, 8, 7);
  const BufferParseResult r = parse(b);
  EXPECT_EQ(r.query_syncs, 1u);
  std::vector<Event> syncs;
  for (const Event& e : sink_.events()) {
    if (e.kind == EventKind::kSync) syncs.push_back(e);
  }
  ASSERT_EQ(syncs.size(), 1u) << "the query's sync record is not a wait";
  EXPECT_EQ(syncs[0].correlation, 8u);
  EXPECT_EQ(syncs[0].thread, 4243u) << "a sync record carries no thread id: its API call's";
}

TEST_F(CuptiRecordsTest, ASyncRecordWaitsForItsApiRecordInTheNextBuffer) {
  ActivityBufferBuilder first(1u << 20, test_layout());
  first.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 200, 900, 9, 7);
  parse(first);
  EXPECT_EQ(sink_.event_count(), 0u);
  EXPECT_EQ(converter_.oldest_held_ns(), 200) << "the watermark waits for a held record";
  converter_.tick();
  ActivityBufferBuilder second(1u << 20, test_layout());
  second.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 200, 900, 4244, 9);
  parse(second);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 2u);
  const Event& sync = ev[0].kind == EventKind::kSync ? ev[0] : ev[1];
  EXPECT_EQ(sync.kind, EventKind::kSync);
  EXPECT_EQ(sync.thread, 4244u);
  EXPECT_EQ(converter_.oldest_held_ns(), INT64_MAX);
}

// A forced flush hands back a kernel still running with end == 0 (and one not started with no
// timestamps), never delivered again (pytorch/pytorch#195844). With its kind intact, CUPTI steps
// over it: the records after it are read, it is counted.
TEST_F(CuptiRecordsTest, AForcedFlushsIncompleteRecordsAreSkippedCountedAndParsedPast) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.kernel("_Z1kv", 10, 20, 1);
  b.kernel("_Z1kv", 30, 0, 2);  // running: no end yet
  b.kernel("_Z1kv", 0, 0, 3);   // queued: no timestamps yet
  b.memset(8, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 40, 0, 4);
  b.kernel("_Z1kv", 50, 60, 5);
  const BufferParseResult r = converter_.parse(b.data(), b.size(), /*forced=*/true);
  EXPECT_EQ(r.records, 5u);
  EXPECT_EQ(r.events, 2u);
  EXPECT_EQ(r.incomplete_records, 3u);
  EXPECT_EQ(r.zero_timestamp, 0u) << "not a device-buffer shortage";
  EXPECT_FALSE(r.incomplete);
  EXPECT_EQ(sink_.loss(LossKind::kIncompleteRecord), 3u);
  for (const Event& e : sink_.events()) EXPECT_GT(e.end_ns, e.start_ns) << "no kernel without an end is judged";
}

TEST_F(CuptiRecordsTest, WithoutAForcedFlushNoTimestampsIsLostTimingAsBefore) {
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.kernel("_Z1kv", 0, 0, 3);
  const BufferParseResult r = converter_.parse(b.data(), b.size(), /*forced=*/false);
  EXPECT_EQ(r.zero_timestamp, 1u);
  EXPECT_EQ(r.incomplete_records, 0u);
}

// Issue 18: the name cache lives across buffers (keyed by CUPTI's name pointer): 10,000 distinct
// names intern once each, not once per buffer; an epoch change (module unload) empties it.
class CountingSink : public RecordingSink {
 public:
  NameId intern(std::string_view name) noexcept override {
    ++interns;
    return RecordingSink::intern(name);
  }
  size_t interns = 0;
};

TEST(CuptiRecordsNames, TenThousandNamesInternOnceAcrossBuffersAndAgainAfterAModuleUnload) {
  CountingSink sink;
  RecordConverter converter(real_cupti(), sink);
  converter.set_layout(test_layout());
  std::vector<std::string> names;
  for (int i = 0; i < 10'000; ++i) names.push_back("_Z6kernel" + std::to_string(i) + "v");
  ActivityBufferBuilder b(names.size() * test_layout().kernel.bytes, test_layout());
  for (size_t i = 0; i < names.size(); ++i) b.kernel(names[i].c_str(), 10 + i, 20 + i, static_cast<uint32_t>(i));
  converter.parse(b.data(), b.size());
  converter.parse(b.data(), b.size());
  EXPECT_EQ(sink.interns, names.size());
  converter.invalidate_names();
  converter.parse(b.data(), b.size());
  EXPECT_EQ(sink.interns, 2 * names.size());
  const auto ev = sink.events();
  ASSERT_EQ(ev.size(), 3 * names.size());
  EXPECT_EQ(sink.name(ev[1234].name), names[1234]);
  EXPECT_EQ(ev[1234].name, ev[names.size() + 1234].name);
}

// CUPTI's clock changed by another client and calibrated (clock_check.h): every timestamp is
// converted onto the host clock; while uncalibrated, records are set aside, never mixed.
TEST(CuptiRecordsClock, TimestampsGoThroughTheClockMap) {
  RecordingSink sink;
  RecordConverter converter(real_cupti(), sink);
  converter.set_layout(test_layout());
  ClockCheck clock;
  converter.set_clock(&clock);
  // A TSC-like clock: 2.5 ticks per ns, far from CLOCK_REALTIME.
  const int64_t h0 = 1'800'000'000'000'000'000;
  auto ticks = [&](int64_t host) { return static_cast<uint64_t>((host - h0) * 5 / 2) + 1'000'000; };
  EXPECT_EQ(clock.observe(ticks(h0), h0, h0).state, ClockCheck::State::kCalibrating);
  ActivityBufferBuilder b(1u << 20, test_layout());
  b.kernel("_Z1kv", ticks(h0 + 1000), ticks(h0 + 2000), 1);
  const BufferParseResult dropped = converter.parse(b.data(), b.size());
  EXPECT_EQ(dropped.clock_dropped, 1u);
  EXPECT_EQ(sink.event_count(), 0u);
  EXPECT_EQ(sink.loss(LossKind::kClockUncalibrated), 1u) << "set aside, never silently";
  clock.observe(ticks(h0 + 50'000'000), h0 + 50'000'000, h0 + 50'000'000);
  EXPECT_EQ(clock.observe(ticks(h0 + 100'000'000), h0 + 100'000'000, h0 + 100'000'000).state,
            ClockCheck::State::kConverting);
  converter.parse(b.data(), b.size());
  const auto ev = sink.events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_NEAR(static_cast<double>(ev[0].start_ns - h0), 1000.0, 2.0);
  EXPECT_NEAR(static_cast<double>(ev[0].end_ns - h0), 2000.0, 2.0);
}

TEST(CuptiRecordsClock, PairsOffALineStandDown) {
  ClockCheck clock;
  const int64_t h0 = 1'800'000'000'000'000'000;
  clock.observe(5, h0, h0);
  clock.observe(10, h0 + 50'000'000, h0 + 50'000'000);
  const ClockCheck::Observation o = clock.observe(1'000'000'000'000, h0 + 100'000'000, h0 + 100'000'000);
  EXPECT_EQ(o.state, ClockCheck::State::kStoodDown);
  EXPECT_TRUE(o.changed);
  EXPECT_NE(o.line.find("stands down"), std::string::npos) << o.line;
  EXPECT_EQ(clock.map().mode, ClockMap::Mode::kDrop);
}

// A reading thread preempted between its host reads (seen under TSan: 64 threads launching) sees
// a false difference of up to the gap: no evidence, the state is unchanged and nothing is set aside.
TEST(CuptiRecordsClock, APairReadAcrossAPreemptionChangesNothing) {
  ClockCheck clock;
  const int64_t h = 1'800'000'000'000'000'000;
  // CUPTI read the host clock right after `h`; the second host read came 2.4 ms later.
  const ClockCheck::Observation o = clock.observe(static_cast<uint64_t>(h + 50), h, h + 2'400'000);
  EXPECT_EQ(o.state, ClockCheck::State::kAligned);
  EXPECT_FALSE(o.changed);
  EXPECT_EQ(clock.map().mode, ClockMap::Mode::kIdentity);
  // The same with a narrow bracket is evidence: the clocks parted by 1.2 ms.
  EXPECT_EQ(clock.observe(static_cast<uint64_t>(h + 1'200'000), h, h + 10).state, ClockCheck::State::kCalibrating);
}

TEST(CuptiRecordsClock, TheHostClockIsLeftAlone) {
  ClockCheck clock;
  const int64_t h = 1'800'000'000'000'000'000;
  const ClockCheck::Observation o = clock.observe(static_cast<uint64_t>(h + 340), h, h + 10);
  EXPECT_EQ(o.state, ClockCheck::State::kAligned);
  EXPECT_FALSE(o.changed);
  EXPECT_EQ(clock.map().mode, ClockMap::Mode::kIdentity);
}

}  // namespace
}  // namespace stepwatch::live

// ---- the start-up record-layout check (cupti/layout_check.h) ------------------------------------

namespace stepwatch::live {
namespace {

CUptiResult steps_16_bytes_too_far(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  // A library whose kernel record is 16 bytes longer than the table says (a newer KernelN).
  const CUptiResult r = real_cupti().cuptiActivityGetNextRecord(buffer, valid, record);
  if (r == CUPTI_SUCCESS && (*record)->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
      reinterpret_cast<uint8_t*>(*record) - buffer == test_layout().kernel.bytes) {
    *record = reinterpret_cast<CUpti_Activity*>(reinterpret_cast<uint8_t*>(*record) + 16);
  }
  return r;
}

TEST(CuptiLayoutCheck, TheRealLibcuptiIteratesOurStructsAtOurSizes) {
  EXPECT_EQ(check_record_layouts(real_cupti(), test_layout()), "");
}

TEST(CuptiLayoutCheck, ALibraryWithAnotherKernelRecordSizeIsRefusedWithOneLine) {
  CuptiApi skewed = real_cupti();
  skewed.cuptiActivityGetNextRecord = &steps_16_bytes_too_far;
  const RecordLayout& l = test_layout();
  const std::string line = check_record_layouts(skewed, l);
  const std::string bytes = std::to_string(l.kernel.bytes);
  EXPECT_NE(line.find("its record layouts differ from " + std::string(l.name) + "'s: after CONCURRENT_KERNEL (" +
                      l.kernel.record + ", " + bytes + " bytes) the next record is at byte " +
                      std::to_string(l.kernel.bytes + 16) + ", not " + bytes),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace stepwatch::live
