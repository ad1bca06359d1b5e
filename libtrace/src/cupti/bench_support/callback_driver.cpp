#include "bench_support/callback_driver.h"

#include "cupti/cupti_callbacks.h"

namespace stepwatch::bench {
namespace {

class Driver final : public CallbackDriver {
 public:
  explicit Driver(BlockingCallHook* hook) { counters_.set_blocking_call_hook(hook); }
  void launch() noexcept override { fire(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000); }
  void stream_synchronize() noexcept override { fire(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020); }

 private:
  void fire(uint32_t cbid) noexcept {
    CUpti_CallbackData data{};
    data.correlationData = &slot_;
    data.correlationId = ++correlation_;
    data.callbackSite = CUPTI_API_ENTER;
    counters_.on_api(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
    data.callbackSite = CUPTI_API_EXIT;
    counters_.on_api(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
  }
  live::CallbackCounters counters_;
  uint64_t slot_ = 0;
  uint32_t correlation_ = 0;
};

}  // namespace

std::unique_ptr<CallbackDriver> CallbackDriver::create(BlockingCallHook* hook) { return std::make_unique<Driver>(hook); }

}  // namespace stepwatch::bench
