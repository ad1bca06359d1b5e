// The scenario factory (workload.h "Scenario factory"): named workload configurations, each
// modeling one fault of the catalog (or a healthy loop) on top of the base workload.
#include <array>
#include <cmath>
#include <stdexcept>

#include "synthetic/workload.h"

namespace stepwatch::synthetic {

// ---------------------------------------------------------------------------------------------
// Scenarios

namespace {

struct ScenarioEntry {
  std::string_view name;
  std::string_view description;
  void (*apply)(WorkloadConfig& c, double magnitude);
};

int64_t scaled(int64_t ns, double magnitude) { return static_cast<int64_t>(std::llround(double(ns) * magnitude)); }

// item_sync's fault: 3 `.item()` per step, each followed by 1.5 ms x magnitude of host logging.
void item_sync_config(WorkloadConfig& c, double m) {
  c.item_syncs = 3;
  c.post_sync_host_ns = scaled(1'500'000, m);
}

// The base workload (every scenario starts from it): a bf16 transformer step, 48 forward, 96
// backward and 16 optimizer kernels of ~200 µs (~32 ms of GPU time), ~20 µs of host time per
// launch, a 0.2 ms DataLoader wait, a pinned 16 MiB input copy. GPU-bound: the host runs ahead
// by a full launch queue and the GPU never idles.
const std::array<ScenarioEntry, 18> kScenarios = {{
    {"gpu_bound", "healthy: GPU-bound loop, host a full launch queue ahead; no finding expected",
     [](WorkloadConfig&, double) {}},
    {"ddp_overlap",
     "healthy: DDP, 4 all-reduce buckets (6 ms) overlapped with backward; only the small last bucket "
     "(0.5 ms) is exposed; no finding expected",
     [](WorkloadConfig& c, double) {
       c.comm = CommMode::kOverlappedBuckets;
       c.buckets = 4;
       c.allreduce_ns = 6'000'000;
       c.nccl_naming = NcclNaming::kDevKernel;
     }},
    {"slow_dataloader",
     "input_starvation: 30 ms x magnitude DataLoader wait per step, ~13 ms of GPU work (80 µs kernels), "
     "host-bound; DDP overlapped all-reduce (legacy NCCL names)",
     [](WorkloadConfig& c, double m) {
       c.data_wait_ns = scaled(30'000'000, m);
       c.kernel_ns = 80'000;
       c.comm = CommMode::kOverlappedBuckets;
       c.buckets = 4;
       c.allreduce_ns = 4'000'000;
       c.nccl_naming = NcclNaming::kLegacy;
     }},
    {"item_sync",
     "hidden_sync: 3 .item() syncs per step (pageable DtoH copy / pinned copy + cudaStreamSynchronize) that "
     "drain the queue, each followed by 1.5 ms x magnitude of host logging before the next launch",
     [](WorkloadConfig& c, double m) { item_sync_config(c, m); }},
    {"item_sync_stack",
     "hidden_sync: item_sync recorded with Python frames (torch.profiler with_stack=True): each .item() made by "
     "log_metrics() in train.py — the finding names that site",
     [](WorkloadConfig& c, double m) {
       item_sync_config(c, m);
       c.python_stack = true;
     }},
    {"pageable_copy",
     "hidden_sync: the 64 MiB x magnitude input batch copied from pageable memory (cudaMemcpyAsync blocks until "
     "the stream drained and the copy ran, ~11 ms at 6 GB/s), then 4 ms x magnitude of host batch preparation",
     [](WorkloadConfig& c, double m) {
       c.input_copy = InputCopy::kPageableAsync;
       c.input_bytes = static_cast<uint64_t>(std::llround(double(64ull << 20) * m));
       c.post_copy_host_ns = scaled(4'000'000, m);
     }},
    {"serialized_allreduce",
     "exposed_collective: 8 ms x magnitude of all-reduce (4 buckets) launched after backward's last kernel, "
     "the optimizer waiting on it: fully exposed (mangled ncclDevKernel names)",
     [](WorkloadConfig& c, double m) {
       c.comm = CommMode::kSerialized;
       c.buckets = 4;
       c.allreduce_ns = scaled(8'000'000, m);
       c.nccl_naming = NcclNaming::kDevKernelMangled;
     }},
    {"launch_bound",
     "launch_bound: 2,000 kernels of ~8 µs per step (600 forward, 1,200 backward, 200 optimizer), each "
     "issued by a 6 µs launch call after 14 µs x magnitude of Python: the GPU idles between kernels while the "
     "host launches (~40 ms steps, ~60% idle); magnitude 0 leaves the host faster than the GPU (GPU-bound)",
     [](WorkloadConfig& c, double m) {
       c.forward_kernels = 600;
       c.backward_kernels = 1200;
       c.optimizer_kernels = 200;
       c.kernel_ns = 8'000;
       c.host_gap_ns = scaled(14'000, m);
     }},
    {"sync_copy",
     "sync_memcpy: the 128 MiB x magnitude input batch copied with a synchronous cudaMemcpy from pinned memory "
     "(blocks until the stream drained and the copy ran, ~6.7 ms at 20 GB/s)",
     [](WorkloadConfig& c, double m) {
       c.input_copy = InputCopy::kPinnedSync;
       c.input_bytes = static_cast<uint64_t>(std::llround(double(128ull << 20) * m));
     }},
    {"slow_h2d",
     "slow_h2d: a 64 MiB pinned input copy that runs at 1/(1 + 4 x magnitude) of the 20 GB/s pinned rate on "
     "every other step (4 GB/s at magnitude 1: +13.4 ms on the GPU)",
     [](WorkloadConfig& c, double m) {
       c.input_bytes = 64ull << 20;
       c.slow_copy_every = 2;
       c.slow_copy_factor = 1.0 + 4.0 * m;
     }},
    {"moe_overlapped_a2a",
     "healthy: MoE, 8 forward layers each dispatching and combining its tokens with a 0.6 ms all-to-all "
     "(NCCL SendRecv under nccl:all_to_all) around 4 expert matmuls; the compute stream never waits for them "
     "(pipelined dispatch): fully overlapped; no finding expected",
     [](WorkloadConfig& c, double) {
       c.moe_layers = 8;
       c.a2a_overlapped = true;
     }},
    {"moe_exposed_a2a",
     "exposed_collective: MoE, 8 forward layers whose experts wait for the dispatch all-to-all and whose next "
     "layer waits for the combine (0.6 ms x magnitude each, vs 0.8 ms of expert matmuls): ~9.6 ms x magnitude "
     "of exposed all-to-all per step",
     [](WorkloadConfig& c, double m) {
       c.moe_layers = 8;
       c.a2a_ns = scaled(600'000, m);
     }},
    {"recsys_overlapped_a2a",
     "healthy: a recommendation model with sharded embedding tables (TorchRec/FBGEMM), pipelined: the pooled "
     "embeddings' all-to-all (1.5 ms forward, 1.5 ms backward) and the next batch's sparse-feature distribution "
     "(2 x 0.4 ms, ## sparse_data_dist ##) run while the compute stream works on (TrainPipelineSemiSync); no "
     "finding expected",
     [](WorkloadConfig& c, double) {
       c.embedding_a2a_ns = 1'500'000;
       c.a2a_overlapped = true;
     }},
    {"recsys_exposed_a2a",
     "exposed_collective: a recommendation model with sharded embedding tables (TorchRec/FBGEMM): the "
     "interaction waits for the pooled embeddings' all-to-all (All2All_Pooled_Req) and the tables' backward "
     "for their gradients' (All2All_Pooled_WaitBackward), 3 ms x magnitude each: ~6 ms x magnitude exposed "
     "per step; the next batch's sparse-feature distribution (## sparse_data_dist ##) stays hidden by backward",
     [](WorkloadConfig& c, double m) { c.embedding_a2a_ns = scaled(3'000'000, m); }},
    {"allocator_churn",
     "allocator_churn: 4 caching-allocator misses mid-forward per step, each a cudaFree that synchronizes the "
     "device (then 0.3 ms x magnitude) and a 0.5 ms x magnitude cudaMalloc; every 4th step the first "
     "cudaMalloc stalls 120 ms x magnitude",
     [](WorkloadConfig& c, double m) {
       c.allocator_misses = 4;
       c.free_ns = scaled(300'000, m);
       c.malloc_ns = scaled(500'000, m);
       c.malloc_stall_every = 4;
       c.malloc_stall_ns = scaled(120'000'000, m);
     }},
    {"inference_input",
     "input_starvation (not hidden_sync): an inference loop (48 forward kernels, no backward) whose iteration "
     "ends with a 4-byte DtoH copy of the result (.cpu()) and then waits 120-140 ms x magnitude for the "
     "single-process DataLoader: the drained queue exposes the data wait",
     [](WorkloadConfig& c, double m) {
       c.backward_kernels = 0;
       c.optimizer_kernels = 0;
       c.end_of_step_sync = true;
       c.data_wait_ns = scaled(120'000'000, m);
       c.data_wait_jitter_ns = scaled(20'000'000, m);
       c.warmup_steps = 2;
     }},
    {"host_bound",
     "host_bound: a DDP-like step of 160 short kernels (~13 ms of GPU work) whose host then spends 40 ms x "
     "magnitude in CPU work of its own (an unflatten_dense_tensors range: no launch, no data wait, no sync) "
     "while the GPU runs dry",
     [](WorkloadConfig& c, double m) {
       c.kernel_ns = 80'000;
       c.host_work_ns = scaled(40'000'000, m);
     }},
    {"compiled_launch_bound",
     "launch_bound: a torch.compile'd model, 2,000 kernels of ~22 µs (over the catalog's 20 µs) each launched "
     "after 30 µs x magnitude of Python wrapper: every kernel starts right after its launch, ~40% of the step "
     "idle between kernels",
     [](WorkloadConfig& c, double m) {
       c.forward_kernels = 600;
       c.backward_kernels = 1200;
       c.optimizer_kernels = 200;
       c.kernel_ns = 22'000;
       c.host_gap_ns = scaled(30'000, m);
     }},
}};

constexpr std::string_view kNoMarksSuffix = "+no_marks";

}  // namespace

const std::vector<std::string>& scenario_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const ScenarioEntry& s : kScenarios) v.emplace_back(s.name);
    v.emplace_back("no_marks");
    return v;
  }();
  return names;
}

std::string_view scenario_description(std::string_view name) {
  if (name == "no_marks") return "no_step_marks: gpu_bound without ProfilerStep ranges";
  for (const ScenarioEntry& s : kScenarios) {
    if (s.name == name) return s.description;
  }
  return {};
}

WorkloadConfig scenario_config(std::string_view name, const ScenarioOptions& options) {
  WorkloadConfig c;
  c.steps = options.steps;
  c.seed = options.seed;
  c.first_step = options.first_step;
  c.rank = options.rank;
  c.scenario = std::string(name);

  std::string_view base = name;
  if (base == "no_marks") {
    base = "gpu_bound";
    c.step_ranges = false;
  } else if (base.size() > kNoMarksSuffix.size() && base.ends_with(kNoMarksSuffix)) {
    base.remove_suffix(kNoMarksSuffix.size());
    c.step_ranges = false;
  }
  for (const ScenarioEntry& s : kScenarios) {
    if (s.name == base) {
      s.apply(c, options.magnitude);
      return c;
    }
  }
  throw std::invalid_argument("unknown scenario '" + std::string(name) + "'");
}

SyntheticRun make_scenario(std::string_view name, const ScenarioOptions& options) {
  return generate(scenario_config(name, options));
}

}  // namespace stepwatch::synthetic
