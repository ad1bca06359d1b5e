// The NVML sampler against a fake libnvidia-ml (tests/live/fake_nvml): samples become the
// "nvml:<metric>" events the Timeline reads; a GPU whose clock drops mid-run gives a throttle
// finding citing the clock through the real pipeline; steady clocks give none; a missing library
// or a failing NVML gives one line and no samples, never a crash.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "recording_sink.h"
#include "live/live_config.h"
#include "live/samplers/nvml_sampler.h"
#include "live_config_support.h"
#include "stepwatch/core/analysis.h"
#include "stepwatch/core/gpu_samples.h"
#include "stepwatch/detectors/registry.h"
#include "synthetic/transforms_c.h"

namespace stepwatch::live {
namespace {

using test_support::RecordingSink;

// The fake's control API, from the same loaded copy the sampler uses.
struct FakeNvml {
  void* handle = ::dlopen(STEPWATCH_FAKE_NVML_SO, RTLD_NOW | RTLD_LOCAL);
  template <typename Fn>
  Fn fn(const char* name) const {
    return reinterpret_cast<Fn>(::dlsym(handle, name));
  }
  void reset(unsigned mhz) const { fn<void (*)(unsigned)>("fake_nvml_reset")(mhz); }
  void drop_clock_after(long reads, unsigned mhz, unsigned long long reasons) const {
    fn<void (*)(long, unsigned, unsigned long long)>("fake_nvml_drop_clock_after")(reads, mhz, reasons);
  }
  void fail_init(int r) const { fn<void (*)(int)>("fake_nvml_fail_init")(r); }
  void fail_clock(int r) const { fn<void (*)(int)>("fake_nvml_fail_clock")(r); }
  int shutdowns() const { return fn<int (*)()>("fake_nvml_shutdowns")(); }
  void hang_clock(bool on) const { fn<void (*)(int)>("fake_nvml_hang_clock")(on ? 1 : 0); }
  bool in_hung_clock() const { return fn<int (*)()>("fake_nvml_in_hung_clock")() != 0; }
};

struct Lines {
  std::mutex mu;
  std::vector<std::string> lines;
  NvmlSampler::InfoLine sink() {
    return [this](std::string_view l) {
      std::lock_guard lock(mu);
      lines.emplace_back(l);
    };
  }
  std::vector<std::string> get() {
    std::lock_guard lock(mu);
    return lines;
  }
};

// Samples until `count` SM-clock samples of device 0 arrived (bounded wait), then stops.
void sample_until(NvmlSampler& sampler, uint64_t count) {
  sampler.start();
  ASSERT_TRUE(sampler.wait_ready(10'000));
  for (int i = 0; i < 2000 && sampler.samples() < count; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  sampler.stop();
  ASSERT_GE(sampler.samples(), count);
}

std::map<std::string, std::vector<uint64_t>> by_metric(const RecordingSink& sink, int16_t device) {
  std::map<std::string, std::vector<uint64_t>> out;
  for (const Event& e : sink.events()) {
    EXPECT_EQ(e.kind, EventKind::kRange);
    EXPECT_EQ(e.start_ns, e.end_ns);
    if (e.device == device) out[sink.name(e.name)].push_back(e.bytes);
  }
  return out;
}

TEST(NvmlSampler, SamplesEveryVisibleGpuAsNvmlEvents) {
  const FakeNvml fake;
  ASSERT_NE(fake.handle, nullptr);
  fake.reset(1755);
  RecordingSink sink;
  Lines lines;
  NvmlSampler sampler(sink, {STEPWATCH_FAKE_NVML_SO, 200, ""}, lines.sink());
  sample_until(sampler, 3);
  for (int16_t device : {int16_t{0}, int16_t{1}}) {
    auto m = by_metric(sink, device);
    ASSERT_GE(m["nvml:sm_clock_mhz"].size(), 3u) << device;
    EXPECT_EQ(m["nvml:sm_clock_mhz"].front(), 1755u);
    EXPECT_EQ(m["nvml:max_sm_clock_mhz"].front(), 1980u);
    EXPECT_EQ(m["nvml:temperature_c"].front(), 61u);
    EXPECT_TRUE(m["nvml:power_mw"].empty()) << "power is not supported by the fake: dropped, not fatal";
    EXPECT_TRUE(m["nvml:clock_event_reasons"].empty()) << "no reason: nothing recorded";
  }
  const auto l = lines.get();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_NE(l[0].find("sampling SM clock"), std::string::npos) << l[0];
  EXPECT_NE(l[0].find("2 GPU(s)"), std::string::npos) << l[0];
  EXPECT_EQ(fake.shutdowns(), 1);
}

TEST(NvmlSampler, CudaVisibleDevicesChoosesTheGpusAndTheirCudaOrdinals) {
  const FakeNvml fake;
  fake.reset(1600);
  RecordingSink sink;
  Lines lines;
  NvmlSampler sampler(sink, {STEPWATCH_FAKE_NVML_SO, 200, "GPU-fake-1"}, lines.sink());
  sample_until(sampler, 2);
  // NVML device 1 is CUDA device 0 of this process; nothing else is sampled.
  for (const Event& e : sink.events()) EXPECT_EQ(e.device, 0);
  EXPECT_FALSE(sink.events().empty());
}

TEST(NvmlSampler, AMissingLibraryIsOneLineAndOff) {
  RecordingSink sink;
  Lines lines;
  NvmlSampler sampler(sink, {"/nonexistent/libnvidia-ml.so.1", 10, ""}, lines.sink());
  sampler.start();
  ASSERT_TRUE(sampler.wait_ready(10'000));
  sampler.stop();
  EXPECT_EQ(sink.event_count(), 0u);
  const auto l = lines.get();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_NE(l[0].find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos) << l[0];
  EXPECT_NE(l[0].find("evidence for throttle is off"), std::string::npos) << l[0];
}

// An NVML call stuck in the driver must not hang the host's exit: stop() gives up on the thread
// after its bound and leaves it (and what it uses) alone; once the call returns, it leaves.
TEST(NvmlSampler, AStuckNvmlCallDoesNotHoldUpStop) {
  const FakeNvml fake;
  fake.reset(1980);
  RecordingSink sink;
  Lines lines;
  auto* sampler = new NvmlSampler(sink, {STEPWATCH_FAKE_NVML_SO, 200, ""}, lines.sink());
  sampler->start();
  ASSERT_TRUE(sampler->wait_ready(10'000));
  fake.hang_clock(true);
  for (int i = 0; i < 5000 && !fake.in_hung_clock(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(fake.in_hung_clock()) << "premise: the sampler thread is inside the stuck call";
  sampler->stop();  // returns (this test would hang otherwise) with the thread still stuck
  EXPECT_TRUE(fake.in_hung_clock());
  EXPECT_FALSE(sampler->exited());
  fake.hang_clock(false);
  for (int i = 0; i < 5000 && !sampler->exited(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(sampler->exited()) << "released, the abandoned thread leaves on its own";
  delete sampler;
}

TEST(NvmlSampler, NvmlErrorsTurnItOffWithOneLine) {
  const FakeNvml fake;
  fake.reset(1980);
  fake.fail_init(9);  // NVML_ERROR_DRIVER_NOT_LOADED
  {
    RecordingSink sink;
    Lines lines;
    NvmlSampler sampler(sink, {STEPWATCH_FAKE_NVML_SO, 200, ""}, lines.sink());
    sampler.start();
    ASSERT_TRUE(sampler.wait_ready(10'000));
    sampler.stop();
    EXPECT_EQ(sink.event_count(), 0u);
    ASSERT_EQ(lines.get().size(), 1u);
    EXPECT_NE(lines.get()[0].find("nvmlInit failed: Fake NVML error"), std::string::npos) << lines.get()[0];
    EXPECT_EQ(fake.shutdowns(), 0) << "no shutdown without a successful init";
  }
  fake.reset(1980);
  fake.fail_clock(15);  // NVML_ERROR_GPU_IS_LOST
  {
    RecordingSink sink;
    Lines lines;
    NvmlSampler sampler(sink, {STEPWATCH_FAKE_NVML_SO, 200, ""}, lines.sink());
    sampler.start();
    ASSERT_TRUE(sampler.wait_ready(10'000));
    sampler.stop();
    EXPECT_EQ(sink.event_count(), 0u);
    const auto l = lines.get();
    ASSERT_EQ(l.size(), 2u);  // sampling started, then stopped with the reason
    EXPECT_NE(l[1].find("reading the SM clock of GPU 0 failed"), std::string::npos) << l[1];
    EXPECT_EQ(fake.shutdowns(), 1);
  }
}

TEST(NvmlSampler, ConfigTurnsItOffAndPointsItElsewhere) {
  std::vector<std::string> problems;
  std::map<std::string, std::string> env = {
      {"STEPWATCH_NVML", "0"}, {"STEPWATCH_NVML_PATH", "/opt/nvml.so"}, {"CUDA_VISIBLE_DEVICES", "2,3"}};
  const LiveConfig c = test_support::read_config(env, problems);
  EXPECT_FALSE(c.nvml);
  EXPECT_EQ(c.nvml_path, "/opt/nvml.so");
  EXPECT_EQ(c.visible_devices, "2,3");
  EXPECT_TRUE(problems.empty());
  EXPECT_TRUE(LiveConfig{}.nvml);
  EXPECT_EQ(LiveConfig{}.nvml_path, "libnvidia-ml.so.1");
}

// ---- through the pipeline: sampler events + a throttled run -> throttle cites the clock ----------

// A 12-step GPU-bound run whose kernels run 1.3x slower from step 7 (or not), with the samples the
// sampler took from the fake laid over it: sample k of device 0 at k x 5 ms of the data's clock.
RankResult analyze_with_samples(double slowdown, bool clock_drops) {
  const FakeNvml fake;
  synthetic::SyntheticRun run = synthetic::make_scenario("gpu_bound", {.steps = 12});
  if (slowdown > 1.0) synthetic::inject_throttle(run, 7, slowdown);
  const int64_t origin = run.truth.front().start_ns - 100'000'000;
  const int64_t end = run.truth.back().end_ns + 100'000'000;
  const int64_t period = 5'000'000;
  const auto drop_at = static_cast<long>((run.truth[6].start_ns - origin) / period);  // step 7's start
  fake.reset(1980);
  if (clock_drops) fake.drop_clock_after(drop_at, 1395, clock_reason::kHwThermalSlowdown);
  RecordingSink sink;
  Lines lines;
  NvmlSampler sampler(sink, {STEPWATCH_FAKE_NVML_SO, 1000, ""}, lines.sink());
  sample_until(sampler, static_cast<uint64_t>((end - origin) / period) + 1);
  // Re-time: the k-th sample (all its metrics) of each device lands at origin + k x period.
  std::map<int16_t, int64_t> k;
  std::map<int16_t, int64_t> last_t;
  for (const Event& e : sink.events()) {
    if (e.device != 0) continue;
    if (last_t.count(e.device) && last_t[e.device] != e.start_ns) ++k[e.device];
    last_t[e.device] = e.start_ns;
    Event& x = run.trace.add(EventKind::kRange, sink.name(e.name), origin + k[e.device] * period, 0);
    x.end_ns = x.start_ns;
    x.bytes = e.bytes;
    x.device = e.device;
  }
  AnalysisConfig config;
  auto detectors = make_detectors(config);
  return analyze_rank(run.trace, 0, config, std::move(detectors));
}

TEST(NvmlSamplerPipeline, AClockThatDropsMidRunConfirmsThrottleWithItsEvidence) {
  const RankResult r = analyze_with_samples(1.3, true);
  int throttle = 0;
  for (const Finding& f : r.findings) {
    if (f.detector != "throttle") continue;
    ++throttle;
    EXPECT_GE(f.step, 7);
    EXPECT_NE(f.message.find("NVML: SM clock 1395 MHz"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("hw_thermal_slowdown"), std::string::npos) << f.message;
    bool temperature = false;
    for (const auto& [key, value] : f.evidence) {
      if (key == "temperature_c") temperature = std::get<int64_t>(value) == 88;
    }
    EXPECT_TRUE(temperature) << f.message;
  }
  EXPECT_GE(throttle, 5);
}

TEST(NvmlSamplerPipeline, SteadyClocksGiveNoThrottleFinding) {
  // Slower kernels at a steady clock: not throttling. No slowdown: nothing at all.
  for (double slowdown : {1.3, 1.0}) {
    const RankResult r = analyze_with_samples(slowdown, false);
    for (const Finding& f : r.findings) EXPECT_NE(f.detector, "throttle") << f.message;
    for (const StepView& v : r.steps) EXPECT_EQ(v.gpu_clocks.sm_clock_median_mhz, 1980);
  }
}

}  // namespace
}  // namespace stepwatch::live
