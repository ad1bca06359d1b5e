#include "live/samplers/host_sampler.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <string>
#include <utility>

#include "core/quiet_thread.h"

namespace stepwatch::live {
namespace {

constexpr int kMaxHz = 200;

uint64_t pack(HostThread t) { return (uint64_t{t.os_tid} << 32) | t.event_thread; }

// The calls in which a thread waits for input or for another thread (the nsys importer's
// is_waiting_osrt_call, at the syscall level). Guarded: aarch64 lacks the legacy ones.
constexpr std::pair<long, std::string_view> kWaitingCalls[] = {
    {SYS_read, "read"},
    {SYS_readv, "readv"},
    {SYS_pread64, "pread64"},
    {SYS_preadv, "preadv"},
    {SYS_recvfrom, "recvfrom"},
    {SYS_recvmsg, "recvmsg"},
    {SYS_ppoll, "ppoll"},
    {SYS_pselect6, "pselect6"},
    {SYS_epoll_pwait, "epoll_pwait"},
    {SYS_futex, "futex"},
    {SYS_nanosleep, "nanosleep"},
    {SYS_clock_nanosleep, "clock_nanosleep"},
    {SYS_wait4, "wait4"},
    {SYS_waitid, "waitid"},
#ifdef SYS_poll
    {SYS_poll, "poll"},
#endif
#ifdef SYS_select
    {SYS_select, "select"},
#endif
#ifdef SYS_epoll_wait
    {SYS_epoll_wait, "epoll_wait"},
#endif
};

// Reads a whole /proc file from offset 0 (re-reading an open /proc file regenerates it).
ssize_t read_at_start(int fd, char* buf, size_t size) {
  if (fd < 0) return -1;
  const ssize_t n = ::pread(fd, buf, size - 1, 0);
  if (n >= 0) buf[n] = '\0';
  return n;
}

}  // namespace

HostThread HostThread::current() noexcept {
  const auto tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  return HostThread{tid, tid};
}

std::optional<char> parse_stat_state(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos || paren + 2 >= stat.size() || stat[paren + 1] != ' ') return std::nullopt;
  const char state = stat[paren + 2];
  if (state < 'A' || state > 'z') return std::nullopt;
  return state;
}

long parse_syscall_number(std::string_view syscall) {
  long nr = -2;
  auto [ptr, ec] = std::from_chars(syscall.data(), syscall.data() + syscall.size(), nr);
  if (ec != std::errc() || nr < -1) return -2;
  // A number must stand alone ("202 0x..." or "-1 0x..."), not begin a word.
  if (ptr != syscall.data() + syscall.size() && *ptr != ' ' && *ptr != '\n') return -2;
  return nr;
}

std::string_view waiting_call_name(long syscall_number) {
  for (const auto& [nr, name] : kWaitingCalls) {
    if (nr == syscall_number) return name;
  }
  return {};
}

HostSampler::HostSampler(EventSink& sink, int hz)
    : sink_(sink), period_ns_(1'000'000'000 / std::clamp(hz, 1, kMaxHz)) {}

HostSampler::~HostSampler() {
  stop();
  close_files();
}

void HostSampler::set_target(HostThread target) noexcept {
  target_.store(pack(target), std::memory_order_relaxed);
}

void HostSampler::start() {
  if (thread_.joinable()) return;
  thread_ = spawn_quiet_thread([this] { loop(); });
}

void HostSampler::stop() noexcept {
  try {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();  // the loop only reads /proc: it returns within a period
  } catch (...) {
  }
}

void HostSampler::loop() noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::nanoseconds(period_ns_), [&] { return stop_; })) {
      lock.unlock();
      sample_once(now_ns());
      lock.lock();
    }
  } catch (...) {
  }
  close_run();
}

void HostSampler::open_files(uint32_t os_tid) noexcept {
  close_files();
  const std::string dir = "/proc/self/task/" + std::to_string(os_tid);
  stat_fd_ = ::open((dir + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  // May be missing or unreadable (gVisor, hardened kernels): then the state alone is known and no
  // range is made (which call the thread waits in is the evidence).
  syscall_fd_ = ::open((dir + "/syscall").c_str(), O_RDONLY | O_CLOEXEC);
}

void HostSampler::close_files() noexcept {
  if (stat_fd_ >= 0) ::close(stat_fd_);
  if (syscall_fd_ >= 0) ::close(syscall_fd_);
  stat_fd_ = syscall_fd_ = -1;
}

bool HostSampler::read_state(HostThreadState& out) noexcept {
  char buf[512];
  if (read_at_start(stat_fd_, buf, sizeof buf) <= 0) return false;
  const auto state = parse_stat_state(buf);
  if (!state) return false;
  out.state = *state;
  out.syscall = -2;
  if (*state != 'R' && read_at_start(syscall_fd_, buf, sizeof buf) > 0) out.syscall = parse_syscall_number(buf);
  return true;
}

void HostSampler::sample_once(int64_t now_ns) noexcept {
  const uint64_t target = target_.load(std::memory_order_relaxed);
  if (target != current_) {
    close_run();
    current_ = target;
    if (target == 0) close_files();
    else open_files(static_cast<uint32_t>(target >> 32));
  }
  if (current_ == 0 || stat_fd_ < 0) return;
  HostThreadState s;
  if (!read_state(s)) {  // the thread exited: wait for another target
    close_run();
    close_files();
    return;
  }
  const bool waiting = s.state != 'R' && !waiting_call_name(s.syscall).empty();
  if (run_ && (!waiting || run_->syscall != s.syscall)) close_run();
  if (!waiting) return;
  if (!run_) run_ = Run{s.syscall, now_ns, now_ns};
  run_->last_ns = now_ns;
}

void HostSampler::close_run() noexcept {
  if (!run_) return;
  const Run run = *run_;
  run_.reset();
  if (run.last_ns <= run.first_ns) return;  // one sample: no duration to claim
  try {
    Event e;
    e.kind = EventKind::kRange;
    e.name = sink_.intern("osrt:" + std::string(waiting_call_name(run.syscall)));
    e.start_ns = run.first_ns;
    e.end_ns = run.last_ns;
    e.thread = static_cast<uint32_t>(current_ & 0xffffffffu);
    sink_.submit(e);
    ranges_.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
  }
}

}  // namespace stepwatch::live
