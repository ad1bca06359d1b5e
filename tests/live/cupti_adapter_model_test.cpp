// The CUPTI adapter against the fake libcupti's faithful model (tests/live/fake_cupti/fake_cupti.h,
// "the faithful model"): CUDA calls played on a model GPU, records and buffers as CUPTI 13.0
// documents them. Each test names the problem of issue 13 it covers and failed before its fix.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "cupti/cupti_adapter.h"
#include "cupti/cupti_api.h"
#include "fake_cupti/fake_cupti.h"
#include "recording_sink.h"

namespace stepwatch::live {
namespace {

using namespace std::chrono_literals;
using test_support::RecordingSink;

const FakeCuptiControl& fake() {
  static const FakeCuptiControl* table = [] {
    void* h = dlopen(STEPWATCH_FAKE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    return reinterpret_cast<const FakeCuptiControl* (*)()>(dlsym(h, "fake_cupti_control"))();
  }();
  return *table;
}

const CuptiApi& fake_api() {
  static const CuptiApi* api = [] {
    auto* a = new CuptiApi();
    std::string error;
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

const FakeCuptiSim& sim() {
  static const FakeCuptiSim* table = [] {
    void* h = dlopen(STEPWATCH_FAKE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    return reinterpret_cast<const FakeCuptiSim* (*)()>(dlsym(h, "fake_cupti_sim"))();
  }();
  return *table;
}

uint32_t gettid_u32() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

class CuptiAdapterModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake().reset();
    options_.flush_period_ms = 60'000;  // tests flush explicitly unless they want the thread
    // Production defaults otherwise: 4 MiB buffers (adaptive below it), per-thread buffers on.
  }
  void TearDown() override { adapter_.reset(); }
  TracerState start() {
    adapter_ = std::make_unique<CuptiAdapter>();
    return adapter_->start(fake_api(), options_, sink_, detail_);
  }
  // Flushes until `pred` holds (records come only once CUPTI hands their buffers back).
  template <typename Pred>
  bool flush_until(Pred pred, std::chrono::milliseconds limit = 3s) {
    return eventually([&] {
      adapter_->flush();
      return pred();
    }, limit);
  }
  size_t kernels() const {
    size_t n = 0;
    for (const Event& e : sink_.events()) n += e.kind == EventKind::kKernel ? 1 : 0;
    return n;
  }

  GpuTracerOptions options_;
  RecordingSink sink_;
  std::string detail_;
  std::unique_ptr<CuptiAdapter> adapter_;
};

// Problem 2: CUPTI's API records carry pthread_self() unless cuptiSetThreadIdType(SYSTEM) was set
// before any kind was enabled (cupti_activity.h:7245-7262, 7874-7876); NVTX and C-API events carry
// gettid(). The adapter sets it, in time.
TEST_F(CuptiAdapterModelTest, ApiRecordsCarryTheLaunchingThreadsSystemThreadId) {
  ASSERT_EQ(start(), TracerState::kActive) << detail_;
  EXPECT_EQ(sim().thread_id_type(), CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  EXPECT_EQ(sim().thread_id_type_set_while_enabled(), 0) << "set before the first kind was enabled";
  uint32_t launcher = 0;
  std::thread t([&] {
    launcher = gettid_u32();
    sim().launch("_Z6kernelv", 7, 1'000, 1);
  });
  t.join();
  ASSERT_TRUE(flush_until([&] { return kernels() == 1; })) << sink_.event_count();
  size_t api = 0;
  for (const Event& e : sink_.events()) {
    if (e.kind != EventKind::kApiCall) continue;
    ++api;
    EXPECT_EQ(e.thread, launcher) << sink_.name(e.name);
  }
  EXPECT_EQ(api, 2u) << "cudaLaunchKernel and the cuLaunchKernel inside it";
}

// Problem 1: FlushAll(0) keeps back a buffer holding a running kernel's record (7724-7727). The
// watermark must stay below the launch until the record arrives; before, it advanced to the flush.
TEST_F(CuptiAdapterModelTest, TheWatermarkWaitsForTheRecordOfARunningKernel) {
  ASSERT_EQ(start(), TracerState::kActive) << detail_;
  const int64_t launched = now_ns();
  sim().launch("_Z6kernelv", 7, 150'000'000, 1);  // 150 ms on the model GPU
  adapter_->flush();
  EXPECT_EQ(kernels(), 0u) << "CUPTI withholds the buffer";
  EXPECT_GT(sink_.watermark_calls(), 0u);
  EXPECT_LE(sink_.watermark_ns(), launched + 1'000'000) << "held below the launch, not moved to the flush";
  EXPECT_EQ(adapter_->stats().pending_calls, 1u);
  std::this_thread::sleep_for(160ms);
  ASSERT_TRUE(flush_until([&] { return kernels() == 1; }));
  adapter_->flush();
  EXPECT_GE(sink_.watermark_ns(), launched + 150'000'000);
  EXPECT_EQ(adapter_->stats().pending_calls, 0u);
  EXPECT_TRUE(sink_.incomplete().empty());
}

// The wait is bounded (completeness_wait_periods flush periods): past it the interval is reported
// incomplete — steps there are counted, never judged from missing records — and the watermark
// moves on.
TEST_F(CuptiAdapterModelTest, PastTheBoundTheIntervalIsIncompleteAndTheWatermarkMovesOn) {
  options_.flush_period_ms = 10;
  options_.completeness_wait_periods = 2;  // 20 ms
  ASSERT_EQ(start(), TracerState::kActive) << detail_;  // its flush thread ticks every 10 ms
  const int64_t launched = now_ns();
  sim().launch("_Z6kernelv", 7, 2'000'000'000, 1);  // its record comes in 2 s: far past the bound
  ASSERT_TRUE(eventually([&] { return !sink_.incomplete().empty(); }, 1900ms));
  std::this_thread::sleep_for(40ms);
  const auto iv = sink_.incomplete().front();
  EXPECT_LE(iv.first, launched + 1'000'000);
  EXPECT_GE(iv.first, launched - 1'000'000);
  EXPECT_GE(iv.second, launched + 20'000'000);  // given up after the bound, at a flush
  EXPECT_GE(sink_.watermark_ns(), launched + 50'000'000);
  EXPECT_GE(adapter_->stats().calls_given_up, 1u);
}

// Problem 4: stepwatch installs no clock (others would inherit it) ...
TEST_F(CuptiAdapterModelTest, StepwatchRegistersNoTimestampCallback) {
  ASSERT_EQ(start(), TracerState::kActive);
  adapter_->flush();
  adapter_->pause();
  adapter_->resume();
  EXPECT_EQ(sim().timestamp_registrations(), 0);
}

// ... and checks it: after another client registered a TSC callback, timestamps are converted
// onto the host clock once calibrated; meanwhile records are set aside and the interval is
// incomplete (no finding from mixed clocks).
TEST_F(CuptiAdapterModelTest, AClockChangedByAnotherClientIsCalibratedAndConverted) {
  ASSERT_EQ(start(), TracerState::kActive);
  void* h = dlopen(STEPWATCH_FAKE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
  auto register_ts = reinterpret_cast<CUptiResult (*)(CUpti_TimestampCallbackFunc)>(
      dlsym(h, "cuptiActivityRegisterTimestampCallback"));
  auto tsc = reinterpret_cast<CUpti_TimestampCallbackFunc>(dlsym(h, "fake_kineto_tsc_callback"));
  ASSERT_NE(tsc, nullptr);
  ASSERT_EQ(register_ts(tsc), CUPTI_SUCCESS);
  for (int i = 0; i < 4; ++i) {
    adapter_->flush();
    std::this_thread::sleep_for(25ms);
  }
  EXPECT_EQ(adapter_->stats().clock_state, 2) << "converting";
  const auto lines = sink_.status_lines();
  auto logged = [&](const char* text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(logged("CUPTI's clock no longer reads the host clock"));
  EXPECT_TRUE(logged("converts its timestamps to the host clock"));
  EXPECT_FALSE(sink_.incomplete().empty());
  const int64_t before = now_ns();
  sim().launch("_Z6kernelv", 7, 1'000, 1);
  ASSERT_TRUE(flush_until([&] { return kernels() == 1; }));
  for (const Event& e : sink_.events()) {
    if (e.kind != EventKind::kKernel) continue;
    EXPECT_NEAR(double(e.start_ns - before), 0.0, 5e6) << "on the host clock again";
  }
}

// Adaptive buffer sizes: a thread's first buffer is small; one it filled fast is followed by a
// larger one (up to buffer_bytes), so a withheld buffer fills — and comes back — within a period
// or two at any rate.
TEST_F(CuptiAdapterModelTest, BuffersAreSizedToFillInAboutOneFlushPeriod) {
  options_.flush_period_ms = 200;
  ASSERT_EQ(start(), TracerState::kActive);
  uint8_t* a = nullptr;
  uint8_t* b = nullptr;
  size_t a_size = 0, b_size = 0;
  ASSERT_EQ(fake().request_buffer(&a, &a_size), 1);
  EXPECT_EQ(a_size, 256u << 10);
  std::this_thread::sleep_for(10ms);  // "filled" in 10 ms: 20x too fast for a 200 ms period
  ASSERT_EQ(fake().request_buffer(&b, &b_size), 1);
  EXPECT_EQ(b_size, 4u << 20);
  fake().complete_buffer(a, 0);
  fake().complete_buffer(b, 0);
}

}  // namespace
}  // namespace stepwatch::live
