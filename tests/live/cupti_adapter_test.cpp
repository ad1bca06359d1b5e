// The CUPTI adapter through the fake libcupti (tests/live/fake_cupti): control plane faked, record
// parsing real. No GPU, no driver.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cupti/cupti_adapter.h"
#include "cupti/cupti_api.h"
#include "cupti/record_layouts.h"
#include "fake_cupti/fake_cupti.h"
#include "recording_sink.h"

namespace stepwatch::live {
namespace {

using namespace std::chrono_literals;
using test_support::RecordingSink;

// The fake, loaded the way another module would: dlopen + the one control-table symbol. The
// adapter's load_cupti_api(path) gets the same instance from the dynamic loader.
const FakeCuptiControl& fake() {
  static const FakeCuptiControl* table = [] {
    void* h = dlopen(STEPWATCH_FAKE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      ADD_FAILURE() << dlerror();
      std::abort();
    }
    auto get = reinterpret_cast<const FakeCuptiControl* (*)()>(dlsym(h, "fake_cupti_control"));
    return get();
  }();
  return *table;
}

const CuptiApi& fake_api() {
  static const CuptiApi* api = [] {
    auto* a = new CuptiApi();
    std::string error;
    // Opened by its file: the loading policy (load_cupti_api) is the e2e tests' business.
    if (!open_cupti_library(STEPWATCH_FAKE_CUPTI_SO, *a, error)) ADD_FAILURE() << error;
    return a;
  }();
  return *api;
}

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 3s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

uint64_t now_u64() { return static_cast<uint64_t>(now_ns()); }

class CuptiAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake().reset();
    ASSERT_EQ(fake_api().library_path, STEPWATCH_FAKE_CUPTI_SO);
    options_.flush_period_ms = 60'000;  // tests flush explicitly unless they want the thread
    options_.buffer_bytes = 64 << 10;
    options_.max_buffers = 8;
  }
  void TearDown() override {
    fake().set_flush_blocks(0);
    adapter_.reset();
  }

  TracerState start() {
    adapter_ = std::make_unique<CuptiAdapter>();
    return adapter_->start(fake_api(), options_, sink_, detail_);
  }

  // One buffer from the adapter's pool, filled with `kernels` kernel records, completed from this
  // thread (like CUPTI's worker would).
  void deliver_kernels(int kernels, const char* name = "_Z6kernelv") {
    uint8_t* buf = nullptr;
    size_t size = 0;
    ASSERT_EQ(fake().request_buffer(&buf, &size), 1);
    size_t used = 0;
    const uint64_t t = now_u64();
    for (int i = 0; i < kernels; ++i) {
      used = fake().append_kernel(buf, size, used, name, t + 10u * i, t + 10u * i + 5, static_cast<uint32_t>(i), 0, 7);
      ASSERT_NE(used, 0u);
    }
    ASSERT_EQ(fake().complete_buffer(buf, used), 1);
  }

  GpuTracerOptions options_;
  RecordingSink sink_;
  std::string detail_;
  std::unique_ptr<CuptiAdapter> adapter_;
};

TEST_F(CuptiAdapterTest, StartSubscribesRegistersAndEnablesEverything) {
  ASSERT_EQ(start(), TracerState::kActive) << detail_;
  EXPECT_EQ(adapter_->state(), TracerState::kActive);
  EXPECT_NE(detail_.find("tracing kernels, memcpy, peer memcpy, memset, sync, runtime API, driver API"),
            std::string::npos)
      << detail_;
  EXPECT_TRUE(fake().is_subscribed());
  EXPECT_TRUE(fake().buffer_callbacks_registered());
  for (int kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
                   CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                   CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_MEMORY2}) {
    EXPECT_TRUE(fake().activity_enabled(kind)) << kind;
  }
  EXPECT_FALSE(fake().activity_enabled(CUPTI_ACTIVITY_KIND_KERNEL));  // serializes kernels
  uint64_t value = 0;
  ASSERT_TRUE(fake().attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &value));
  EXPECT_EQ(value, 1u);
  ASSERT_TRUE(fake().attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value));
  EXPECT_EQ(value, uint64_t{8} << 20);
  EXPECT_TRUE(fake().callback_enabled(CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR));
  // CUDA 13's launch entry points: enabled where the library knows them (13.x), skipped on 12.x.
  uint32_t version = 0;
  ASSERT_EQ(fake_api().cuptiGetVersion(&version), CUPTI_SUCCESS);
  const bool cuda13 = version >= 130000;
  EXPECT_EQ(fake().callback_enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000),
            cuda13);
  EXPECT_EQ(
      fake().callback_enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000),
      cuda13);
  EXPECT_TRUE(fake().callback_enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_TRUE(fake().callback_enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
  EXPECT_TRUE(fake().callback_enabled(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_TRUE(fake().callback_enabled(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
  EXPECT_FALSE(fake().callback_enabled(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_EQ(adapter_->stats().cupti_version, version);
  EXPECT_EQ(detail_.find("callbacks not enabled"), std::string::npos) << detail_;
}

TEST_F(CuptiAdapterTest, SecondStartIsRefusedAndKeepsTheState) {
  ASSERT_EQ(start(), TracerState::kActive);
  std::string detail;
  EXPECT_EQ(adapter_->start(fake_api(), options_, sink_, detail), TracerState::kActive);
  EXPECT_NE(detail.find("already started"), std::string::npos);
  EXPECT_EQ(fake().subscribe_calls(), 1);
}

TEST_F(CuptiAdapterTest, AKindThatFailsIsNotedAndTheOthersRun) {
  fake().set_activity_enable_result(CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(start(), TracerState::kActive);
  EXPECT_NE(detail_.find("not enabled: device allocations (CUPTI_ERROR_NOT_SUPPORTED"), std::string::npos)
      << detail_;
  EXPECT_FALSE(fake().activity_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
  EXPECT_TRUE(fake().activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

TEST_F(CuptiAdapterTest, AnotherSubscriberMakesUsStandDownAndNameIt) {
  fake().set_subscribe_result(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  fake().set_old_subscriber("CUPTI for Nsight Systems");
  ASSERT_EQ(start(), TracerState::kOtherSubscriber) << detail_;
  uint32_t version = 0;
  ASSERT_EQ(fake_api().cuptiGetVersion(&version), CUPTI_SUCCESS);
  // CUPTI 12's cuptiSubscribe cannot name the holder; 13's cuptiSubscribe_v2 does.
  EXPECT_NE(detail_.find(version >= 130000 ? "CUPTI for Nsight Systems" : "unnamed: Nsight Systems/Compute"),
            std::string::npos)
      << detail_;
  EXPECT_NE(detail_.find("stands down"), std::string::npos) << detail_;
  EXPECT_EQ(fake().enabled_activity_count(), 0);
  EXPECT_FALSE(fake().buffer_callbacks_registered());
  EXPECT_EQ(fake().register_calls(), 0);
  // Still a watermark for NVTX/C-API-only steps; no CUPTI flush.
  adapter_->flush();
  EXPECT_GT(sink_.watermark_ns(), 0);
  EXPECT_EQ(fake().flush_count(), 0u);
}

TEST_F(CuptiAdapterTest, AnUnnamedOtherSubscriberIsStillExplained) {
  fake().set_subscribe_result(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  ASSERT_EQ(start(), TracerState::kOtherSubscriber);
  EXPECT_NE(detail_.find("Nsight"), std::string::npos) << detail_;
}

TEST_F(CuptiAdapterTest, SubscribeFailureIsUnavailableWithTheReason) {
  fake().set_subscribe_result(CUPTI_ERROR_NOT_INITIALIZED);
  ASSERT_EQ(start(), TracerState::kUnavailable);
  EXPECT_NE(detail_.find("CUPTI_ERROR_NOT_INITIALIZED"), std::string::npos) << detail_;
  EXPECT_EQ(fake().enabled_activity_count(), 0);
}

// Layouts change within a major version (12.8 moved copies to Memcpy6, 13.1 kernels to Kernel11,
// 13.3 to Kernel12, ...): a version outside the table of known layouts (12.4 writes Memory3; 12.7
// was never released; 13.6 is not known yet) is refused, not parsed with another's sizes.
TEST_F(CuptiAdapterTest, AVersionWhoseLayoutsAreNotKnownIsRefusedWithOneLine) {
  for (const uint32_t version : {22u, 25u, 130600u}) {
    fake().reset();
    fake().set_version(version);
    adapter_.reset();
    ASSERT_EQ(start(), TracerState::kUnavailable) << version;
    EXPECT_NE(detail_.find(" at " STEPWATCH_FAKE_CUPTI_SO), std::string::npos) << detail_;
    EXPECT_NE(detail_.find("not ones stepwatch reads (known: CUPTI 12.6, 12.8-12.9, 13.0"), std::string::npos) << detail_;
    EXPECT_EQ(fake().subscribe_calls(), 0);
  }
}

// A library that says it is a known version but steps over records at other sizes (the version
// table says 13.4 writes 248-byte kernels; the real parser behind the fake is another release's) is
// refused by the start-up layout check, with the kind that differs.
TEST_F(CuptiAdapterTest, AKnownVersionWhoseLibraryLaysRecordsOutOtherwiseIsRefused) {
  uint32_t real_version = 0;
  ASSERT_EQ(fake_api().cuptiGetVersion(&real_version), CUPTI_SUCCESS);
  const uint32_t claimed = real_version >= 130400 ? 130000u : 130400u;
  fake().set_version(claimed);
  ASSERT_EQ(start(), TracerState::kUnavailable) << detail_;
  EXPECT_NE(detail_.find(std::string("its record layouts differ from ") + record_layout(claimed)->name +
                         "'s: after CONCURRENT_KERNEL ("),
            std::string::npos)
      << detail_;
  EXPECT_EQ(fake().subscribe_calls(), 0);
}

// The library's own calls only: CUPTI 12 has no cuptiSubscribe_v2, 12.6 no
// cuptiActivityEnableAllSyncRecords. The start-up line names the version and the file.
TEST_F(CuptiAdapterTest, OnlyTheLoadedVersionsOwnCallsAreMade) {
  uint32_t version = 0;
  ASSERT_EQ(fake_api().cuptiGetVersion(&version), CUPTI_SUCCESS);
  ASSERT_EQ(start(), TracerState::kActive) << detail_;
  EXPECT_EQ(fake().absent_function_calls(), 0);
  EXPECT_TRUE(fake().is_subscribed());
  // cuptiSubscribe names no subscriber; _v2 passes "stepwatch".
  EXPECT_STREQ(fake().subscriber_name(), version >= 130000 ? "stepwatch" : "");
  EXPECT_EQ(fake().all_sync_records(), version >= 26 ? 0 : -1);
  EXPECT_NE(detail_.find(std::string("CUPTI ") + (version >= 130000 ? "13." : "12.")), std::string::npos) << detail_;
  EXPECT_NE(detail_.find("(API " + std::to_string(version) + ") at " STEPWATCH_FAKE_CUPTI_SO), std::string::npos)
      << detail_;
}

TEST_F(CuptiAdapterTest, RefusedBufferCallbacksMeanUnavailableAndNoSubscriptionLeft) {
  fake().set_register_result(CUPTI_ERROR_UNKNOWN);
  ASSERT_EQ(start(), TracerState::kUnavailable);
  EXPECT_FALSE(fake().is_subscribed());
}

TEST_F(CuptiAdapterTest, StartByPathLoadsTheLibraryThenStarts) {
  adapter_ = std::make_unique<CuptiAdapter>();
  fake().set_subscribe_result(CUPTI_ERROR_NOT_INITIALIZED);
  std::string detail;
  const TracerState state = adapter_->start(std::string_view(STEPWATCH_FAKE_CUPTI_SO), options_, sink_, detail);
  EXPECT_EQ(state, TracerState::kUnavailable);
  EXPECT_NE(detail.find("CUPTI_ERROR_NOT_INITIALIZED"), std::string::npos) << detail;
}

TEST_F(CuptiAdapterTest, CompletedBuffersBecomeEventsAndGoBackZeroed) {
  ASSERT_EQ(start(), TracerState::kActive);
  uint8_t* buf = nullptr;
  size_t size = 0;
  ASSERT_EQ(fake().request_buffer(&buf, &size), 1);
  EXPECT_EQ(size, size_t{64} << 10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf) % 8, 0u);
  const uint64_t t = now_u64();
  size_t used = fake().append_api(buf, size, 0, 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, t, t + 5, 99, 1);
  used = fake().append_kernel(buf, size, used, "_Z6kernelv", t + 10, t + 20, 1, 0, 7);
  used = fake().append_memcpy(buf, size, used, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 4096, t + 30, t + 40, 2, 2, 0, 7);
  used = fake().append_overhead(buf, size, used, CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, t + 50, t + 60, 0, 32);
  ASSERT_NE(used, 0u);
  ASSERT_EQ(fake().complete_buffer(buf, used), 1);

  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].kind, EventKind::kApiCall);
  EXPECT_EQ(sink_.name(ev[0].name), "cudaLaunchKernel");
  EXPECT_EQ(ev[1].kind, EventKind::kKernel);
  EXPECT_EQ(sink_.name(ev[1].name), "_Z6kernelv");
  EXPECT_EQ(ev[2].kind, EventKind::kMemcpy);
  EXPECT_EQ(ev[3].kind, EventKind::kOverhead);
  // Back in the pool, zeroed over its used part (CUPTI is told buffers come zeroed).
  EXPECT_TRUE(std::all_of(buf, buf + used, [](uint8_t b) { return b == 0; }));
  uint8_t* again = nullptr;
  ASSERT_EQ(fake().request_buffer(&again, &size), 1);
  EXPECT_EQ(again, buf);
  const TracerStats st = adapter_->stats();
  EXPECT_EQ(st.buffers_requested, 2u);
  EXPECT_EQ(st.buffers_completed, 1u);
  EXPECT_EQ(st.records, 4u);
  EXPECT_EQ(st.events, 4u);
  EXPECT_EQ(st.cupti_overhead_ns, 10);
  EXPECT_EQ(st.bytes_in_pool, uint64_t{64} << 10);
  EXPECT_GT(st.callback_ns, 0);
}

TEST_F(CuptiAdapterTest, AnExhaustedPoolHandsCuptiNullAndCountsTheLoss) {
  options_.max_buffers = 2;
  ASSERT_EQ(start(), TracerState::kActive);
  uint8_t* a = nullptr;
  uint8_t* b = nullptr;
  uint8_t* c = nullptr;
  size_t size = 0;
  ASSERT_EQ(fake().request_buffer(&a, &size), 1);
  ASSERT_EQ(fake().request_buffer(&b, &size), 1);
  EXPECT_EQ(fake().request_buffer(&c, &size), 0);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(sink_.loss(LossKind::kBufferPoolExhausted), 1u);
  EXPECT_EQ(adapter_->stats().buffers_refused, 1u);
  EXPECT_EQ(adapter_->stats().bytes_in_pool, 2u * (64u << 10));
  ASSERT_EQ(fake().complete_buffer(a, 0), 1);
  EXPECT_EQ(fake().request_buffer(&c, &size), 1);
  EXPECT_EQ(c, a);
}

TEST_F(CuptiAdapterTest, BuffersCompletedFromManyThreadsConcurrently) {
  options_.max_buffers = 8;
  ASSERT_EQ(start(), TracerState::kActive);
  constexpr int kThreads = 8, kBuffers = 40, kKernels = 200;
  static const char* const kNames[] = {"_Z2k0v", "_Z2k1v", "_Z2k2v", "_Z2k3v"};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kBuffers; ++n) {
        uint8_t* buf = nullptr;
        size_t size = 0;
        if (fake().request_buffer(&buf, &size) != 1) {
          failures.fetch_add(1);
          continue;
        }
        size_t used = 0;
        const uint64_t base = now_u64();
        for (int i = 0; i < kKernels; ++i) {
          used = fake().append_kernel(buf, size, used, kNames[(t + i) % 4], base + i, base + i + 1,
                                      static_cast<uint32_t>(i), 0, static_cast<uint32_t>(t));
        }
        if (fake().complete_buffer(buf, used) != 1) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const auto ev = sink_.events();
  ASSERT_EQ(ev.size(), size_t{kThreads} * kBuffers * kKernels);
  std::set<NameId> names;
  for (const Event& e : ev) names.insert(e.name);
  EXPECT_EQ(names.size(), 4u);  // interned consistently across threads
  for (NameId id : names) EXPECT_EQ(sink_.name(id).substr(0, 4), "_Z2k");
  const TracerStats st = adapter_->stats();
  EXPECT_EQ(st.buffers_completed, uint64_t{kThreads} * kBuffers);
  EXPECT_EQ(st.buffers_refused, 0u);
  EXPECT_LE(st.bytes_in_pool, 8u * (64u << 10));
}

TEST_F(CuptiAdapterTest, TheFlushThreadFlushesDeliversAndAdvancesTheWatermark) {
  options_.flush_period_ms = 10;
  ASSERT_EQ(start(), TracerState::kActive);
  uint8_t* buf = nullptr;
  size_t size = 0;
  ASSERT_EQ(fake().request_buffer(&buf, &size), 1);
  const uint64_t t = now_u64();
  const size_t used = fake().append_kernel(buf, size, 0, "_Z6kernelv", t, t + 100, 1, 0, 7);
  fake().complete_on_next_flush(buf, used);
  // Delivered inside FlushAll, on the flush thread, and only then the watermark passed it.
  ASSERT_TRUE(eventually([&] { return sink_.events_at_last_watermark() == 1; }));
  EXPECT_GT(sink_.watermark_ns(), static_cast<int64_t>(t));
  EXPECT_EQ(sink_.submit_threads().count(std::this_thread::get_id()), 0u);
  ASSERT_TRUE(eventually([&] { return fake().flush_count() >= 3; }));
  EXPECT_EQ(fake().forced_flush_count(), 0u);
}

TEST_F(CuptiAdapterTest, DroppedRecordsAreReported) {
  ASSERT_EQ(start(), TracerState::kActive);
  fake().set_dropped(17);
  adapter_->flush();
  EXPECT_EQ(sink_.loss(LossKind::kCuptiDropped), 17u);
  adapter_->flush();
  EXPECT_EQ(sink_.loss(LossKind::kCuptiDropped), 17u);  // CUPTI's count is read-and-reset
  EXPECT_EQ(adapter_->stats().dropped_records, 17u);
  EXPECT_EQ(fake().flush_count(), 2u);
  EXPECT_EQ(adapter_->stats().flushes, 2u);
}

TEST_F(CuptiAdapterTest, AFatalErrorFailsTheAdapterOnceAndStopsFlushing) {
  options_.flush_period_ms = 10;
  ASSERT_EQ(start(), TracerState::kActive);
  ASSERT_TRUE(eventually([&] { return fake().flush_count() >= 1; }));
  ASSERT_EQ(fake().fire_fatal_error(CUPTI_ERROR_UNKNOWN, "device lost"), 1);
  EXPECT_EQ(adapter_->state(), TracerState::kFailed);
  const auto lines = sink_.status_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("fatal"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("device lost"), std::string::npos) << lines[0];
  std::this_thread::sleep_for(30ms);  // an in-flight tick may finish
  const uint64_t flushes = fake().flush_count();
  const int64_t watermark = sink_.watermark_ns();
  std::this_thread::sleep_for(80ms);
  EXPECT_EQ(fake().flush_count(), flushes);  // no CUPTI call after CUPTI finalized itself
  EXPECT_GT(sink_.watermark_ns(), watermark);
  adapter_->pause();
  adapter_->resume();
  adapter_->shutdown(100);
  EXPECT_EQ(adapter_->state(), TracerState::kFailed);
  EXPECT_EQ(fake().forced_flush_count(), 0u);
  EXPECT_EQ(sink_.status_lines().size(), 1u);
}

TEST_F(CuptiAdapterTest, PauseReleasesCuptiAndResumeTakesItBack) {
  ASSERT_EQ(start(), TracerState::kActive);
  uint8_t* buf = nullptr;
  size_t size = 0;
  ASSERT_EQ(fake().request_buffer(&buf, &size), 1);
  const uint64_t t = now_u64();
  fake().complete_on_next_flush(buf, fake().append_kernel(buf, size, 0, "_Z1kv", t, t + 1, 1, 0, 7));

  adapter_->pause();
  EXPECT_EQ(adapter_->state(), TracerState::kPaused);
  EXPECT_EQ(fake().enabled_activity_count(), 0);
  EXPECT_EQ(fake().forced_flush_count(), 1u);
  EXPECT_EQ(sink_.event_count(), 1u);  // records in flight are still delivered
  EXPECT_FALSE(fake().is_subscribed());
  // Nothing traced is in flight (no launch waits for its record): the forced flush at once.
  EXPECT_EQ(fake().flush_count(), 1u);
  adapter_->flush();  // paused: no CUPTI flush
  EXPECT_EQ(fake().flush_count(), 1u);

  adapter_->resume();
  EXPECT_EQ(adapter_->state(), TracerState::kActive);
  EXPECT_TRUE(fake().is_subscribed());
  EXPECT_TRUE(fake().activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_TRUE(fake().callback_enabled(CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR));
  EXPECT_EQ(fake().register_calls(), 2);
  EXPECT_EQ(fake().subscribe_calls(), 2);
  deliver_kernels(3);
  EXPECT_EQ(sink_.event_count(), 4u);
}

TEST_F(CuptiAdapterTest, ResumeWhileAnotherClientHoldsCuptiNamesItAndCanRetry) {
  ASSERT_EQ(start(), TracerState::kActive);
  adapter_->pause();
  fake().set_subscribe_result(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  fake().set_old_subscriber("CUPTI for torch.profiler");
  adapter_->resume();
  EXPECT_EQ(adapter_->state(), TracerState::kOtherSubscriber);
  const auto lines = sink_.status_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("torch.profiler"), std::string::npos) << lines[0];
  fake().set_subscribe_result(CUPTI_SUCCESS);
  adapter_->resume();
  EXPECT_EQ(adapter_->state(), TracerState::kActive);
}

TEST_F(CuptiAdapterTest, ShutdownFlushesForcedOnceAndClosesTheSink) {
  ASSERT_EQ(start(), TracerState::kActive);
  uint8_t* buf = nullptr;
  size_t size = 0;
  ASSERT_EQ(fake().request_buffer(&buf, &size), 1);
  const uint64_t t = now_u64();
  fake().complete_on_next_flush(buf, fake().append_kernel(buf, size, 0, "_Z1kv", t, t + 1, 1, 0, 7));
  fake().set_dropped(5);
  adapter_->shutdown(2000);
  EXPECT_EQ(adapter_->state(), TracerState::kInactive);
  EXPECT_EQ(fake().forced_flush_count(), 1u);
  EXPECT_EQ(fake().enabled_activity_count(), 0);
  EXPECT_EQ(sink_.event_count(), 1u);
  EXPECT_EQ(sink_.loss(LossKind::kCuptiDropped), 5u);
  adapter_->shutdown(2000);  // idempotent
  EXPECT_EQ(fake().forced_flush_count(), 1u);
  // After shutdown the sink is never touched again (the session may be gone); buffers recycle.
  ASSERT_EQ(fake().request_buffer(&buf, &size), 1);
  ASSERT_EQ(fake().complete_buffer(buf, fake().append_kernel(buf, size, 0, "_Z1kv", t, t + 1, 2, 0, 7)), 1);
  EXPECT_EQ(sink_.event_count(), 1u);
  const uint64_t watermarks = sink_.watermark_calls();
  adapter_->flush();
  EXPECT_EQ(sink_.watermark_calls(), watermarks);
}

TEST_F(CuptiAdapterTest, ShutdownIsBoundedWhenTheFlushThreadHangsInFlushAll) {
  options_.flush_period_ms = 10;
  ASSERT_EQ(start(), TracerState::kActive);
  fake().set_flush_blocks(1);
  ASSERT_TRUE(eventually([&] { return fake().flushes_blocked() == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  adapter_->shutdown(150);
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(elapsed, 1s);
  EXPECT_GE(elapsed, 100ms);
  EXPECT_EQ(fake().forced_flush_count(), 0u);  // not queued behind the hung flush
  const uint64_t watermarks = sink_.watermark_calls();
  fake().set_flush_blocks(0);  // CUPTI comes back: the abandoned thread leaves quietly
  ASSERT_TRUE(eventually([&] { return fake().flushes_blocked() == 0; }));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(sink_.watermark_calls(), watermarks);  // without touching the sink
}

TEST_F(CuptiAdapterTest, ShutdownIsBoundedWhenTheFinalFlushHangs) {
  ASSERT_EQ(start(), TracerState::kActive);
  fake().set_flush_blocks(1);
  const auto t0 = std::chrono::steady_clock::now();
  adapter_->shutdown(150);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(fake().forced_flush_count(), 1u);
  EXPECT_EQ(fake().flushes_blocked(), 1);
  const auto lines = sink_.status_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("did not return"), std::string::npos) << lines[0];
  fake().set_flush_blocks(0);
  ASSERT_TRUE(eventually([&] { return fake().flushes_blocked() == 0; }));
}

TEST_F(CuptiAdapterTest, DisableInChildTouchesNothingInAForkedChild) {
  ASSERT_EQ(start(), TracerState::kActive);
  deliver_kernels(2);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child: no flush thread, no CUPTI thread. Only atomics may be touched.
    const int subscribes = fake().subscribe_calls();
    const uint64_t flushes = fake().flush_count();
    adapter_->disable_in_child();
    int code = 0;
    if (adapter_->state() != TracerState::kFailed) code |= 1;
    adapter_->flush();
    adapter_->pause();
    adapter_->resume();
    adapter_->shutdown(100);
    if (fake().flush_count() != flushes || fake().subscribe_calls() != subscribes) code |= 2;
    if (fake().unsubscribe_calls() != 0 || fake().enabled_activity_count() != 9) code |= 4;
    const size_t events = sink_.event_count();
    uint8_t* buf = nullptr;
    size_t size = 0;
    fake().request_buffer(&buf, &size);
    if (buf != nullptr) code |= 8;  // no buffer handed out in the child
    if (sink_.event_count() != events) code |= 16;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent is unaffected.
  EXPECT_EQ(adapter_->state(), TracerState::kActive);
  deliver_kernels(1);
  EXPECT_EQ(sink_.event_count(), 3u);
}

TEST_F(CuptiAdapterTest, CallbacksCountBlockingCallsLaunchesAndResources) {
  ASSERT_EQ(start(), TracerState::kActive);
  uint64_t slot = 0;
  ASSERT_EQ(fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                                 0, 1, &slot),
            1);
  std::this_thread::sleep_for(2ms);
  fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 1, 1, &slot);
  fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 2, &slot);
  fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 2, &slot);
  EXPECT_EQ(fake().fire_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, 0, 0, nullptr), 1);
  fake().fire_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_STREAM_CREATED, 0, 0, nullptr);
  EXPECT_EQ(fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0, 3,
                                 nullptr),
            0);  // not enabled
  const TracerStats st = adapter_->stats();
  EXPECT_EQ(st.api_callbacks, 2u);
  EXPECT_EQ(st.blocking_calls, 1u);
  EXPECT_GE(st.blocking_ns, 2'000'000);
  EXPECT_EQ(st.launch_calls, 1u);
  EXPECT_EQ(st.contexts_created, 1u);
  EXPECT_EQ(st.streams_created, 1u);
}

TEST_F(CuptiAdapterTest, SilentBufferCallbacksWhileCudaCallsContinueAreReportedOnce) {
  options_.flush_period_ms = 10;
  options_.silent_flush_periods = 3;
  ASSERT_EQ(start(), TracerState::kActive);
  // Another client re-registered the activity callbacks: CUDA calls go on, no buffer comes back.
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (sink_.status_lines().empty() && std::chrono::steady_clock::now() < deadline) {
    uint64_t slot = 0;
    fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 1, &slot);
    fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 1, &slot);
    std::this_thread::sleep_for(2ms);
  }
  auto lines = sink_.status_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("no activity buffer"), std::string::npos) << lines[0];
  for (int i = 0; i < 30; ++i) {
    uint64_t slot = 0;
    fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 1, &slot);
    fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 1, &slot);
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(sink_.status_lines().size(), 1u);
}

TEST_F(CuptiAdapterTest, BuffersKeepingUpMeansNoLivenessWarning) {
  options_.flush_period_ms = 10;
  options_.silent_flush_periods = 3;
  ASSERT_EQ(start(), TracerState::kActive);
  for (int i = 0; i < 20; ++i) {
    uint64_t slot = 0;
    fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 1, &slot);
    fake().fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 1, &slot);
    deliver_kernels(1);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(sink_.status_lines().empty());
}

TEST(CuptiStateTest, Names) {
  EXPECT_EQ(to_string(TracerState::kActive), "active");
  EXPECT_EQ(to_string(TracerState::kOtherSubscriber), "other_subscriber");
  EXPECT_EQ(to_string(TracerState::kFailed), "failed");
}

}  // namespace
}  // namespace stepwatch::live

