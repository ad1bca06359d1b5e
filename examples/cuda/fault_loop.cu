// fault_loop — a CUDA C++ model of a training loop with injectable faults.
//
// Each iteration is one NVTX range named `step` (warm-up iterations are ranges named `warmup`,
// which do not match stepwatch's step pattern), with a `DataLoader` range around the simulated
// data wait. A healthy step launches a few compute-bound kernels on one stream while the host
// runs at most one step ahead. `--fault` injects one of the faults of stepwatch's catalog:
//
//   none          healthy loop (no finding expected)
//   starvation    the DataLoader wait is ~2x the GPU work: the GPU idles ~50% of each step
//                 (input_starvation)
//   item-sync     a few `.item()`-style syncs mid-step: cudaMemcpy D2H of one float +
//                 cudaStreamSynchronize, then a little host work while the GPU sits drained
//                 (hidden_sync)
//   pageable      a 64 MiB cudaMemcpyAsync H2D from malloc'd (pageable) memory each step; the
//                 copy drains the stream and the host then prepares the step (hidden_sync)
//   exposed-comm  an all-reduce on its own stream, serialized after the last compute kernel by
//                 an event, and the next step waits on it (exposed_collective)
//   launch-bound  thousands of tiny (<10 us) kernels per step (launch_bound)
//
// One line per step on stdout (`step 12 5.431 ms`), then `median_step_ms X`. Every CUDA and
// NCCL call is checked; errors exit non-zero with a message (2 usage, 3 CUDA, 4 NCCL).
// See examples/cuda/README.md.
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Error checking: every CUDA / NCCL call goes through one of these.

void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "fault_loop: CUDA error at %s:%d: %s: %s (%s)\n", file, line, call, cudaGetErrorName(err),
               cudaGetErrorString(err));
  std::fflush(stdout);
  std::exit(3);
}

void check_nccl(ncclResult_t res, ncclComm_t comm, const char* call, const char* file, int line) {
  if (res == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  std::fprintf(stderr, "fault_loop: NCCL error at %s:%d: %s: %s%s%s\n", file, line, call, ncclGetErrorString(res),
               last && *last ? " — " : "", last ? last : "");
  std::fflush(stdout);
  std::exit(4);
}

#define CUDA_CHECK(call) check_cuda((call), #call, __FILE__, __LINE__)
// Kernel launches report errors through cudaGetLastError, as PyTorch checks each launch.
#define CUDA_CHECK_LAUNCH(what) check_cuda(cudaGetLastError(), what, __FILE__, __LINE__)
#define NCCL_CHECK(call, comm) check_nccl((call), (comm), #call, __FILE__, __LINE__)

// ---------------------------------------------------------------------------------------------
// Kernels.

constexpr int kThreads = 256;
constexpr int kChains = 8;  // independent FMA chains per thread: enough ILP to saturate the FP32 pipes

__device__ __forceinline__ float fma_chains(float seed, int iters, float a, float b) {
  float v[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) v[c] = seed + 0.001f * static_cast<float>(c);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) v[c] = fmaf(v[c], a, b);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += v[c];
  return s;
}

// The "model": compute-bound layers (FMA-heavy, like a GEMM's inner loop), sized by `iters`.
__global__ void layer_forward(const float* __restrict__ in, float* __restrict__ out, int n, int iters, float a,
                              float b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fma_chains(in[i], iters, a, b);
}

__global__ void layer_backward(const float* __restrict__ in, float* __restrict__ out, int n, int iters, float a,
                               float b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fma_chains(in[i] * 0.5f, iters, a, b);
}

__global__ void optimizer_update(float* __restrict__ w, const float* __restrict__ g, int n, float lr) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) w[i] -= lr * g[i];
}

// launch-bound: a kernel that runs for a couple of microseconds.
__global__ void tiny_elementwise(float* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 0.5f + 0.25f;
}

// exposed-comm, one GPU: NCCL runs no collective kernel for a single rank (a sum all-reduce on
// one rank is a no-op or a device copy), and NCCL refuses two ranks on one GPU. This kernel stands
// in for the ring all-reduce's time on the wire. Its name carries NCCL's kernel prefix
// (`ncclDevKernel_<Coll>_<Op>_<type>_<algo>_<proto>`), which is how stepwatch — like Nsight
// Systems' NCCL row — classifies a kernel as communication.
__global__ void ncclDevKernel_AllReduce_Sum_f32_RING_LL_standin(float* __restrict__ buf, int n, int iters, float a,
                                                                float b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[i] = fma_chains(buf[i], iters, a, b);
}

// ---------------------------------------------------------------------------------------------
// Options.

enum class Fault { kNone, kStarvation, kItemSync, kPageable, kExposedComm, kLaunchBound };

struct FaultName {
  Fault fault;
  const char* name;
  const char* expected;  // the detector stepwatch should report
};
constexpr FaultName kFaults[] = {
    {Fault::kNone, "none", "(none)"},
    {Fault::kStarvation, "starvation", "input_starvation"},
    {Fault::kItemSync, "item-sync", "hidden_sync"},
    {Fault::kPageable, "pageable", "hidden_sync"},
    {Fault::kExposedComm, "exposed-comm", "exposed_collective"},
    {Fault::kLaunchBound, "launch-bound", "launch_bound"},
};

const char* fault_name(Fault f) {
  for (const auto& n : kFaults)
    if (n.fault == f) return n.name;
  return "?";
}

struct Options {
  Fault fault = Fault::kNone;
  int steps = 60;
  int warmup = 5;
  int kernels = 4;            // compute kernels per step
  double kernel_ms = 1.5;     // target duration of one compute kernel (calibrated)
  int kernel_iters = 0;       // 0: calibrate to kernel_ms
  double data_ms = -1;        // DataLoader wait; <0: 0.1 ms, or 2x the GPU work for starvation
  double host_work_ms = -1;   // <0: 1.0 (item-sync, after each sync) or 2.0 (pageable, after the copy)
  int syncs = 3;              // item-sync: syncs per step
  int pageable_mb = 64;
  int tiny_kernels = 3000;    // launch-bound: tiny kernels per step
  bool comm_nccl = true;      // exposed-comm: call ncclAllReduce (plus the stand-in kernel)
  int comm_mb = 256;          // exposed-comm: all-reduce buffer
  double comm_fraction = 0.5; // exposed-comm: stand-in kernel time / compute time
  int device = 0;
  bool calibrate_only = false;
};

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: fault_loop [options]\n"
               "  --fault F           none|starvation|item-sync|pageable|exposed-comm|launch-bound (default none)\n"
               "  --steps N           measured steps, NVTX ranges named 'step' (default 60)\n"
               "  --warmup N          warm-up iterations first, NVTX ranges named 'warmup' (default 5)\n"
               "  --kernels N         compute kernels per step (default 4)\n"
               "  --kernel-ms X       target time of one compute kernel, calibrated at start (default 1.5)\n"
               "  --kernel-iters N    FMA iterations per compute kernel; skips calibration (default: calibrate)\n"
               "  --calibrate         print 'kernel_iters N' for --kernel-ms and exit\n"
               "  --data-ms X         DataLoader wait per step (default 0.1; starvation: 2x the step's GPU work)\n"
               "  --host-work-ms X    host work after each item-sync (default 1.0) / after the pageable copy (2.0)\n"
               "  --syncs N           item-sync: syncs per step (default 3)\n"
               "  --pageable-mb N     pageable: H2D copy size (default 64)\n"
               "  --tiny-kernels N    launch-bound: tiny kernels per step (default 3000)\n"
               "  --comm nccl|standin exposed-comm: call ncclAllReduce as well as the stand-in kernel, or only\n"
               "                      the stand-in (no NCCL communicator) (default nccl)\n"
               "  --comm-mb N         exposed-comm: all-reduce buffer size (default 256)\n"
               "  --comm-fraction X   exposed-comm: all-reduce time as a fraction of the compute time (default 0.5)\n"
               "  --device N          CUDA device (default 0)\n"
               "faults and the stepwatch detector each should trigger:\n");
  for (const auto& n : kFaults) std::fprintf(to, "  %-13s %s\n", n.name, n.expected);
}

[[noreturn]] void bad_usage(const std::string& msg) {
  std::fprintf(stderr, "fault_loop: %s\n", msg.c_str());
  usage(stderr);
  std::exit(2);
}

long parse_int(const char* opt, const char* s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
    bad_usage(std::string(opt) + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
              "], got '" + s + "'");
  return v;
}

double parse_real(const char* opt, const char* s, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi))
    bad_usage(std::string(opt) + ": expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
              "], got '" + s + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (a == "--calibrate") {
      o.calibrate_only = true;
      continue;
    }
    if (i + 1 >= argc) bad_usage("missing value for " + std::string(a));
    const char* v = argv[++i];
    if (a == "--fault") {
      bool found = false;
      for (const auto& n : kFaults)
        if (std::string_view(v) == n.name) o.fault = n.fault, found = true;
      if (!found) bad_usage(std::string("unknown fault '") + v + "'");
    } else if (a == "--steps") {
      o.steps = static_cast<int>(parse_int("--steps", v, 1, 1000000));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parse_int("--warmup", v, 0, 1000000));
    } else if (a == "--kernels") {
      o.kernels = static_cast<int>(parse_int("--kernels", v, 1, 1000));
    } else if (a == "--kernel-ms") {
      o.kernel_ms = parse_real("--kernel-ms", v, 0.01, 1000);
    } else if (a == "--kernel-iters") {
      o.kernel_iters = static_cast<int>(parse_int("--kernel-iters", v, 1, 1 << 30));
    } else if (a == "--data-ms") {
      o.data_ms = parse_real("--data-ms", v, 0, 100000);
    } else if (a == "--host-work-ms") {
      o.host_work_ms = parse_real("--host-work-ms", v, 0, 100000);
    } else if (a == "--syncs") {
      o.syncs = static_cast<int>(parse_int("--syncs", v, 0, 1000));
    } else if (a == "--pageable-mb") {
      o.pageable_mb = static_cast<int>(parse_int("--pageable-mb", v, 1, 16384));
    } else if (a == "--tiny-kernels") {
      o.tiny_kernels = static_cast<int>(parse_int("--tiny-kernels", v, 1, 10000000));
    } else if (a == "--comm") {
      if (std::string_view(v) == "nccl") o.comm_nccl = true;
      else if (std::string_view(v) == "standin") o.comm_nccl = false;
      else bad_usage(std::string("--comm: expected nccl or standin, got '") + v + "'");
    } else if (a == "--comm-mb") {
      o.comm_mb = static_cast<int>(parse_int("--comm-mb", v, 1, 65536));
    } else if (a == "--comm-fraction") {
      o.comm_fraction = parse_real("--comm-fraction", v, 0.01, 100);
    } else if (a == "--device") {
      o.device = static_cast<int>(parse_int("--device", v, 0, 1024));
    } else {
      bad_usage("unknown option '" + std::string(a) + "'");
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// Host side helpers.

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Busy host work (logging a metric, building the next step's inputs, Python overhead...).
volatile double g_host_sink = 0;
void host_work(double ms) {
  if (ms <= 0) return;
  const auto t0 = Clock::now();
  double x = 1.0;
  while (ms_since(t0) < ms) {
    for (int i = 0; i < 256; ++i) x = x * 1.0000001 + 1e-9;
  }
  g_host_sink = g_host_sink + x;
}

// A DataLoader-style wait: the training thread blocks on the loader's queue.
void data_wait(double ms) {
  nvtxRangePushA("DataLoader");
  if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  nvtxRangePop();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// ---------------------------------------------------------------------------------------------
// The loop.

class Loop {
 public:
  explicit Loop(const Options& o) : o_(o) {}

  void setup() {
    CUDA_CHECK(cudaSetDevice(o_.device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, o_.device));
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, o_.device));
    blocks_ = std::max(1, sms) * 4;
    n_ = blocks_ * kThreads;
    int runtime = 0, driver = 0;
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    std::printf("fault_loop: device %d %s (sm_%d%d, %d SMs), CUDA runtime %d, driver %d\n", o_.device, prop.name,
                prop.major, prop.minor, sms, runtime, driver);

    CUDA_CHECK(cudaStreamCreate(&compute_));
    CUDA_CHECK(cudaMalloc(&act_a_, sizeof(float) * static_cast<size_t>(n_)));
    CUDA_CHECK(cudaMalloc(&act_b_, sizeof(float) * static_cast<size_t>(n_)));
    CUDA_CHECK(cudaMemset(act_a_, 0, sizeof(float) * static_cast<size_t>(n_)));
    CUDA_CHECK(cudaMemset(act_b_, 0, sizeof(float) * static_cast<size_t>(n_)));
    CUDA_CHECK(cudaMalloc(&params_, sizeof(float) * kParams));
    CUDA_CHECK(cudaMalloc(&grads_, sizeof(float) * kParams));
    CUDA_CHECK(cudaMemset(params_, 0, sizeof(float) * kParams));
    CUDA_CHECK(cudaMemset(grads_, 0, sizeof(float) * kParams));
    CUDA_CHECK(cudaMalloc(&tiny_, sizeof(float) * kTinyN));
    CUDA_CHECK(cudaMemset(tiny_, 0, sizeof(float) * kTinyN));
    CUDA_CHECK(cudaEventCreate(&t_start_));
    CUDA_CHECK(cudaEventCreate(&t_stop_));

    if (o_.fault == Fault::kPageable) {
      pageable_bytes_ = static_cast<size_t>(o_.pageable_mb) << 20;
      host_batch_ = static_cast<unsigned char*>(std::malloc(pageable_bytes_));  // pageable on purpose
      if (!host_batch_) {
        std::fprintf(stderr, "fault_loop: cannot allocate %zu bytes of host memory\n", pageable_bytes_);
        std::exit(3);
      }
      std::memset(host_batch_, 1, pageable_bytes_);  // touch every page once: no page faults in the loop
      CUDA_CHECK(cudaMalloc(&dev_batch_, pageable_bytes_));
    }
    if (o_.fault == Fault::kExposedComm) {
      comm_count_ = (static_cast<size_t>(o_.comm_mb) << 20) / sizeof(float);
      CUDA_CHECK(cudaStreamCreate(&comm_stream_));
      CUDA_CHECK(cudaMalloc(&comm_buf_, comm_count_ * sizeof(float)));
      CUDA_CHECK(cudaMemset(comm_buf_, 0, comm_count_ * sizeof(float)));
      CUDA_CHECK(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
      CUDA_CHECK(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));
    }
  }

  // Chooses kernel_iters so that one compute kernel takes about --kernel-ms, then measures the
  // GPU time of one healthy step's compute.
  void calibrate() {
    if (o_.kernel_iters > 0) {
      iters_ = o_.kernel_iters;
    } else {
      int iters = 2048;
      for (int round = 0; round < 3; ++round) {
        const double t = time_compute_kernel(iters);
        const double scaled = static_cast<double>(iters) * o_.kernel_ms / std::max(t, 1e-3);
        iters = static_cast<int>(std::clamp(scaled, 16.0, 1e9));
      }
      iters_ = iters;
    }
    kernel_ms_measured_ = time_compute_kernel(iters_);
    // One healthy step's compute, as a block of back-to-back kernels.
    CUDA_CHECK(cudaEventRecord(t_start_, compute_));
    launch_compute(0);
    CUDA_CHECK(cudaEventRecord(t_stop_, compute_));
    CUDA_CHECK(cudaEventSynchronize(t_stop_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, t_start_, t_stop_));
    compute_ms_ = ms;

    data_ms_ = o_.data_ms >= 0 ? o_.data_ms : (o_.fault == Fault::kStarvation ? std::max(2.0 * compute_ms_, 5.0) : 0.1);
    host_work_ms_ = o_.host_work_ms >= 0 ? o_.host_work_ms : (o_.fault == Fault::kPageable ? 2.0 : 1.0);
    const double comm_iters = static_cast<double>(iters_) * o_.kernels * o_.comm_fraction;
    comm_iters_ = static_cast<int>(std::clamp(comm_iters, 1.0, 2.0e9));
  }

  void print_config() const {
    std::printf("kernel_iters %d\n", iters_);
    std::printf("kernel_ms %.3f\n", kernel_ms_measured_);
    std::printf("gpu_compute_ms_per_step %.3f\n", compute_ms_);
  }

  void setup_comm() {
    if (o_.fault != Fault::kExposedComm || !o_.comm_nccl) return;
    int version = 0;
    NCCL_CHECK(ncclGetVersion(&version), nullptr);
    int dev = o_.device;
    NCCL_CHECK(ncclCommInitAll(&comm_, 1, &dev), nullptr);
    int nranks = 0;
    NCCL_CHECK(ncclCommCount(comm_, &nranks), comm_);
    std::printf("fault_loop: NCCL %d, communicator of %d rank(s)%s\n", version, nranks,
                nranks == 1 ? "; one rank runs no collective kernel, so a stand-in kernel "
                              "(ncclDevKernel_AllReduce_Sum_f32_RING_LL_standin) carries the all-reduce time"
                            : "");
  }

  // Returns the host wall time of each measured step.
  std::vector<double> run() {
    const int total = o_.warmup + o_.steps;
    step_done_.resize(static_cast<size_t>(total));
    for (auto& e : step_done_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    std::printf("fault_loop: fault=%s steps=%d warmup=%d kernels=%d kernel_iters=%d (%.3f ms each) "
                "gpu_compute_ms_per_step=%.3f data_ms=%.3f",
                fault_name(o_.fault), o_.steps, o_.warmup, o_.kernels, iters_, kernel_ms_measured_, compute_ms_,
                data_ms_);
    if (o_.fault == Fault::kItemSync) std::printf(" syncs=%d host_work_ms=%.3f", o_.syncs, host_work_ms_);
    if (o_.fault == Fault::kPageable) std::printf(" pageable_mb=%d host_work_ms=%.3f", o_.pageable_mb, host_work_ms_);
    if (o_.fault == Fault::kLaunchBound) std::printf(" tiny_kernels=%d", o_.tiny_kernels);
    if (o_.fault == Fault::kExposedComm)
      std::printf(" comm=%s comm_mb=%d comm_iters=%d", o_.comm_nccl ? "nccl" : "standin", o_.comm_mb, comm_iters_);
    std::printf("\n");

    std::vector<double> measured;
    measured.reserve(static_cast<size_t>(o_.steps));
    for (int i = 0; i < total; ++i) {
      const bool warm = i < o_.warmup;
      const auto t0 = Clock::now();
      nvtxRangePushA(warm ? "warmup" : "step");
      one_step(i);
      nvtxRangePop();
      const double ms = ms_since(t0);
      if (warm) {
        std::printf("warmup %d %.3f ms\n", i, ms);
      } else {
        std::printf("step %d %.3f ms\n", i - o_.warmup, ms);
        measured.push_back(ms);
      }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    return measured;
  }

  void teardown() {
    if (comm_) NCCL_CHECK(ncclCommDestroy(comm_), nullptr);
    for (auto& e : step_done_) CUDA_CHECK(cudaEventDestroy(e));
    if (comm_stream_) {
      CUDA_CHECK(cudaEventDestroy(compute_done_));
      CUDA_CHECK(cudaEventDestroy(comm_done_));
      CUDA_CHECK(cudaFree(comm_buf_));
      CUDA_CHECK(cudaStreamDestroy(comm_stream_));
    }
    if (dev_batch_) CUDA_CHECK(cudaFree(dev_batch_));
    std::free(host_batch_);
    CUDA_CHECK(cudaEventDestroy(t_start_));
    CUDA_CHECK(cudaEventDestroy(t_stop_));
    CUDA_CHECK(cudaFree(tiny_));
    CUDA_CHECK(cudaFree(grads_));
    CUDA_CHECK(cudaFree(params_));
    CUDA_CHECK(cudaFree(act_b_));
    CUDA_CHECK(cudaFree(act_a_));
    CUDA_CHECK(cudaStreamDestroy(compute_));
  }

 private:
  static constexpr size_t kParams = size_t{4} << 20;  // 16 MiB of "weights"
  static constexpr int kTinyN = 128;
  static constexpr float kA = 0.9999f, kB = 0.0001f, kLr = 1e-4f;

  double time_compute_kernel(int iters) {
    layer_forward<<<blocks_, kThreads, 0, compute_>>>(act_a_, act_b_, n_, iters, kA, kB);  // warm
    CUDA_CHECK_LAUNCH("layer_forward");
    CUDA_CHECK(cudaEventRecord(t_start_, compute_));
    constexpr int kReps = 3;
    for (int r = 0; r < kReps; ++r) {
      layer_forward<<<blocks_, kThreads, 0, compute_>>>(act_a_, act_b_, n_, iters, kA, kB);
      CUDA_CHECK_LAUNCH("layer_forward");
    }
    CUDA_CHECK(cudaEventRecord(t_stop_, compute_));
    CUDA_CHECK(cudaEventSynchronize(t_stop_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, t_start_, t_stop_));
    return ms / kReps;
  }

  // Forward and backward kernels, then the optimizer. item-sync: after each of the first `syncs`
  // kernels, a `.item()` (cudaMemcpy D2H of one float), a stream sync, and host work.
  void launch_compute(int syncs) {
    float* in = act_a_;
    float* out = act_b_;
    for (int k = 0; k < o_.kernels; ++k) {
      if (k < (o_.kernels + 1) / 2) {
        layer_forward<<<blocks_, kThreads, 0, compute_>>>(in, out, n_, iters_, kA, kB);
        CUDA_CHECK_LAUNCH("layer_forward");
      } else {
        layer_backward<<<blocks_, kThreads, 0, compute_>>>(in, out, n_, iters_, kA, kB);
        CUDA_CHECK_LAUNCH("layer_backward");
      }
      if (k < syncs) {
        float loss = 0;
        CUDA_CHECK(cudaMemcpy(&loss, out, sizeof(float), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaStreamSynchronize(compute_));
        host_work(host_work_ms_);  // e.g. logging the metric
        item_sink_ += loss;
      }
      std::swap(in, out);
    }
    const int opt_blocks = std::min(blocks_, 1024);
    optimizer_update<<<opt_blocks, kThreads, 0, compute_>>>(params_, grads_, static_cast<int>(kParams), kLr);
    CUDA_CHECK_LAUNCH("optimizer_update");
  }

  void one_step(int i) {
    data_wait(data_ms_);
    // The host runs at most one step ahead: it waits for step i-2 while step i-1 still runs, so
    // the GPU always has work queued (no idle, no drained queue) in the healthy loop.
    if (i >= 2) CUDA_CHECK(cudaEventSynchronize(step_done_[static_cast<size_t>(i - 2)]));

    switch (o_.fault) {
      case Fault::kNone:
      case Fault::kStarvation:
        launch_compute(0);
        break;
      case Fault::kItemSync:
        launch_compute(o_.syncs);
        break;
      case Fault::kPageable:
        // Stream-ordered H2D from pageable memory: the call blocks until the stream has drained
        // and the copy is staged; then the host prepares the step while the GPU sits idle.
        CUDA_CHECK(cudaMemcpyAsync(dev_batch_, host_batch_, pageable_bytes_, cudaMemcpyHostToDevice, compute_));
        host_work(host_work_ms_);
        launch_compute(0);
        break;
      case Fault::kExposedComm:
        // Compute of this step waits for the previous step's all-reduce; the all-reduce waits for
        // this step's last compute kernel: nothing overlaps it.
        if (i > 0) CUDA_CHECK(cudaStreamWaitEvent(compute_, comm_done_, 0));
        launch_compute(0);
        CUDA_CHECK(cudaEventRecord(compute_done_, compute_));
        CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, compute_done_, 0));
        if (comm_) {
          NCCL_CHECK(ncclAllReduce(comm_buf_, comm_buf_, comm_count_, ncclFloat, ncclSum, comm_, comm_stream_), comm_);
        }
        ncclDevKernel_AllReduce_Sum_f32_RING_LL_standin<<<blocks_, kThreads, 0, comm_stream_>>>(comm_buf_, n_,
                                                                                                comm_iters_, kA, kB);
        CUDA_CHECK_LAUNCH("ncclDevKernel_AllReduce_Sum_f32_RING_LL_standin");
        CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_));
        break;
      case Fault::kLaunchBound:
        for (int k = 0; k < o_.tiny_kernels; ++k) {
          tiny_elementwise<<<1, kTinyN, 0, compute_>>>(tiny_, kTinyN);
          CUDA_CHECK_LAUNCH("tiny_elementwise");
        }
        break;
    }
    CUDA_CHECK(cudaEventRecord(step_done_[static_cast<size_t>(i)], compute_));
  }

  Options o_;
  int blocks_ = 0, n_ = 0;
  int iters_ = 0, comm_iters_ = 0;
  double kernel_ms_measured_ = 0, compute_ms_ = 0, data_ms_ = 0, host_work_ms_ = 0;
  double item_sink_ = 0;
  cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
  cudaEvent_t t_start_ = nullptr, t_stop_ = nullptr, compute_done_ = nullptr, comm_done_ = nullptr;
  std::vector<cudaEvent_t> step_done_;
  float *act_a_ = nullptr, *act_b_ = nullptr, *params_ = nullptr, *grads_ = nullptr, *tiny_ = nullptr;
  unsigned char* host_batch_ = nullptr;
  void* dev_batch_ = nullptr;
  size_t pageable_bytes_ = 0;
  float* comm_buf_ = nullptr;
  size_t comm_count_ = 0;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // one line per step, visible as it happens
  const Options opt = parse(argc, argv);

  Loop loop(opt);
  loop.setup();
  loop.calibrate();
  if (opt.calibrate_only) {
    loop.print_config();
    loop.teardown();
    return 0;
  }
  loop.setup_comm();
  const std::vector<double> ms = loop.run();
  loop.print_config();
  double sum = 0;
  for (double v : ms) sum += v;
  std::printf("mean_step_ms %.3f\n", ms.empty() ? 0.0 : sum / static_cast<double>(ms.size()));
  std::printf("p90_step_ms %.3f\n", percentile(ms, 90));
  std::printf("median_step_ms %.3f\n", median(ms));
  loop.teardown();
  return 0;
}
