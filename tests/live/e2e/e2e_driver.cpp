// stepwatch_e2e_driver: a simulated training process for the end-to-end tests.
//
// It loads the real libstepwatch.so the way the CUDA driver would (dlopen + InitializeInjection),
// with STEPWATCH_CUPTI_PATH pointing at the fake libcupti, then replays a synthetic training loop
// in real time: step marks and data phases through the C API at their moments, and the GPU/API
// records as real CUPTI record structs delivered through the fake's buffer callbacks once they
// have "happened". It exits normally (atexit: the exit summary) unless told otherwise.
//
//   stepwatch_e2e_driver INJECT_SO FAKE_CUPTI_SO SCENARIO STEPS
//                        [normal|_exit|fork|fatal|conflict|pool|sigterm|sigterm_exit|storm|unmarked|exit_burst|
//                         profiler|watchdog|cupti_13_6]
//
// SCENARIO sim:<program> plays a live loop against the fake's faithful model instead of replaying
// a synthetic trace (e2e/sim_loop.h); modes there: profiler (torch.profiler's Kineto over four
// steps, bracketed by stepwatch_pause/resume like stepwatch.torch.watch), watchdog (a thread
// polling cudaEventQuery, like the NCCL watchdog), cupti_13_6 (the fake reports CUPTI 13.6, not in the table).
//
// exit_burst: after the loop, 30,000 empty steps marked as fast as the C API allows, then exit
// without a flush: the final pass has more to judge than the exit bound allows.
// unmarked: the same loop without stepwatch_step_begin/end (a job that marks no steps: the live
// pipeline must infer them).
// sigterm / sigterm_exit: half-way, CUPTI's flush hangs (the fake blocks cuptiActivityFlushAll,
// with a buffer of records still inside "CUPTI") and SIGTERM arrives while stepwatch_flush waits
// in it — what torchrun/slurm do to a job. `sigterm` keeps the default disposition (the process
// must die by the signal at once); `sigterm_exit` installs a host handler that calls exit(143)
// (stepwatch's atexit path must still write the exit summary, bounded, and report the loss).
// storm: after the loop, 64 host threads launch at once through the fake's callback path and
// buffers, with a pool far smaller than the demand; prints what it produced and dropped.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "e2e/sim_loop.h"
#include "fake_cupti/fake_cupti.h"
#include "synthetic/transforms.h"
#include "synthetic/workload.h"

namespace {

using stepwatch::CopyKind;
using stepwatch::Event;
using stepwatch::EventKind;
using stepwatch::MemoryKind;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Sleeps, then spins the last 2 ms: a C API mark made late moves its step window against the
// pre-timed GPU records, so the replay must hit its moments to within microseconds even on a
// loaded machine.
void sleep_until_ns(int64_t t) {
  const int64_t d = t - now_ns() - 2'000'000;
  if (d > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(d));
  while (now_ns() < t) {
  }
}

template <typename F>
F sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (!p) {
    std::fprintf(stderr, "e2e_driver: missing symbol %s\n", name);
    std::exit(3);
  }
  return reinterpret_cast<F>(p);
}

uint32_t runtime_cbid(std::string_view name) {
  // cupti_runtime_cbid.h values of the calls the synthetic workload makes.
  if (name == "cudaLaunchKernel") return 211;
  if (name == "cudaMemcpyAsync") return 41;
  if (name == "cudaMemcpy") return 31;
  if (name == "cudaMemsetAsync") return 51;
  if (name == "cudaStreamSynchronize") return 131;
  if (name == "cudaEventRecord") return 135;
  if (name == "cudaStreamWaitEvent") return 147;
  if (name == "cudaMalloc") return 20;
  if (name == "cudaFree") return 22;
  return 0;
}
int cupti_copy_kind(CopyKind k) {
  switch (k) {
    case CopyKind::kHtoD: return 1;
    case CopyKind::kDtoH: return 2;
    case CopyKind::kDtoD: return 8;
    default: return 0;
  }
}
int cupti_memory_kind(MemoryKind k) {
  switch (k) {
    case MemoryKind::kPageable: return 1;
    case MemoryKind::kPinned: return 2;
    case MemoryKind::kDevice: return 3;
    default: return 0;
  }
}

struct Delivery {
  const FakeCuptiControl* fake;
  const stepwatch::Trace* trace;
  int64_t shift_ns;
  std::vector<const Event*> pending;  // records not yet delivered, sorted by end

  // Delivers every record that has "happened" (end <= limit), in buffers from the adapter's pool.
  void deliver_until(int64_t limit_ns) {
    size_t n = 0;
    while (n < pending.size() && pending[n]->end_ns + shift_ns <= limit_ns) ++n;
    size_t i = 0;
    while (i < n) {
      uint8_t* buf = nullptr;
      size_t cap = 0;
      if (fake->request_buffer(&buf, &cap) != 1 || buf == nullptr) return;  // pool exhausted: counted by the adapter
      size_t off = 0;
      for (; i < n; ++i) {
        const size_t next = append(buf, cap, off, *pending[i]);
        if (next == 0) break;  // buffer full
        off = next;
      }
      fake->complete_buffer(buf, off);
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
  }

  size_t append(uint8_t* buf, size_t cap, size_t off, const Event& e) {
    const auto s = static_cast<uint64_t>(e.start_ns + shift_ns);
    const auto t = static_cast<uint64_t>(e.end_ns + shift_ns);
    const auto corr = static_cast<uint32_t>(e.correlation);
    // CUPTI's record names point into memory that outlives the buffer: the trace's name table
    // (NUL-terminated std::string storage) does too.
    const std::string_view name = trace->names.view(e.name);
    switch (e.kind) {
      case EventKind::kKernel:
        return fake->append_kernel(buf, cap, off, name.data(), s, t, corr, 0, e.stream);
      case EventKind::kMemcpy:
        return fake->append_memcpy(buf, cap, off, cupti_copy_kind(e.copy_kind()), cupti_memory_kind(e.src_memory),
                                   cupti_memory_kind(e.dst_memory), 1, e.bytes, s, t, corr, corr, 0, e.stream);
      case EventKind::kApiCall: {
        const uint32_t cbid = runtime_cbid(name);
        return cbid ? fake->append_api(buf, cap, off, 0, cbid, s, t, e.thread, corr) : off;
      }
      default:
        return off;  // memsets and host ranges are not CUPTI activity records here
    }
  }
};

// ---- SIGTERM during a flush -----------------------------------------------------------------

extern "C" void exit_on_sigterm(int) {
  // What many hosts do (C++ trainers, launchers): leave through exit() so that atexit runs.
  std::exit(143);
}

// Makes CUPTI's flush hang with records still inside it, then sends SIGTERM to the process from a
// helper thread as soon as a flush is stuck, while the calling thread is inside stepwatch_flush.
void sigterm_during_a_flush(const FakeCuptiControl* fake, int (*flush)(), bool host_handler) {
  if (host_handler) {
    struct sigaction sa {};
    sa.sa_handler = &exit_on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
  }
  // First an ordinary flush, which returns once the analysis thread has judged and written the
  // steps so far: what was written before the signal is then known, not a race with its cadence.
  flush();
  // A buffer CUPTI holds and would hand back inside the next flush: the records that are lost.
  uint8_t* held = nullptr;
  size_t cap = 0;
  if (fake->request_buffer(&held, &cap) == 1 && held != nullptr) {
    const uint64_t t = static_cast<uint64_t>(now_ns());
    const size_t used = fake->append_kernel(held, cap, 0, "held_by_cupti", t, t + 1000, 0, 0, 7);
    fake->complete_on_next_flush(held, used);
  }
  fake->set_flush_blocks(1);
  // The helper blocks SIGTERM itself, so the signal goes to a thread that takes it as the host
  // would: the main thread, stuck in our flush.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  std::thread killer([fake] {
    while (fake->flushes_blocked() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(getpid(), SIGTERM);
  });
  pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
  std::printf("sigterm: flushing\n");
  std::fflush(stdout);
  flush();  // never returns: the signal ends the process in here
  killer.join();
  std::printf("sigterm: survived the signal (wrong)\n");
  std::exit(5);
}

// ---- 64-thread launch storm -------------------------------------------------------------------

constexpr int kStormThreads = 64;
constexpr int kStormLaunchesPerThread = 1500;
constexpr int kExitBurstSteps = 30000;  // two control events each: below the control cap (65,536)

// Every thread launches kStormLaunchesPerThread kernels: the runtime callback (enter/exit) and a
// kernel record in an activity buffer from the adapter's pool, as CUPTI would. All threads take
// their first buffer at the same moment and hold it until every thread has asked, so a pool
// smaller than 64 refuses some; a thread without a buffer loses its records, which CUPTI counts
// (cuptiActivityGetNumDroppedRecords). Returns the records dropped that way.
struct StormResult {
  uint64_t produced = 0;
  uint64_t dropped_by_cupti = 0;
  uint64_t refused_requests = 0;
};

StormResult launch_storm(const FakeCuptiControl* fake) {
  std::atomic<uint64_t> dropped{0}, refused{0};
  std::barrier first_buffer(kStormThreads);
  const int64_t base = now_ns();
  std::vector<std::thread> threads;
  for (int j = 0; j < kStormThreads; ++j) {
    threads.emplace_back([&, j] {
      uint8_t* buf = nullptr;
      size_t cap = 0, off = 0;
      uint64_t lost = 0, refusals = 0;
      auto take = [&] {
        if (fake->request_buffer(&buf, &cap) != 1 || buf == nullptr) {
          buf = nullptr;
          ++refusals;
        }
        off = 0;
      };
      first_buffer.arrive_and_wait();
      take();
      first_buffer.arrive_and_wait();
      for (int k = 0; k < kStormLaunchesPerThread; ++k) {
        const auto corr = static_cast<uint32_t>(1'000'000 + j * kStormLaunchesPerThread + k);
        fake->fire_callback(2, 211, 0, corr, nullptr);  // cudaLaunchKernel enter
        fake->fire_callback(2, 211, 1, corr, nullptr);  // exit
        const auto t = static_cast<uint64_t>(base + (int64_t(j) * kStormLaunchesPerThread + k) * 100);
        if (buf == nullptr) take();
        if (buf == nullptr) {
          ++lost;
          continue;
        }
        size_t next = fake->append_kernel(buf, cap, off, "storm_kernel", t, t + 50, corr, 0, 100 + j);
        if (next == 0) {  // full: hand it back, take the next
          fake->complete_buffer(buf, off);
          take();
          if (buf == nullptr) {
            ++lost;
            continue;
          }
          next = fake->append_kernel(buf, cap, off, "storm_kernel", t, t + 50, corr, 0, 100 + j);
        }
        off = next;
      }
      if (buf != nullptr) fake->complete_buffer(buf, off);
      dropped += lost;
      refused += refusals;
    });
  }
  for (auto& t : threads) t.join();
  StormResult r;
  r.produced = uint64_t{kStormThreads} * kStormLaunchesPerThread;
  r.dropped_by_cupti = dropped.load();
  r.refused_requests = refused.load();
  return r;
}

// ---- the faithful model: a live loop (e2e/sim_loop.h) -------------------------------------------

// What happens right after InitializeInjection returned: it must have done CUPTI set-up only (the
// run directory and the metrics listener come later, from the analysis thread).
void report_after_init() {
  const char* out = std::getenv("STEPWATCH_OUTPUT_DIR");
  std::printf("after init: output dir %s\n", out != nullptr && ::access(out, F_OK) == 0 ? "present" : "absent");
  if (const char* port = std::getenv("STEPWATCH_METRICS_PORT")) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool open = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    std::printf("after init: metrics port %s\n", open ? "open" : "closed");
  }
}

struct ProfilerSession {
  const FakeCuptiSim* sim;
  stepwatch::e2e::CApi c;
  int start_step, stop_step;
};

// torch.profiler over a few steps, as stepwatch.torch.watch() brackets it: stepwatch_pause before
// Kineto takes CUPTI (prepare_trace), stepwatch_resume after it stopped (stop_trace).
void profiler_around_steps(int step, void* ctx) {
  auto* p = static_cast<ProfilerSession*>(ctx);
  if (step == p->start_step) {
    p->c.pause();
    std::printf("kineto: subscribe -> %d\n", p->sim->kineto_start());
  } else if (step == p->stop_step) {
    p->sim->kineto_stop();
    p->c.resume();
    std::printf("kineto: stopped, records %llu, still subscribed %d\n",
                static_cast<unsigned long long>(p->sim->kineto_records()), p->sim->kineto_subscribed());
  }
}

int run_sim(void* sw, const FakeCuptiSim* sim, const std::string& name, int steps, const std::string& mode) {
  stepwatch::e2e::SimProgram program;
  if (!stepwatch::e2e::sim_program(name, program)) {
    std::fprintf(stderr, "e2e_driver: unknown sim program %s\n", name.c_str());
    return 2;
  }
  stepwatch::e2e::CApi c;
  c.step_begin = sym<int (*)(int64_t)>(sw, "stepwatch_step_begin");
  c.step_end = sym<int (*)()>(sw, "stepwatch_step_end");
  c.phase_push = sym<int (*)(const char*)>(sw, "stepwatch_phase_push");
  c.phase_pop = sym<int (*)()>(sw, "stepwatch_phase_pop");
  c.pause = sym<int (*)()>(sw, "stepwatch_pause");
  c.resume = sym<int (*)()>(sw, "stepwatch_resume");
  auto flush = sym<int (*)()>(sw, "stepwatch_flush");
  ProfilerSession profiler{sim, c, steps / 3, steps / 3 + 4};
  std::atomic<bool> stop_polling{false};
  std::thread poller;
  if (mode == "watchdog") {
    poller = std::thread([&] { stepwatch::e2e::poll_event_queries(*sim, 5'000, stop_polling); });
  }
  const int64_t t0 = now_ns();
  std::vector<std::pair<int64_t, int64_t>> windows;
  const uint64_t kernels = stepwatch::e2e::run_sim_loop(
      program, steps, c, *sim, mode == "profiler" ? &profiler_around_steps : nullptr, &profiler, &windows);
  const double seconds = double(now_ns() - t0) / 1e9;
  stop_polling.store(true);
  if (poller.joinable()) poller.join();
  // exit_at_once: a launcher that returns right after its last step (no flush, no sync), the last
  // step's kernels still queued on the GPU when stepwatch's exit handler runs.
  if (mode == "exit_at_once") {
    std::printf("sim: %llu kernels launched; exiting at once\n", static_cast<unsigned long long>(kernels));
    std::fflush(stdout);
    return 0;
  }
  flush();
  // The ground truth per step: the model GPU's busy share of the step's window.
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto [a, b] = windows[i];
    std::printf("truth: step %zu busy_pct %.2f wall_ms %.3f\n", i,
                b > a ? 100.0 * double(sim->busy_ns(a, b)) / double(b - a) : 0.0, double(b - a) / 1e6);
  }
  FakeCuptiSimStats st{};
  sim->stats(&st);
  std::printf("sim: %llu kernels in %.2f s (%.0f kernels/s); buffers delivered %llu, withheld (summed over flushes) "
              "%llu, forced-flush incomplete %llu\n",
              static_cast<unsigned long long>(kernels), seconds, double(kernels) / seconds,
              static_cast<unsigned long long>(st.buffers_delivered), static_cast<unsigned long long>(st.buffers_withheld),
              static_cast<unsigned long long>(st.forced_incomplete));
  std::printf("thread id type %d, timestamp callbacks registered %d, TEARDOWN_CUPTI %s\n", sim->thread_id_type(),
              sim->timestamp_registrations(), std::getenv("TEARDOWN_CUPTI") ? std::getenv("TEARDOWN_CUPTI") : "unset");
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s INJECT_SO FAKE_CUPTI_SO SCENARIO STEPS [mode]\n", argv[0]);
    return 2;
  }
  const std::string inject = argv[1], fake_so = argv[2], scenario = argv[3];
  const int steps = std::atoi(argv[4]);
  const std::string mode = argc > 5 ? argv[5] : "normal";

  void* fh = dlopen(fake_so.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!fh) {
    std::fprintf(stderr, "e2e_driver: %s\n", dlerror());
    return 3;
  }
  const FakeCuptiControl* fake = sym<const FakeCuptiControl* (*)()>(fh, "fake_cupti_control")();
  fake->reset();
  // The fake is loaded first, as torch's libcupti is: stepwatch must use it (soname libcupti.so.13)
  // whatever STEPWATCH_CUPTI_PATH says; a test may set that to another file.
  setenv("STEPWATCH_CUPTI_PATH", fake_so.c_str(), /*overwrite=*/0);
  const auto* sim = sym<const FakeCuptiSim* (*)()>(fh, "fake_cupti_sim")();
  if (mode == "cupti_13_6") fake->set_version(130600);  // a layout not in the table: must be refused
  if (mode == "conflict") {
    // Another CUPTI client (Nsight Systems) already holds the subscription.
    fake->set_subscribe_result(39);
    fake->set_old_subscriber("Nsight Systems");
  }

  void* sw = dlopen(inject.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!sw) {
    std::fprintf(stderr, "e2e_driver: %s\n", dlerror());
    return 3;
  }
  auto init = sym<int (*)()>(sw, "InitializeInjection");
  auto step_begin = sym<int (*)(int64_t)>(sw, "stepwatch_step_begin");
  auto step_end = sym<int (*)()>(sw, "stepwatch_step_end");
  auto phase_push = sym<int (*)(const char*)>(sw, "stepwatch_phase_push");
  auto phase_pop = sym<int (*)()>(sw, "stepwatch_phase_pop");
  auto flush = sym<int (*)()>(sw, "stepwatch_flush");
  if (init() != 1) return 4;
  if (scenario.rfind("sim:", 0) == 0) {
    report_after_init();
    return run_sim(sw, sim, scenario.substr(4), steps, mode);
  }
  if (mode == "pool") {
    // Buffers CUPTI holds and never completes: the pool reaches its cap and hands out NULL.
    for (int i = 0; i < 64; ++i) {
      uint8_t* buf = nullptr;
      size_t cap = 0;
      fake->request_buffer(&buf, &cap);
    }
  }

  stepwatch::synthetic::ScenarioOptions opts;
  opts.steps = steps;
  opts.first_step = 0;
  // "checkpoint": a GPU-bound loop saving a checkpoint every 4th step (blocking D2H copies to
  // pageable memory, then a file write), the batch-B transform of the synthetic model.
  const bool checkpoint = scenario == "checkpoint";
  auto run = stepwatch::synthetic::make_scenario((checkpoint ? std::string("gpu_bound") : scenario) + "+no_marks", opts);
  if (checkpoint) {
    stepwatch::synthetic::CheckpointSpec spec;
    spec.copies = 4;
    spec.bytes_per_copy = 64ull << 20;
    spec.write_ns = 50'000'000;
    stepwatch::synthetic::inject_checkpoints(run, stepwatch::synthetic::every_nth_step(run, 4), spec);
  }

  Delivery d{fake, &run.trace, (now_ns() + 100'000'000) - run.truth.front().start_ns, {}};
  // Host markers, replayed at their moments through the C API.
  struct Action {
    int64_t t;
    int what;  // 0 step begin, 1 step end, 2 phase push, 3 phase pop
    int64_t step;
    std::string name;
  };
  std::vector<Action> actions;
  for (const auto& t : run.truth) {
    actions.push_back({t.start_ns, 0, t.step, {}});
    actions.push_back({t.end_ns, 1, t.step, {}});
  }
  for (const Event& e : run.trace.events) {
    if (e.kind == EventKind::kRange && run.trace.names.view(e.name).find("DataLoader") != std::string_view::npos) {
      actions.push_back({e.start_ns, 2, 0, std::string(run.trace.names.view(e.name))});
      actions.push_back({e.end_ns, 3, 0, {}});
    }
    if (e.is_gpu_record() || e.kind == EventKind::kApiCall) d.pending.push_back(&e);
  }
  std::stable_sort(actions.begin(), actions.end(), [](const Action& a, const Action& b) { return a.t < b.t; });
  std::sort(d.pending.begin(), d.pending.end(), [](const Event* a, const Event* b) { return a->end_ns < b->end_ns; });

  int steps_done = 0;
  const bool marked = mode != "unmarked";
  for (const Action& a : actions) {
    sleep_until_ns(a.t + d.shift_ns);
    switch (a.what) {
      case 0:
        if (marked) step_begin(a.step);
        break;
      case 1:
        if (marked) step_end();
        d.deliver_until(now_ns());
        ++steps_done;
        if (mode == "fatal" && steps_done == steps / 2) fake->fire_fatal_error(999, "simulated fatal error");
        if (mode == "fork" && steps_done == steps / 2) {
          const pid_t pid = fork();
          if (pid == 0) {
            // The child: stepwatch must be off here and must not touch the parent's threads.
            auto enabled = sym<int (*)()>(sw, "stepwatch_enabled");
            const int rc = enabled() == 0 && step_begin(1) != 0 ? 0 : 7;
            _exit(rc);
          }
          int status = 0;
          waitpid(pid, &status, 0);
          std::printf("fork child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
        if ((mode == "sigterm" || mode == "sigterm_exit") && steps_done == steps / 2) {
          sigterm_during_a_flush(fake, flush, mode == "sigterm_exit");
        }
        break;
      case 2: phase_push(a.name.c_str()); break;
      case 3: phase_pop(); break;
    }
  }
  if (!d.pending.empty()) sleep_until_ns(d.pending.back()->end_ns + d.shift_ns);
  d.deliver_until(now_ns());
  if (mode == "storm") {
    const StormResult r = launch_storm(fake);
    // What CUPTI would report: the records it could not store for want of a buffer.
    fake->set_dropped(r.dropped_by_cupti);
    std::printf("storm: produced %llu dropped_by_cupti %llu refused_requests %llu\n",
                static_cast<unsigned long long>(r.produced), static_cast<unsigned long long>(r.dropped_by_cupti),
                static_cast<unsigned long long>(r.refused_requests));
  }
  if (mode == "exit_burst") {
    // Straight to exit: no flush, so the burst is left to the final pass.
    for (int i = 0; i < kExitBurstSteps; ++i) {
      step_begin(-1);
      step_end();
    }
    std::printf("exit_burst: %d steps marked\n", kExitBurstSteps);
    std::fflush(stdout);
    return 0;
  }
  flush();
  std::fflush(stdout);
  if (mode == "_exit") _exit(0);  // no atexit: outputs written so far must still be valid
  return 0;
}
