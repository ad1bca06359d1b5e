// stepwatch_soak: a long synthetic live run through the real LiveSession, sampling RSS.
//
// A LiveSession (the one libstepwatch.so creates, here from an explicit config and a temporary
// output folder) starts GPU tracing on the fake libcupti, so steps are judged by every detector as
// in a traced job. Two producer threads push Events through its EventSink, like the real front ends:
//   host   — per step: K cudaLaunchKernel API calls, a DataLoader range and the step range (NVTX-like,
//            submitted at its end, named ProfilerStep#N);
//   device — per step: the K kernels (the CUPTI buffer thread), correlated with their launches.
// After each chunk of steps the watermark is advanced past it and the session flushed (the bounded
// back-pressure a real CUPTI flush period gives), so nothing is dropped for a full queue.
// RSS (/proc/self/statm) is sampled every --sample-every events. It fails when, after warm-up, RSS
// grows by more than --tolerance-mib, or when stepwatch's share (RSS minus the baseline taken before
// the session existed, with libcupti already loaded) exceeds --cap-mib (the documented 64 MiB).
//
//   stepwatch_soak                        # the full run: 10^8 events
//   stepwatch_soak --events 10000000      # the CI variant (ctest -L soak)
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "live/live_session.h"

namespace {

using stepwatch::ApiClass;
using stepwatch::Event;
using stepwatch::EventKind;
using stepwatch::NameId;
namespace fs = std::filesystem;

double rss_mib() {
  std::ifstream in("/proc/self/statm");
  long long size = 0, resident = 0;
  in >> size >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

struct Options {
  long long events = 100'000'000;
  long long sample_every = 0;  // 0: events / 40
  int kernels_per_step = 400;
  int steps_per_chunk = 64;  // 2 chunks in flight stay under one 65536-slot ring per producer
  double tolerance_mib = 8;
  double cap_mib = 64;
  double warmup_fraction = 0.2;
  bool keep = false;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](auto& v) {
      if (i + 1 >= argc) return false;
      std::istringstream in(argv[++i]);
      return static_cast<bool>(in >> v);
    };
    bool ok = true;
    if (a == "--events") ok = next(o.events);
    else if (a == "--sample-every") ok = next(o.sample_every);
    else if (a == "--kernels-per-step") ok = next(o.kernels_per_step);
    else if (a == "--steps-per-chunk") ok = next(o.steps_per_chunk);
    else if (a == "--tolerance-mib") ok = next(o.tolerance_mib);
    else if (a == "--cap-mib") ok = next(o.cap_mib);
    else if (a == "--warmup") ok = next(o.warmup_fraction);
    else if (a == "--keep") o.keep = true;
    else ok = false;
    if (!ok) {
      std::fprintf(stderr,
                   "usage: stepwatch_soak [--events N] [--sample-every N] [--kernels-per-step K] "
                   "[--steps-per-chunk C] [--tolerance-mib T] [--cap-mib M] [--warmup FRACTION] [--keep]\n");
      return false;
    }
  }
  return o.events > 0 && o.kernels_per_step > 0 && o.steps_per_chunk > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) return 2;
  const long long per_step = 2LL * opt.kernels_per_step + 2;  // launches + kernels + DataLoader + step
  const long long steps = std::max<long long>(opt.events / per_step, 2 * opt.steps_per_chunk);
  const long long chunks = (steps + opt.steps_per_chunk - 1) / opt.steps_per_chunk;
  const long long total_events = chunks * opt.steps_per_chunk * per_step;
  const long long sample_every = opt.sample_every > 0 ? opt.sample_every : std::max<long long>(total_events / 40, 1);

  // Load the (fake) CUPTI before the baseline: its own footprint is CUPTI's, not stepwatch's.
  if (!dlopen(STEPWATCH_FAKE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL)) {
    std::fprintf(stderr, "soak: cannot load the fake libcupti: %s\n", dlerror());
    return 2;
  }
  char tmpl[] = "/tmp/stepwatch_soak_XXXXXX";
  if (!mkdtemp(tmpl)) return 2;
  const fs::path dir = tmpl;

  stepwatch::live::LiveConfig config;
  config.output_dir = (dir / "out").string();
  config.log_level = "warn";
  config.flush_period_ms = 100;
  config.cupti_path = STEPWATCH_FAKE_CUPTI_SO;
  const double baseline = rss_mib();

  auto session = stepwatch::live::LiveSession::create(config, {}, (dir / "log.txt").string());
  session->start_gpu_tracing();
  const NameId launch_name = session->intern("cudaLaunchKernel");
  const NameId data_name = session->intern("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  const NameId kernel_names[4] = {session->intern("sm90_xmma_gemm_f16f16_f32_tn"),
                                  session->intern("void at::native::vectorized_elementwise_kernel<4>"),
                                  session->intern("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>"),
                                  session->intern("void at::native::reduce_kernel<512, 1>")};
  std::vector<NameId> step_names;  // ProfilerStep#N, reused modulo 64 (a real job's names are bounded too)
  for (int i = 0; i < 64; ++i) step_names.push_back(session->intern("ProfilerStep#" + std::to_string(i)));

  // Synthetic clock: a day ahead of the real one, so the adapter's own watermark (real time) never
  // runs ahead of ours. Per step: 2 ms of data loading, then K launches 10 µs apart, each kernel
  // starting 4 µs after its launch and running 8 µs (the GPU idles 2 µs between kernels).
  const int64_t t0 = stepwatch::now_ns() + 86'400'000'000'000LL;
  const int64_t spacing = 10'000, data_ns = 2'000'000;
  const int64_t step_ns = data_ns + int64_t(opt.kernels_per_step) * spacing + 50'000;
  auto step_start = [&](long long s) { return t0 + s * step_ns; };

  std::atomic<long long> allowed{1};  // producers may run chunks < allowed
  std::atomic<long long> host_done{0}, device_done{0};
  std::atomic<bool> abort_run{false};
  constexpr uint32_t kHostThread = 4242, kStream = 7;

  auto wait_allowed = [&](long long c) {
    while (allowed.load(std::memory_order_acquire) <= c && !abort_run.load()) std::this_thread::yield();
  };
  std::thread host([&] {
    for (long long c = 0; c < chunks && !abort_run.load(); ++c) {
      wait_allowed(c);
      for (long long s = c * opt.steps_per_chunk; s < (c + 1) * opt.steps_per_chunk; ++s) {
        const int64_t s0 = step_start(s);
        Event data;
        data.kind = EventKind::kRange;
        data.name = data_name;
        data.thread = kHostThread;
        data.start_ns = s0;
        data.end_ns = s0 + data_ns;
        session->submit(data);
        for (int k = 0; k < opt.kernels_per_step; ++k) {
          Event e;
          e.kind = EventKind::kApiCall;
          e.detail = static_cast<uint8_t>(ApiClass::kLaunch);
          e.name = launch_name;
          e.thread = kHostThread;
          e.start_ns = s0 + data_ns + k * spacing;
          e.end_ns = e.start_ns + 5'000;
          e.correlation = uint64_t(s) * uint64_t(opt.kernels_per_step) + uint64_t(k) + 1;
          session->submit(e);
        }
        Event step;
        step.kind = EventKind::kRange;
        step.name = step_names[size_t(s % 64)];
        step.thread = kHostThread;
        step.start_ns = s0;
        step.end_ns = s0 + step_ns;
        session->submit(step);
      }
      host_done.store(c + 1, std::memory_order_release);
    }
  });
  std::thread device([&] {
    for (long long c = 0; c < chunks && !abort_run.load(); ++c) {
      wait_allowed(c);
      for (long long s = c * opt.steps_per_chunk; s < (c + 1) * opt.steps_per_chunk; ++s) {
        const int64_t s0 = step_start(s);
        for (int k = 0; k < opt.kernels_per_step; ++k) {
          Event e;
          e.kind = EventKind::kKernel;
          e.name = kernel_names[k % 4];
          e.stream = kStream;
          e.device = 0;
          e.start_ns = s0 + data_ns + k * spacing + 4'000;
          e.end_ns = e.start_ns + 8'000;
          e.correlation = uint64_t(s) * uint64_t(opt.kernels_per_step) + uint64_t(k) + 1;
          session->submit(e);
        }
      }
      device_done.store(c + 1, std::memory_order_release);
    }
  });

  std::printf("stepwatch soak: %lld events (%lld steps of %lld events, 2 producer threads), baseline RSS %.1f MiB\n",
              total_events, chunks * opt.steps_per_chunk, per_step, baseline);
  std::printf("%14s %9s %12s %10s %12s\n", "events", "elapsed_s", "events/s", "rss_mib", "stepwatch_mib");
  struct Sample {
    long long events;
    double rss;
  };
  std::vector<Sample> samples;
  const auto begin = std::chrono::steady_clock::now();
  long long next_sample = sample_every;
  for (long long c = 0; c < chunks; ++c) {
    while (host_done.load(std::memory_order_acquire) <= c || device_done.load(std::memory_order_acquire) <= c) {
      std::this_thread::yield();
    }
    allowed.store(c + 2, std::memory_order_release);  // the next chunk is produced while this one drains
    session->advance_watermark(step_start((c + 1) * opt.steps_per_chunk));
    session->flush();
    const long long done = (c + 1) * opt.steps_per_chunk * per_step;
    if (done >= next_sample || c + 1 == chunks) {
      next_sample += sample_every;
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      const double rss = rss_mib();
      samples.push_back({done, rss});
      std::printf("%14lld %9.1f %12.0f %10.1f %12.1f\n", done, secs, double(done) / secs, rss, rss - baseline);
      std::fflush(stdout);
    }
  }
  host.join();
  device.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  stepwatch_step_summary last{};
  last.struct_size = sizeof last;
  const bool judged = session->last_step(&last) == STEPWATCH_OK;
  const std::string run_dir = session->run_dir();
  session.reset();  // shutdown: final pass, exit summary

  // Verdict.
  const size_t warm = std::min(samples.size() - 1, static_cast<size_t>(double(samples.size()) * opt.warmup_fraction));
  const double at_warm = samples[warm].rss;
  double peak_after = at_warm, peak = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    peak = std::max(peak, samples[i].rss);
    if (i >= warm) peak_after = std::max(peak_after, samples[i].rss);
  }
  std::string summary;
  {
    std::ifstream in(run_dir + "/summary.txt");
    std::stringstream ss;
    ss << in.rdbuf();
    summary = ss.str();
  }
  long long step_lines = 0;
  {
    std::ifstream in(run_dir + "/steps.jsonl");
    for (std::string line; std::getline(in, line);) ++step_lines;
  }
  std::printf("\n%lld events in %.1f s (%.2f M events/s through the session)\n", total_events, secs,
              double(total_events) / secs / 1e6);
  std::printf("RSS: baseline %.1f MiB; after warm-up (%lld events) %.1f MiB; peak after warm-up %.1f MiB "
              "(growth %+.1f MiB, tolerance %.1f); stepwatch's peak share %.1f MiB (cap %.0f)\n",
              baseline, samples[warm].events, at_warm, peak_after, peak_after - at_warm, opt.tolerance_mib,
              peak - baseline, opt.cap_mib);
  std::printf("steps.jsonl: %lld lines; last judged step %lld (%.2f ms, GPU busy %.1f%%)\n", step_lines,
              judged ? (long long)last.step : -1LL, last.duration_ms, last.gpu_busy_pct);
  std::printf("exit summary:\n%s", summary.c_str());

  bool ok = true;
  if (peak_after - at_warm > opt.tolerance_mib) {
    std::printf("FAIL: RSS grew %.1f MiB after warm-up (tolerance %.1f MiB)\n", peak_after - at_warm, opt.tolerance_mib);
    ok = false;
  }
  if (peak - baseline > opt.cap_mib) {
    std::printf("FAIL: stepwatch added %.1f MiB over the baseline (cap %.0f MiB)\n", peak - baseline, opt.cap_mib);
    ok = false;
  }
  if (!judged || step_lines < chunks * opt.steps_per_chunk / 2) {
    std::printf("FAIL: steps were not judged (%lld lines in steps.jsonl)\n", step_lines);
    ok = false;
  }
  if (!opt.keep) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  } else {
    std::printf("outputs kept in %s\n", dir.c_str());
  }
  std::printf("%s\n", ok ? "soak: PASS" : "soak: FAIL");
  return ok ? 0 : 1;
}
