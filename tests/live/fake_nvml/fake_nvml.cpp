// A fake libnvidia-ml.so.1 for the NVML sampler tests: the NVML functions the sampler uses, with
// values the test controls through fake_nvml_* (the test dlopens the same file, so both share this
// library's state). Two devices; the SM clock drops to `low` after a number of clock reads, so a
// "throttled mid-run" GPU needs no timing.
#include <atomic>
#include <chrono>
#include <thread>
#include <cstring>

extern "C" {

struct nvmlDevice_st {
  int index;
};

namespace {
nvmlDevice_st g_devices[2] = {{0}, {1}};
std::atomic<int> g_init_result{0};
std::atomic<int> g_clock_result{0};
std::atomic<unsigned> g_clock_mhz{1980};
std::atomic<unsigned> g_low_clock_mhz{1980};
std::atomic<long> g_drop_after_reads{-1};
std::atomic<long> g_reads{0};
std::atomic<unsigned long long> g_reasons_when_low{0};
std::atomic<int> g_shutdowns{0};
std::atomic<bool> g_hang_clock{false};
std::atomic<bool> g_in_hung_clock{false};
bool low() {
  const long after = g_drop_after_reads.load();
  return after >= 0 && g_reads.load() > after;
}
}  // namespace

// Control API.
void fake_nvml_reset(unsigned clock_mhz) {
  g_init_result = 0;
  g_clock_result = 0;
  g_clock_mhz = clock_mhz;
  g_low_clock_mhz = clock_mhz;
  g_drop_after_reads = -1;
  g_reads = 0;
  g_reasons_when_low = 0;
  g_shutdowns = 0;
  g_hang_clock = false;
}
void fake_nvml_drop_clock_after(long reads, unsigned low_mhz, unsigned long long reasons) {
  g_low_clock_mhz = low_mhz;
  g_reasons_when_low = reasons;
  g_drop_after_reads = reads;
}
void fake_nvml_fail_init(int result) { g_init_result = result; }
void fake_nvml_fail_clock(int result) { g_clock_result = result; }
int fake_nvml_shutdowns() { return g_shutdowns.load(); }
// A clock read that blocks until released: an NVML call stuck in the driver.
void fake_nvml_hang_clock(int on) { g_hang_clock = on != 0; }
int fake_nvml_in_hung_clock() { return g_in_hung_clock.load() ? 1 : 0; }

// NVML.
int nvmlInit_v2() { return g_init_result.load(); }
int nvmlShutdown() {
  ++g_shutdowns;
  return 0;
}
const char* nvmlErrorString(int result) { return result == 0 ? "Success" : "Fake NVML error"; }
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** device) {
  if (index >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &g_devices[index];
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_st** device) {
  if (std::strcmp(uuid, "GPU-fake-1") != 0) return 6;  // NVML_ERROR_NOT_FOUND
  *device = &g_devices[1];
  return 0;
}
int nvmlDeviceGetClockInfo(nvmlDevice_st* device, int type, unsigned* mhz) {
  if (type != 1) return 2;
  if (g_clock_result.load() != 0) return g_clock_result.load();
  if (device->index == 0) ++g_reads;
  if (g_hang_clock.load()) {
    g_in_hung_clock = true;
    while (g_hang_clock.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    g_in_hung_clock = false;
  }
  *mhz = low() ? g_low_clock_mhz.load() : g_clock_mhz.load();
  return 0;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_st*, int type, unsigned* mhz) {
  if (type != 1) return 2;
  *mhz = 1980;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_st*, int, unsigned* celsius) {
  *celsius = low() ? 88 : 61;
  return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_st*, unsigned*) { return 3; }  // NVML_ERROR_NOT_SUPPORTED
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_st*, unsigned long long* reasons) {
  *reasons = low() ? g_reasons_when_low.load() : 0ull;
  return 0;
}

}  // extern "C"
