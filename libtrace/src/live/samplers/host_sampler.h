// The host-state sampler: our replacement for Nsight's OS-runtime (osrt) trace. Off by default
// (STEPWATCH_HOST_SAMPLE_HZ, at most 200 Hz). A thread of ours reads, at a low rate, the state of
// the thread that launches the GPU work from /proc/self/task/<tid>/stat (R running, S/D blocked)
// and /proc/self/task/<tid>/syscall (which call it is blocked in). Consecutive samples blocked in
// the same waiting call (read, poll, futex, ...) become one "osrt:<call>" range on that thread —
// the event the nsys importer makes from OSRT_API — so the Timeline's existing rule uses it: the
// launching thread blocked in such a wait while the GPU idles is input-wait evidence.
//
// Resolution is one sampling period: a range runs from the first to the last blocked sample of a
// run (a wait seen by one sample only gives no range), so it never claims more than the wait.
// Memory: one open run, nothing else. Never throws; a thread that exits or a /proc that cannot be
// read stops sampling it until another target is set.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "core/event_sink.h"

namespace stepwatch::live {

// The thread to sample: its kernel id (for /proc) and the id its events carry. One thread-id space
// everywhere: the CUPTI adapter sets CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM, so API records carry
// gettid() like NVTX ranges and C-API marks (cupti_activity.h:7245-7262; the default would be
// pthread_self()), and the osrt ranges carry the same to meet the launches.
struct HostThread {
  uint32_t os_tid = 0;
  uint32_t event_thread = 0;
  static HostThread current() noexcept;
};

// One sample of a thread, parsed.
struct HostThreadState {
  char state = '?';      // /proc stat field 3: R running, S sleeping, D disk wait, ...
  long syscall = -2;     // /proc syscall: the number it is blocked in; -1 blocked outside a call;
                         // -2 running or unknown
};

// Parsers of /proc/self/task/<tid>/{stat,syscall} text (tested on captured text). stat's comm field
// may hold spaces and parentheses: the state is the field after the LAST ')'.
std::optional<char> parse_stat_state(std::string_view stat);
long parse_syscall_number(std::string_view syscall);  // "running" and junk -> -2
// The name of a waiting call ("read", "poll", "futex", ...) or "" for any other syscall.
std::string_view waiting_call_name(long syscall_number);

class HostSampler {
 public:
  HostSampler(EventSink& sink, int hz);
  ~HostSampler();  // stops and joins
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  // Any thread, cheap: the thread to sample from now on (ends the open run of the previous one).
  void set_target(HostThread target) noexcept;
  void start();
  void stop() noexcept;

  // One sample of the current target at `now_ns` (the thread's loop; tests call it directly).
  void sample_once(int64_t now_ns) noexcept;
  uint64_t ranges_submitted() const noexcept { return ranges_.load(std::memory_order_relaxed); }

 private:
  void loop() noexcept;
  void close_run() noexcept;
  bool read_state(HostThreadState& out) noexcept;
  void open_files(uint32_t os_tid) noexcept;
  void close_files() noexcept;

  EventSink& sink_;
  int64_t period_ns_;
  std::atomic<uint64_t> target_{0};  // os_tid << 32 | event_thread; 0 = none
  std::atomic<uint64_t> ranges_{0};

  // Sampling thread only.
  uint64_t current_ = 0;
  int stat_fd_ = -1;
  int syscall_fd_ = -1;
  struct Run {
    long syscall = -1;
    int64_t first_ns = 0;
    int64_t last_ns = 0;
  };
  std::optional<Run> run_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stepwatch::live
