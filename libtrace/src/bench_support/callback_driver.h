// A CUPTI-free driver of the adapter's API callbacks (cupti/cupti_callbacks.h) for the call-site
// benchmark (bench/call_site_bench.cpp): fires the ENTER and EXIT callbacks of one
// cudaLaunchKernel or cudaStreamSynchronize exactly as CUPTI does, with or without a
// BlockingCallHook. Implemented in libtrace/src/cupti/bench_support/callback_driver.cpp.
#pragma once

#include <memory>

#include "core/blocking_call_hook.h"

namespace stepwatch::bench {

class CallbackDriver {
 public:
  virtual ~CallbackDriver() = default;
  static std::unique_ptr<CallbackDriver> create(BlockingCallHook* hook);
  virtual void launch() noexcept = 0;             // cudaLaunchKernel: ENTER, EXIT
  virtual void stream_synchronize() noexcept = 0; // cudaStreamSynchronize: ENTER, EXIT (no wait)
};

}  // namespace stepwatch::bench
