// The /proc host-state sampler: its parsers on captured /proc text, and live threads blocked in
// read() on a pipe, in poll() and in a futex wait sampled as osrt:<call> ranges on the thread id
// their launches carry; a busy thread yields none. Plus its STEPWATCH_HOST_SAMPLE_HZ setting.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "recording_sink.h"
#include "live/samplers/host_sampler.h"
#include "live/live_config.h"
#include "live_config_support.h"

namespace stepwatch::live {
namespace {

using test_support::RecordingSink;

// ---- parsers ---------------------------------------------------------------------------------

TEST(HostSamplerParse, StateIsTheFieldAfterTheLastParenthesis) {
  // Captured from /proc/self/task/<tid>/stat; comm may hold spaces and parentheses.
  EXPECT_EQ(parse_stat_state("4242 (python3) S 1 4242 4242 0 -1 4194560 2913 0 0 0 12 3 0 0 20 0 9 0"), 'S');
  EXPECT_EQ(parse_stat_state("77 (pt_main_thread) R 1 77 77 0 -1 4194560 10 0 0 0"), 'R');
  EXPECT_EQ(parse_stat_state("91 (a) b (c)) D 1 91 91 0 -1"), 'D');
  EXPECT_EQ(parse_stat_state("91 (Data Loader 0) S 1"), 'S');
  EXPECT_FALSE(parse_stat_state("91 (truncated"));
  EXPECT_FALSE(parse_stat_state("91 (x)"));
  EXPECT_FALSE(parse_stat_state(""));
}

TEST(HostSamplerParse, SyscallNumberOrRunning) {
  // Captured from /proc/self/task/<tid>/syscall (x86_64: 0 = read, 7 = poll, 202 = futex).
  EXPECT_EQ(parse_syscall_number("0 0x3 0x7ffd5c3e2a40 0x1 0x0 0x0 0x0 0x7ffd5c3e2a28 0x7f3b1b8f57e2\n"), 0);
  EXPECT_EQ(parse_syscall_number("202 0x7f3b1a1fe910 0x189 0x0 0x0 0x0 0xffffffff 0x7f3b1a1fe8c0 0x7f3b1b88f117\n"),
            202);
  EXPECT_EQ(parse_syscall_number("-1 0x7ffd5c3e2a28 0x7f3b1b8f57e2\n"), -1);  // blocked outside a call
  EXPECT_EQ(parse_syscall_number("running\n"), -2);
  EXPECT_EQ(parse_syscall_number("12abc 0x1"), -2);
  EXPECT_EQ(parse_syscall_number(""), -2);
}

TEST(HostSamplerParse, OnlyWaitingCallsHaveANames) {
  EXPECT_EQ(waiting_call_name(SYS_read), "read");
  EXPECT_EQ(waiting_call_name(SYS_futex), "futex");
  EXPECT_EQ(waiting_call_name(SYS_ppoll), "ppoll");
  EXPECT_EQ(waiting_call_name(SYS_ioctl), "");  // the CUDA driver's calls are not input waits
  EXPECT_EQ(waiting_call_name(SYS_mmap), "");
  EXPECT_EQ(waiting_call_name(-1), "");
  EXPECT_EQ(waiting_call_name(-2), "");
}

// ---- live threads ------------------------------------------------------------------------------

// A thread that publishes its ids, then runs `body` until told to stop.
class Subject {
 public:
  template <typename Body>
  explicit Subject(Body body) {
    thread_ = std::thread([this, body] {
      {
        std::lock_guard lock(mu_);
        ids_ = HostThread::current();
        ready_ = true;
      }
      cv_.notify_all();
      body();
    });
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return ready_; });
  }
  ~Subject() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  HostThread ids() const { return ids_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  HostThread ids_;
  std::thread thread_;
};

// Samples the subject directly (no sampler thread): 20 samples 5 ms apart on the data clock.
std::map<std::string, int> sample_ranges(RecordingSink& sink, HostSampler& sampler, HostThread target) {
  sampler.set_target(target);
  for (int i = 0; i < 20; ++i) {
    sampler.sample_once(1'000'000'000 + int64_t{i} * 5'000'000);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  sampler.set_target(HostThread{});
  sampler.sample_once(2'000'000'000);  // a new target closes the open run
  std::map<std::string, int> ranges;
  for (const Event& e : sink.events()) {
    EXPECT_EQ(e.kind, EventKind::kRange);
    EXPECT_EQ(e.thread, target.event_thread) << "the range must meet the launches of that thread";
    EXPECT_GT(e.end_ns, e.start_ns);
    ++ranges[sink.name(e.name)];
  }
  return ranges;
}

TEST(HostSamplerLive, AThreadBlockedInReadOnAPipeIsSampledAsOsrtRead) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Subject reader([&] {
    char c;
    ASSERT_EQ(::read(fds[0], &c, 1), 1);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it enter read()
  RecordingSink sink;
  HostSampler sampler(sink, 200);
  const auto ranges = sample_ranges(sink, sampler, reader.ids());
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  reader.join();  // before the pipe closes: the reader's read() must be over
  EXPECT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges.count("osrt:read"), 1u);
  // The whole wait is one range: 20 samples, first to last.
  for (const Event& e : sink.events()) EXPECT_EQ(e.end_ns - e.start_ns, 19 * 5'000'000);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(HostSamplerLive, PollAndFutexWaitsAreSampledToo) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    Subject poller([&] {
      pollfd p{fds[0], POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, -1), 1);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    RecordingSink sink;
    HostSampler sampler(sink, 200);
    const auto ranges = sample_ranges(sink, sampler, poller.ids());
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    // glibc's poll() is the poll syscall where it exists, ppoll elsewhere (aarch64).
    EXPECT_EQ(ranges.count("osrt:poll") + ranges.count("osrt:ppoll"), 1u);
  }
  {
    std::mutex mu;
    std::condition_variable cv;
    bool go = false;
    Subject waiter([&] {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return go; });  // a futex wait
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    RecordingSink sink;
    HostSampler sampler(sink, 200);
    const auto ranges = sample_ranges(sink, sampler, waiter.ids());
    {
      std::lock_guard lock(mu);
      go = true;
    }
    cv.notify_all();
    EXPECT_EQ(ranges.count("osrt:futex"), 1u);
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(HostSamplerLive, ABusyThreadYieldsNoRanges) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> spins{0};
  RecordingSink sink;
  {
    Subject spinner([&] {
      while (!stop.load(std::memory_order_relaxed)) spins.fetch_add(1, std::memory_order_relaxed);
    });
    HostSampler sampler(sink, 200);
    sample_ranges(sink, sampler, spinner.ids());
    stop = true;
  }
  EXPECT_GT(spins.load(), 0u);
  EXPECT_EQ(sink.event_count(), 0u);
}

TEST(HostSamplerLive, TheSamplerThreadReportsAWaitAndStopsCleanly) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  RecordingSink sink;
  {
    Subject reader([&] {
      char c;
      ASSERT_EQ(::read(fds[0], &c, 1), 1);
    });
    HostSampler sampler(sink, 200);
    sampler.set_target(reader.ids());
    sampler.start();
    // No timed assertion: wait (bounded) until a few samples saw the wait, then end it.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sampler.stop();
  }
  bool read_range = false;
  for (const Event& e : sink.events()) read_range |= sink.name(e.name) == "osrt:read";
  EXPECT_TRUE(read_range);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(HostSamplerLive, AnExitedThreadIsDroppedWithoutCrashing) {
  RecordingSink sink;
  HostSampler sampler(sink, 200);
  HostThread gone;
  { Subject quick([] {}); gone = quick.ids(); }
  sampler.set_target(gone);
  for (int i = 0; i < 5; ++i) sampler.sample_once(int64_t{i} * 5'000'000);
  EXPECT_EQ(sink.event_count(), 0u);
}

// ---- configuration -------------------------------------------------------------------------------


TEST(HostSamplerConfig, OffByDefaultClampedTo200AndBadValuesOff) {
  std::vector<std::string> problems;
  EXPECT_EQ(test_support::read_config({}, problems).host_sample_hz, 0);
  EXPECT_EQ(test_support::read_config({{"STEPWATCH_HOST_SAMPLE_HZ", "100"}}, problems).host_sample_hz, 100);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(test_support::read_config({{"STEPWATCH_HOST_SAMPLE_HZ", "1000"}}, problems).host_sample_hz, 200);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("using 200"), std::string::npos) << problems[0];
  problems.clear();
  EXPECT_EQ(test_support::read_config({{"STEPWATCH_HOST_SAMPLE_HZ", "fast"}}, problems).host_sample_hz, 0);
  EXPECT_EQ(test_support::read_config({{"STEPWATCH_HOST_SAMPLE_HZ", "-5"}}, problems).host_sample_hz, 0);
  EXPECT_EQ(problems.size(), 2u);
}

}  // namespace
}  // namespace stepwatch::live
