// The NVML sampler: SM clock, maximum SM clock, temperature, power and clock event ("throttle")
// reasons of the GPUs, read at <= 10 Hz on a thread of ours, submitted as "nvml:<metric>" events
// (core/gpu_samples.h) so that `throttle` can cite them as confirming evidence.
//
// libnvidia-ml.so.1 is dlopen'ed on the sampler's own thread (never on the application's, never in
// InitializeInjection): a missing library, a failed nvmlInit or any error of a required call gives
// one info line and the sampler stops — never a crash. NVML calls are not CUDA calls: they create
// no context. Optional metrics (power, temperature, reasons) that a device does not support are
// dropped for that device after their first failure.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/event_sink.h"

namespace stepwatch::live {

struct NvmlSamplerOptions {
  std::string library = "libnvidia-ml.so.1";  // STEPWATCH_NVML_PATH
  int hz = 10;  // the live session samples at 10 Hz; tests sample faster (clamped to 1..1000)
  // CUDA_VISIBLE_DEVICES: the GPUs this process sees, in CUDA order (indices or GPU-<uuid>);
  // empty: every NVML device, CUDA ordinal = NVML index. At most kMaxDevices are sampled.
  std::string visible_devices;
};

class NvmlSampler {
 public:
  static constexpr size_t kMaxDevices = 16;
  using InfoLine = std::function<void(std::string_view)>;

  NvmlSampler(EventSink& sink, NvmlSamplerOptions options, InfoLine info);
  ~NvmlSampler();  // stops (bounded, see stop())
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  void start();
  // Bounded: an NVML call stuck in the driver (a sick GPU — when throttling matters most) must
  // not hang the host's exit. The thread is joined when it leaves within `kStopTimeoutMs`, else
  // detached and abandoned with its state (the process is exiting; the session is never freed).
  void stop() noexcept;
  static constexpr int kStopTimeoutMs = 1000;
  // Blocks until the sampler has loaded NVML and taken its first sample, or given up (tests).
  bool wait_ready(int timeout_ms);
  uint64_t samples() const;
  bool exited() const;  // the thread has left its loop (tests)

 private:
  struct Api;
  struct Device;
  void loop() noexcept;
  bool init(std::string& why) noexcept;
  bool sample_all(int64_t now_ns, std::string& why) noexcept;
  void submit(uint8_t metric, int64_t t, uint64_t value, int16_t device) noexcept;

  EventSink& sink_;
  NvmlSamplerOptions options_;
  InfoLine info_;
  Api* api_ = nullptr;  // sampler thread only
  std::vector<Device> devices_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool ready_ = false;  // loaded and sampled once, or gave up
  bool exited_ = false;  // the thread has left loop()
  bool abandoned_ = false;  // stop() timed out: the thread still owns api_ and devices_
  uint64_t samples_ = 0;
  std::thread thread_;
};

}  // namespace stepwatch::live
