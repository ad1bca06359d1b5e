#include "live/samplers/nvml_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "core/quiet_thread.h"
#include "stepwatch/core/gpu_samples.h"

// nvml.h declares the device handle's struct at global scope (`typedef struct nvmlDevice_st*
// nvmlDevice_t`): so do we, so that our function-pointer types are NVML's own (a pointer type that
// names another struct is a different function type, which UBSan's -fsanitize=function reports).
struct nvmlDevice_st;

namespace stepwatch::live {
namespace {

// The few NVML declarations we need (NVML API reference, nvml.h; the header is not part of every
// CUDA toolkit install, and we dlopen the library anyway). nvmlReturn_t is an int-sized enum with
// NVML_SUCCESS = 0; nvmlDevice_t is an opaque pointer.
using nvmlReturn_t = int;
using nvmlDevice_t = ::nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1;          // nvmlClockType_t
constexpr int NVML_TEMPERATURE_GPU = 0;   // nvmlTemperatureSensors_t

}  // namespace

struct NvmlSampler::Api {
  void* handle = nullptr;
  bool initialized = false;  // nvmlInit succeeded: nvmlShutdown is due
  nvmlReturn_t (*init)() = nullptr;                                                  // nvmlInit_v2
  nvmlReturn_t (*shutdown)() = nullptr;                                              // nvmlShutdown
  const char* (*error_string)(nvmlReturn_t) = nullptr;                               // nvmlErrorString
  nvmlReturn_t (*device_count)(unsigned*) = nullptr;                                 // nvmlDeviceGetCount_v2
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;                       // nvmlDeviceGetHandleByIndex_v2
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;                     // nvmlDeviceGetHandleByUUID
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;                     // nvmlDeviceGetClockInfo
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;                 // nvmlDeviceGetMaxClockInfo
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;               // nvmlDeviceGetTemperature
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;                          // nvmlDeviceGetPowerUsage (mW)
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;              // ...ClocksEventReasons

  std::string error(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(r);
  }
};

struct NvmlSampler::Device {
  nvmlDevice_t handle = nullptr;
  int16_t cuda_ordinal = 0;
  bool temperature = true;  // optional metrics still read (dropped after their first failure)
  bool power = true;
  bool reasons = true;
};

namespace {

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  return out != nullptr;
}

// CUDA_VISIBLE_DEVICES entries, in CUDA order ("0,2" or "GPU-<uuid>,..."); MIG instances and
// anything else unparsable end the list (CUDA stops there too).
std::vector<std::string> visible_entries(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    pos = comma + 1;
  }
  return out;
}

}  // namespace

NvmlSampler::NvmlSampler(EventSink& sink, NvmlSamplerOptions options, InfoLine info)
    : sink_(sink), options_(std::move(options)), info_(std::move(info)) {
  options_.hz = std::clamp(options_.hz, 1, 1000);
}

NvmlSampler::~NvmlSampler() {
  stop();
  // An abandoned thread still inside an NVML call keeps api_ (leaked: the process is exiting).
  if (!abandoned_ || exited()) delete api_;
}

void NvmlSampler::start() {
  if (thread_.joinable()) return;
  thread_ = spawn_quiet_thread([this] { loop(); });
}

void NvmlSampler::stop() noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
    if (!thread_.joinable()) return;
    if (cv_.wait_for(lock, std::chrono::milliseconds(kStopTimeoutMs), [&] { return exited_; })) {
      lock.unlock();
      thread_.join();
    } else {
      abandoned_ = true;
      lock.unlock();
      thread_.detach();
    }
  } catch (...) {
  }
}

bool NvmlSampler::wait_ready(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return ready_; });
}

bool NvmlSampler::exited() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exited_;
}

uint64_t NvmlSampler::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

bool NvmlSampler::init(std::string& why) noexcept {
  try {
    api_ = new Api;
    Api& a = *api_;
    // NOTE: never dlclose'd — the library stays mapped for the life of the process (cheap, and no
    // unload races with a thread of NVML's).
    a.handle = ::dlopen(options_.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (a.handle == nullptr) {
      const char* e = ::dlerror();
      why = "cannot load " + options_.library + (e ? std::string(": ") + e : "");
      return false;
    }
    resolve(a.handle, "nvmlErrorString", a.error_string);
    resolve(a.handle, "nvmlDeviceGetHandleByUUID", a.by_uuid);
    resolve(a.handle, "nvmlDeviceGetTemperature", a.temperature);
    resolve(a.handle, "nvmlDeviceGetPowerUsage", a.power);
    // Renamed in NVML 12.x ("throttle" -> "event"); the old name stays exported by older drivers.
    if (!resolve(a.handle, "nvmlDeviceGetCurrentClocksEventReasons", a.reasons)) {
      resolve(a.handle, "nvmlDeviceGetCurrentClocksThrottleReasons", a.reasons);
    }
    if (!resolve(a.handle, "nvmlInit_v2", a.init) || !resolve(a.handle, "nvmlShutdown", a.shutdown) ||
        !resolve(a.handle, "nvmlDeviceGetCount_v2", a.device_count) ||
        !resolve(a.handle, "nvmlDeviceGetHandleByIndex_v2", a.by_index) ||
        !resolve(a.handle, "nvmlDeviceGetClockInfo", a.clock) ||
        !resolve(a.handle, "nvmlDeviceGetMaxClockInfo", a.max_clock)) {
      why = options_.library + " lacks the NVML functions we need";
      return false;
    }
    if (nvmlReturn_t r = a.init(); r != NVML_SUCCESS) {
      why = "nvmlInit failed: " + a.error(r);
      return false;
    }
    a.initialized = true;
    const std::vector<std::string> visible = visible_entries(options_.visible_devices);
    if (visible.empty()) {
      unsigned count = 0;
      if (nvmlReturn_t r = a.device_count(&count); r != NVML_SUCCESS) {
        why = "nvmlDeviceGetCount failed: " + a.error(r);
        return false;
      }
      for (unsigned i = 0; i < count && devices_.size() < kMaxDevices; ++i) {
        Device d;
        d.cuda_ordinal = static_cast<int16_t>(i);
        if (a.by_index(i, &d.handle) == NVML_SUCCESS) devices_.push_back(d);
      }
    } else {
      for (size_t i = 0; i < visible.size() && devices_.size() < kMaxDevices; ++i) {
        Device d;
        d.cuda_ordinal = static_cast<int16_t>(i);
        const std::string& v = visible[i];
        nvmlReturn_t r = -1;
        if (v.rfind("GPU-", 0) == 0 && a.by_uuid != nullptr) {
          r = a.by_uuid(v.c_str(), &d.handle);
        } else if (!v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          r = a.by_index(static_cast<unsigned>(std::strtoul(v.c_str(), nullptr, 10)), &d.handle);
        } else {
          break;  // MIG-…, or something CUDA itself would stop at
        }
        if (r == NVML_SUCCESS) devices_.push_back(d);
      }
    }
    if (devices_.empty()) {
      why = "no NVML device matches the visible GPUs";
      return false;
    }
    return true;
  } catch (...) {
    why = "out of memory";
    return false;
  }
}

void NvmlSampler::submit(uint8_t metric, int64_t t, uint64_t value, int16_t device) noexcept {
  Event e;
  e.kind = EventKind::kRange;
  e.name = sink_.intern(gpu_sample_name(static_cast<GpuMetric>(metric)));
  e.start_ns = t;
  e.end_ns = t;
  e.bytes = value;
  e.device = device;
  sink_.submit(e);
}

bool NvmlSampler::sample_all(int64_t now_ns, std::string& why) noexcept {
  const Api& a = *api_;
  for (Device& d : devices_) {
    unsigned clock = 0, max_clock = 0;
    nvmlReturn_t r = a.clock(d.handle, NVML_CLOCK_SM, &clock);
    if (r == NVML_SUCCESS) r = a.max_clock(d.handle, NVML_CLOCK_SM, &max_clock);
    if (r != NVML_SUCCESS) {
      why = "reading the SM clock of GPU " + std::to_string(d.cuda_ordinal) + " failed: " + a.error(r);
      return false;
    }
    submit(static_cast<uint8_t>(GpuMetric::kSmClockMhz), now_ns, clock, d.cuda_ordinal);
    submit(static_cast<uint8_t>(GpuMetric::kMaxSmClockMhz), now_ns, max_clock, d.cuda_ordinal);
    unsigned value = 0;
    if (d.temperature && a.temperature != nullptr) {
      d.temperature = a.temperature(d.handle, NVML_TEMPERATURE_GPU, &value) == NVML_SUCCESS;
      if (d.temperature) submit(static_cast<uint8_t>(GpuMetric::kTemperatureC), now_ns, value, d.cuda_ordinal);
    }
    if (d.power && a.power != nullptr) {
      d.power = a.power(d.handle, &value) == NVML_SUCCESS;
      if (d.power) submit(static_cast<uint8_t>(GpuMetric::kPowerMw), now_ns, value, d.cuda_ordinal);
    }
    unsigned long long mask = 0;
    if (d.reasons && a.reasons != nullptr) {
      d.reasons = a.reasons(d.handle, &mask) == NVML_SUCCESS;
      // 0 is "no reason": nothing to record (and 0 means "no reading" in the event model).
      if (d.reasons && mask != 0) submit(static_cast<uint8_t>(GpuMetric::kClockEventReasons), now_ns, mask, d.cuda_ordinal);
    }
  }
  return true;
}

void NvmlSampler::loop() noexcept {
  std::string why;
  bool ok = init(why);
  if (ok) {
    try {
      info_("NVML: sampling SM clock, temperature, power and clock event reasons of " +
          std::to_string(devices_.size()) + " GPU(s) at " + std::to_string(options_.hz) + " Hz (throttle evidence)");
    } catch (...) {
    }
  }
  const auto period = std::chrono::nanoseconds(1'000'000'000 / options_.hz);
  bool first = true;
  while (ok) {
    ok = sample_all(now_ns(), why);
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (ok) ++samples_;
      if (first) {
        ready_ = true;
        first = false;
        cv_.notify_all();
      }
      if (!ok || cv_.wait_for(lock, period, [&] { return stop_; })) break;
    }
  }
  if (!why.empty()) {
    try {
      info_("NVML: " + why + "; clock/power evidence for throttle is off");
    } catch (...) {
    }
  }
  if (api_ != nullptr && api_->initialized) api_->shutdown();
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = true;
  exited_ = true;
  cv_.notify_all();
}

}  // namespace stepwatch::live
