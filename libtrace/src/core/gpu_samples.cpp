#include "stepwatch/core/gpu_samples.h"

#include <array>
#include <utility>

namespace stepwatch {
namespace {

constexpr std::array<std::pair<GpuMetric, std::string_view>, 5> kNames = {{
    {GpuMetric::kSmClockMhz, "nvml:sm_clock_mhz"},
    {GpuMetric::kMaxSmClockMhz, "nvml:max_sm_clock_mhz"},
    {GpuMetric::kTemperatureC, "nvml:temperature_c"},
    {GpuMetric::kPowerMw, "nvml:power_mw"},
    {GpuMetric::kClockEventReasons, "nvml:clock_event_reasons"},
}};

constexpr std::array<std::pair<uint64_t, std::string_view>, 9> kReasons = {{
    {clock_reason::kGpuIdle, "gpu_idle"},
    {clock_reason::kApplicationsClocksSetting, "applications_clocks_setting"},
    {clock_reason::kSwPowerCap, "sw_power_cap"},
    {clock_reason::kHwSlowdown, "hw_slowdown"},
    {clock_reason::kSyncBoost, "sync_boost"},
    {clock_reason::kSwThermalSlowdown, "sw_thermal_slowdown"},
    {clock_reason::kHwThermalSlowdown, "hw_thermal_slowdown"},
    {clock_reason::kHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {clock_reason::kDisplayClockSetting, "display_clock_setting"},
}};

}  // namespace

std::string_view gpu_sample_name(GpuMetric metric) {
  for (const auto& [m, name] : kNames) {
    if (m == metric) return name;
  }
  return {};
}

std::optional<GpuMetric> gpu_metric_of(std::string_view event_name) {
  if (event_name.substr(0, kGpuSamplePrefix.size()) != kGpuSamplePrefix) return std::nullopt;
  for (const auto& [m, name] : kNames) {
    if (name == event_name) return m;
  }
  return std::nullopt;
}

std::string clock_reasons_text(uint64_t mask) {
  std::string out;
  for (const auto& [bit, name] : kReasons) {
    if ((mask & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace stepwatch
