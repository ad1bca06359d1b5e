// libFuzzer target: the analysis core on arbitrary event soup.
//
// The input is decoded as a sequence of 12-byte records, one Event each: kind, start (in 1 µs
// units over a ~16 s span, any order), duration, correlation (few values, so GPU records and
// launches join), thread, stream, name (from a small list that includes step ranges, NCCL kernels,
// data phases, blocking calls), ApiClass/CopyKind/SyncKind, memory kinds, collective, flags, step.
// analyze_rank with every detector, judging at once and a step a batch, must never crash, and every
// step must keep the breakdown invariant: compute + exposed comm + copy-only + idle == duration.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>

#include "stepwatch/core/analysis.h"
#include "stepwatch/detectors/registry.h"

namespace {

using namespace stepwatch;

constexpr std::array<const char*, 26> kNames = {
    "ProfilerStep#1",         "ProfilerStep#2",  "step",           "cudaLaunchKernel",
    "cudaStreamSynchronize",  "cudaMemcpyAsync", "cudaMemcpy",     "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "sm90_xmma_gemm_f16f16",  "DataLoader",      "gc",             "cudaMalloc",
    "aten::copy_",            "Memcpy HtoD",     "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "train_step 7",
    // Python frames (call sites): a user frame, a built-in, a module wrapper, torch's own code.
    "train.py(40): log_metrics", "<built-in method item of Tensor object at 0x7f>", "nn.Module: Net_0",
    "torch/nn/modules/module.py(1780): _call_impl",
    // All-to-alls and what they carry (an MoE layer's, TorchRec's embedding distributions), a serving
    // engine's iteration and op.
    "nccl:all_to_all", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "All2All_Pooled_WaitBackward",
    "## sparse_data_dist ##", "execute_context_0(0)_generation_8(8)", "vllm::unified_attention_with_output"};

constexpr size_t kRecord = 12;
constexpr int64_t kBase = 1'700'000'000'000'000'000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size / kRecord > 512) return 0;  // bounded event count: time, not coverage
  Trace trace;
  trace.source = "fuzz";
  trace.format = "kineto";
  std::array<NameId, kNames.size()> ids{};
  for (size_t i = 0; i < kNames.size(); ++i) ids[i] = trace.names.intern(kNames[i]);

  for (size_t off = 0; off + kRecord <= size; off += kRecord) {
    const uint8_t* r = data + off;
    Event e;
    e.kind = static_cast<EventKind>(r[0] % 10);
    const uint32_t start = uint32_t(r[1]) | uint32_t(r[2]) << 8 | uint32_t(r[3] & 0x3f) << 16;  // < 2^22 µs
    // Durations from 0 to ~65 ms; the top bit of r[3] makes it ns-scale (tiny events, ties).
    const int64_t unit = (r[3] & 0x80) ? 1 : 1000;
    const int64_t dur = (int64_t(r[4]) | int64_t(r[5]) << 8) * unit;
    e.start_ns = kBase + int64_t(start) * 1000;
    e.end_ns = e.kind == EventKind::kStepMark || e.kind == EventKind::kAllocation ? e.start_ns : e.start_ns + dur;
    e.correlation = r[6] & 0x0f;
    e.thread = (r[6] >> 4) & 0x3;
    e.stream = (r[6] >> 6) & 0x3;
    e.name = ids[r[7] % kNames.size()];
    switch (e.kind) {
      case EventKind::kApiCall: e.detail = r[8] % 13; break;
      case EventKind::kMemcpy: e.detail = r[8] % 6; break;
      case EventKind::kSync: e.detail = r[8] % 5; break;
      case EventKind::kAllocation: e.detail = 1 + (r[8] & 1); break;
      default: e.detail = 0; break;
    }
    e.src_memory = static_cast<MemoryKind>(r[9] % 6);
    e.dst_memory = static_cast<MemoryKind>((r[9] / 6) % 6);
    e.collective = e.kind == EventKind::kKernel ? static_cast<CollectiveType>(r[10] % 9) : CollectiveType::kNone;
    e.flags = r[10] >> 5;  // kOnDevice | kExplicitStep | kAsync
    if (e.kind == EventKind::kPythonFrame) e.flags = static_cast<uint8_t>(e.flags << 3);  // kCallLine | kNativeSite
    e.step = (r[11] & 0x80) ? -1 : int64_t(r[11]);
    e.bytes = uint64_t(r[11]) << (r[9] % 24);
    e.device = 0;
    trace.events.push_back(e);
  }

  // Judged at once, and a window a batch (step_batches.h: the slices, the partner lookups, the
  // open-event carry on unsorted, overlapping, far-reaching input). The soup repeats correlation
  // ids, so the two need not agree on which call launched what; each must hold the invariants.
  AnalysisConfig config;
  for (size_t batch_events : {trace.events.size() + 1, size_t{1}}) {
    Trace input = trace;
    const RankResult result = analyze_rank(input, 0, config, make_detectors(config), StepDetail::kFull, batch_events);
    for (const StepView& v : result.steps) {
      const int64_t sum = v.compute_ns + v.exposed_comm_ns + v.copy_only_ns + v.idle.total();
      if (sum != v.duration_ns()) {
        std::fprintf(stderr, "breakdown invariant broken (batch %zu): step %lld [%lld, %lld]: compute %lld + exposed %lld + "
                     "copy_only %lld + idle %lld = %lld != %lld\n",
                     batch_events, (long long)v.step, (long long)v.start_ns, (long long)v.end_ns, (long long)v.compute_ns,
                     (long long)v.exposed_comm_ns, (long long)v.copy_only_ns, (long long)v.idle.total(),
                     (long long)sum, (long long)v.duration_ns());
        std::abort();
      }
      for (int64_t part : v.idle.ns) {
        if (part < 0) std::abort();
      }
    }
  }
  return 0;
}
