// The /proc host-state sampler's cost: one sample of a thread blocked in read() (two preads of
// /proc/self/task/<tid>/{stat,syscall} and their parsing). At the 200 Hz maximum this is the
// sampler thread's whole CPU cost per second / 200; the sampled thread itself is never touched.
//   build/bin/stepwatch_bench --benchmark_filter=HostSampler
#include <benchmark/benchmark.h>

#if __has_include("live/host_sampler.h")
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "live/samplers/host_sampler.h"

namespace stepwatch::live {
namespace {

class NullSink final : public EventSink {
 public:
  void submit(const Event&) noexcept override {}
  NameId intern(std::string_view) noexcept override { return 1; }
  void report_loss(LossKind, uint64_t) noexcept override {}
  void advance_watermark(int64_t) noexcept override {}
  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}
};

void BM_HostSamplerSampleBlockedThread(benchmark::State& state) {
  int fds[2];
  if (::pipe(fds) != 0) {
    state.SkipWithError("pipe");
    return;
  }
  std::mutex mu;
  std::condition_variable cv;
  HostThread ids;
  bool ready = false;
  std::thread reader([&] {
    {
      std::lock_guard lock(mu);
      ids = HostThread::current();
      ready = true;
    }
    cv.notify_all();
    char c;
    (void)::read(fds[0], &c, 1);
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ready; });
  }
  NullSink sink;
  HostSampler sampler(sink, 200);
  sampler.set_target(ids);
  int64_t t = 0;
  for (auto _ : state) sampler.sample_once(t += 5'000'000);
  (void)::write(fds[1], "x", 1);
  reader.join();
  ::close(fds[0]);
  ::close(fds[1]);
}
BENCHMARK(BM_HostSamplerSampleBlockedThread);

void BM_HostSamplerParseStat(benchmark::State& state) {
  const std::string_view stat = "4242 (pt_main_thread) S 1 4242 4242 0 -1 4194560 2913 0 0 0 12 3 0 0 20 0 9 0";
  for (auto _ : state) benchmark::DoNotOptimize(parse_stat_state(stat));
}
BENCHMARK(BM_HostSamplerParseStat);

}  // namespace
}  // namespace stepwatch::live
#endif
