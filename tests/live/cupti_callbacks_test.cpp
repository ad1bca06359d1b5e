// The callback side: the traced CBID table against the real libcupti's names, and the counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "cupti/cupti_api.h"
#include "cupti/cupti_callbacks.h"
#include "stepwatch/core/classify.h"

namespace stepwatch::live {
namespace {

const CuptiApi& real_cupti() {
  static const CuptiApi* api = [] {
    auto* a = new CuptiApi();
    std::string error;
    // The per-version runs name a pinned release's library (as in cupti_records_test.cpp).
    const char* path = std::getenv("STEPWATCH_TEST_REAL_CUPTI");
    const bool ok = path != nullptr && *path != '\0' ? open_cupti_library(path, *a, error) : load_cupti_api("", *a, error);
    if (!ok) ADD_FAILURE() << error;
    return a;
  }();
  return *api;
}

// CUDA 13's library names every traced CBID. A 12.x library lacks CUDA 13's additions only: the
// adapter skips a CBID the library cannot name, which is safe because the numbering only grows
// (every id it does not know is above every id it knows, in each domain).
TEST(CuptiCallbacksTest, EveryTracedCbidExistsAndIsClassifiedLikeItsName) {
  uint32_t version = 0;
  ASSERT_EQ(real_cupti().cuptiGetVersion(&version), CUPTI_SUCCESS);
  std::set<std::pair<int, uint32_t>> seen;
  std::map<int, uint32_t> max_known, min_unknown;
  for (const TracedCallback& cb : traced_api_callbacks()) {
    const char* name = nullptr;
    if (version < 130000 && real_cupti().cuptiGetCallbackName(cb.domain, cb.cbid, &name) != CUPTI_SUCCESS) {
      auto [it, fresh] = min_unknown.emplace(cb.domain, cb.cbid);
      if (!fresh) it->second = std::min(it->second, cb.cbid);
      continue;
    }
    ASSERT_EQ(real_cupti().cuptiGetCallbackName(cb.domain, cb.cbid, &name), CUPTI_SUCCESS) << cb.cbid;
    ASSERT_NE(name, nullptr);
    max_known[cb.domain] = std::max(max_known[cb.domain], cb.cbid);
    EXPECT_EQ(classify_api(name), cb.api_class) << name;
    EXPECT_TRUE(seen.insert({cb.domain, cb.cbid}).second) << "duplicate " << name;
  }
  for (const auto& [domain, unknown] : min_unknown) {
    EXPECT_GT(unknown, max_known[domain]) << "domain " << domain << ": an id this CUPTI cannot name sits among ids it can";
  }
  EXPECT_GT(seen.size(), 80u) << "most traced calls exist in every supported CUPTI";
}

TEST(CuptiCallbacksTest, LaunchPathsOfCuda13AreTraced) {
  auto traced = [](CUpti_CallbackDomain d, uint32_t cbid) {
    for (const TracedCallback& cb : traced_api_callbacks()) {
      if (cb.domain == d && cb.cbid == cbid) return true;
    }
    return false;
  };
  EXPECT_TRUE(traced(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000));
  EXPECT_TRUE(traced(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000));
  EXPECT_TRUE(traced(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_TRUE(traced(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_TRUE(traced(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
  EXPECT_TRUE(traced(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
  EXPECT_TRUE(traced(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2));
  bool context = false, stream = false;
  for (const TracedCallback& cb : traced_resource_callbacks()) {
    context |= cb.cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED;
    stream |= cb.cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED;
  }
  EXPECT_TRUE(context && stream);
}

void call(CallbackCounters& c, CUpti_CallbackDomain d, uint32_t cbid, uint64_t& slot,
          std::chrono::microseconds inside = std::chrono::microseconds(0)) {
  CUpti_CallbackData data{};
  data.correlationData = &slot;
  data.callbackSite = CUPTI_API_ENTER;
  c.on_api(d, cbid, &data);
  if (inside.count() > 0) std::this_thread::sleep_for(inside);
  data.callbackSite = CUPTI_API_EXIT;
  c.on_api(d, cbid, &data);
}

TEST(CuptiCallbacksTest, BlockingCallsAreCountedAndTimed) {
  CallbackCounters c;
  uint64_t slot = 0;
  call(c, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, slot,
       std::chrono::milliseconds(3));
  const CallbackTotals t = c.totals();
  EXPECT_EQ(t.api_calls, 1u);
  EXPECT_EQ(t.blocking_calls, 1u);
  EXPECT_GE(t.blocking_ns, 3'000'000);
  EXPECT_EQ(t.launch_calls, 0u);
  EXPECT_GT(t.callback_ns, 0);
}

TEST(CuptiCallbacksTest, LaunchesAreCounted) {
  CallbackCounters c;
  uint64_t slot = 0;
  call(c, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, slot);
  call(c, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, slot);
  EXPECT_EQ(c.totals().launch_calls, 2u);
  EXPECT_EQ(c.totals().blocking_calls, 0u);
}

TEST(CuptiCallbacksTest, ADriverCallInsideARuntimeCallCountsOnce) {
  CallbackCounters c;
  uint64_t runtime_slot = 0, driver_slot = 0;
  CUpti_CallbackData rt{};
  rt.correlationData = &runtime_slot;
  rt.callbackSite = CUPTI_API_ENTER;
  c.on_api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &rt);
  call(c, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, driver_slot);
  rt.callbackSite = CUPTI_API_EXIT;
  c.on_api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &rt);
  EXPECT_EQ(c.totals().api_calls, 1u);
  EXPECT_EQ(c.totals().blocking_calls, 1u);
  // A driver call on its own counts.
  call(c, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, driver_slot);
  EXPECT_EQ(c.totals().blocking_calls, 2u);
}

TEST(CuptiCallbacksTest, UntracedCallsAndResourcesAreHandled) {
  CallbackCounters c;
  uint64_t slot = 0;
  call(c, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, slot);
  call(c, CUPTI_CB_DOMAIN_RUNTIME_API, 60000, slot);  // out of range
  c.on_api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, nullptr);
  EXPECT_EQ(c.totals().api_calls, 0u);
  c.on_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  c.on_resource(CUPTI_CBID_RESOURCE_STREAM_CREATED);
  c.on_resource(CUPTI_CBID_RESOURCE_STREAM_CREATED);
  c.on_resource(CUPTI_CBID_RESOURCE_MODULE_LOADED);
  EXPECT_EQ(c.totals().contexts_created, 1u);
  EXPECT_EQ(c.totals().streams_created, 2u);
}

TEST(CuptiCallbacksTest, ManyThreadsCountExactly) {
  CallbackCounters c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&c] {
      uint64_t slot = 0;
      for (int i = 0; i < 10000; ++i) {
        call(c, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, slot);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.totals().launch_calls, 80000u);
  EXPECT_EQ(c.totals().api_calls, 80000u);
}

}  // namespace
}  // namespace stepwatch::live
