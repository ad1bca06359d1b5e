// GPU clock/power samples (NVML, read by the live library's sampler thread) as events.
//
// A sample travels through the ordinary event model, so the one pipeline carries it: an
// instantaneous host range (kRange, start == end, thread 0) named "nvml:<metric>", the value in
// `bytes`, the CUDA device ordinal in `device`. The Timeline indexes them; analyze_step summarizes
// the samples inside a step (GpuClockStat) for `throttle`. Offline data has none: the detectors
// then behave as without NVML. Flight-recorder dumps keep them (a user_annotation with args
// `value` and `device`, read back by the Kineto importer). A value of 0 is "no reading", never a
// sample.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stepwatch {

enum class GpuMetric : uint8_t {
  kSmClockMhz,         // nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  kMaxSmClockMhz,      // nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)
  kTemperatureC,       // nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)
  kPowerMw,            // nvmlDeviceGetPowerUsage (milliwatts)
  kClockEventReasons,  // nvmlDeviceGetCurrentClocksEventReasons bit mask
};

inline constexpr std::string_view kGpuSamplePrefix = "nvml:";

std::string_view gpu_sample_name(GpuMetric metric);  // "nvml:sm_clock_mhz", ...
std::optional<GpuMetric> gpu_metric_of(std::string_view event_name);

// NVML's clock event ("throttle") reason bits (nvml.h, nvmlClocksEventReason*).
namespace clock_reason {
inline constexpr uint64_t kGpuIdle = 0x1;
inline constexpr uint64_t kApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kSwPowerCap = 0x4;
inline constexpr uint64_t kHwSlowdown = 0x8;
inline constexpr uint64_t kSyncBoost = 0x10;
inline constexpr uint64_t kSwThermalSlowdown = 0x20;
inline constexpr uint64_t kHwThermalSlowdown = 0x40;
inline constexpr uint64_t kHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kDisplayClockSetting = 0x100;
// The reasons that mean "the clock was pulled down by power or heat": throttling proper.
inline constexpr uint64_t kThrottling =
    kSwPowerCap | kHwSlowdown | kSwThermalSlowdown | kHwThermalSlowdown | kHwPowerBrakeSlowdown;
}  // namespace clock_reason

// "sw_power_cap, hw_thermal_slowdown" for the set bits; "none" for 0.
std::string clock_reasons_text(uint64_t mask);

}  // namespace stepwatch
