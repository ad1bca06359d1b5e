#include "synthetic/accuracy_runs.h"

#include <algorithm>
#include <map>

#include "stepwatch/core/classify.h"
#include "synthetic/transforms.h"
#include "synthetic/transforms_c.h"

namespace stepwatch::synthetic {

SyntheticRun single_forward(int layers, int64_t stall_ns) {
  WorkloadConfig c;
  c.scenario = "single_forward";
  c.steps = 1;
  c.warmup_steps = 0;
  c.step_ranges = false;
  c.forward_kernels = 5 * layers;  // the five forward kernel names repeat: one layer
  c.backward_kernels = 0;
  c.optimizer_kernels = 0;
  c.kernel_ns = 150'000;
  c.data_wait_ns = 0;
  c.end_of_step_sync = true;
  if (stall_ns > 0) {
    c.input_copy = InputCopy::kPageableSync;
    c.input_bytes = static_cast<uint64_t>(double(stall_ns) * c.pageable_gb_per_s);
  }
  return generate(c);
}

void to_sglang_step_ranges(SyntheticRun& run) {
  int k = 0;
  for (Event& e : run.trace.events) {
    if (e.kind != EventKind::kRange || run.trace.names.view(e.name).substr(0, 13) != "ProfilerStep#") continue;
    e.name = run.trace.names.intern(k++ % 3 == 2 ? "step[EXTEND bs=15 toks=15360]" : "step[DECODE bs=32]");
    e.step = -1;
  }
}

void to_vllm_iterations(SyntheticRun& run) {
  for (Event& e : run.trace.events) {
    if (e.kind != EventKind::kRange || run.trace.names.view(e.name).substr(0, 13) != "ProfilerStep#") continue;
    e.name = run.trace.names.intern("execute_context_0(0)_generation_32(32)");
    e.step = -1;
  }
}

void add_trailing_empty_step(SyntheticRun& run) {
  int64_t host_end = 0;
  int64_t last = 0;
  for (const Event& e : run.trace.events) {
    if (e.kind == EventKind::kApiCall || e.kind == EventKind::kRange) host_end = std::max(host_end, e.end_ns);
    if (e.kind == EventKind::kRange && e.step >= 0) last = std::max(last, e.step);
  }
  Event& r = run.trace.add(EventKind::kRange, "ProfilerStep#" + std::to_string(last + 1), host_end + 10'000,
                           host_end + 59'000);
  r.thread = run.config.host_thread;
  r.step = last + 1;
}

namespace {

Event& add_call(SyntheticRun& run, std::string_view name, int64_t start, int64_t end) {
  Event& e = run.trace.add(EventKind::kApiCall, name, start, end);
  e.thread = run.config.host_thread;
  e.detail = static_cast<uint8_t>(classify_api(name));
  return e;
}

}  // namespace

int64_t add_initialization(SyntheticRun& run, int64_t context_ns, int64_t module_load_ns) {
  int64_t first = INT64_MAX;
  for (const Event& e : run.trace.events) first = std::min(first, e.start_ns);
  // Before the capture's first event: context creation, the allocator, a stream; the GPU idle.
  const int64_t free_ns = context_ns / 4, stream_ns = context_ns / 10;
  int64_t t = first - (context_ns + free_ns + stream_ns + 3'000'000);
  add_call(run, "cudaGetDeviceCount", t, t + context_ns);
  t += context_ns + 1'000'000;
  add_call(run, "cudaFree", t, t + free_ns);
  t += free_ns + 1'000'000;
  add_call(run, "cudaStreamCreateWithFlags", t, t + stream_ns);
  int64_t idle = context_ns + free_ns + stream_ns;
  if (module_load_ns > 0) {
    // At the first step's start, before its first CUDA call: the host stalls in a module load
    // while the work queued before the capture drains.
    const InjectedStall s = insert_host_stall(run, run.truth.front().start_ns, module_load_ns);
    add_call(run, "cuModuleLoadData", s.host_start_ns, s.host_start_ns + module_load_ns);
    const Spans idle_in = gaps_within(run.timeline.busy, s.host_start_ns, s.host_start_ns + module_load_ns);
    idle += total_length(idle_in);
  }
  return idle;
}

void to_rccl_generic(SyntheticRun& run) {
  const NameId generic = run.trace.names.intern("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)");
  std::vector<uint64_t> nccl;
  for (Event& e : run.trace.events) {
    if (!e.is_comm_kernel()) continue;
    e.name = generic;
    e.collective = CollectiveType::kOther;
    nccl.push_back(e.correlation);
  }
  std::sort(nccl.begin(), nccl.end());
  std::vector<std::pair<int64_t, int64_t>> calls;
  for (const Event& e : run.trace.events) {
    if (e.kind == EventKind::kApiCall && std::binary_search(nccl.begin(), nccl.end(), e.correlation)) {
      calls.emplace_back(e.start_ns, e.end_ns);
    }
  }
  for (const auto& [s, e] : calls) {
    Event& r = run.trace.add(EventKind::kRange, "nccl:all_reduce", s - 2'000, e + 1'000);
    r.thread = run.config.host_thread;
  }
}

void inject_linear_drift(SyntheticRun& run, double per_step) {
  std::vector<Stretch> st;
  for (const Event& e : run.trace.events) {
    if (!e.is_compute_kernel()) continue;
    for (size_t k = 0; k < run.truth.size(); ++k) {
      if (e.start_ns < run.truth[k].start_ns || e.start_ns >= run.truth[k].end_ns) continue;
      const auto extra = static_cast<int64_t>(double(e.duration_ns()) * per_step * double(k));
      if (extra > 0) st.push_back({e.start_ns + 1, extra});
      break;
    }
  }
  apply_stretches(run, std::move(st));
}

void to_plain_program(SyntheticRun& run, bool rocm) {
  std::map<NameId, NameId> renamed;
  std::erase_if(run.trace.events, [&](const Event& e) {
    return e.kind == EventKind::kRange && run.trace.names.view(e.name).starts_with("Optimizer.step#");
  });
  for (Event& e : run.trace.events) {
    const std::string name(run.trace.names.view(e.name));
    if (e.kind == EventKind::kKernel && !e.is_comm_kernel()) {
      auto [it, inserted] = renamed.try_emplace(e.name, kNoName);
      if (inserted) it->second = run.trace.names.intern("stencil_kernel_" + std::to_string(renamed.size()));
      e.name = it->second;
    } else if (e.kind == EventKind::kRange && name.starts_with("ProfilerStep#")) {
      e.name = run.trace.names.intern("step " + name.substr(13));
    } else if (e.kind == EventKind::kRange && name.find("DataLoader") != std::string::npos) {
      e.name = run.trace.names.intern("data");
    } else if (e.kind == EventKind::kApiCall && rocm && name.starts_with("cuda")) {
      e.name = run.trace.names.intern("hip" + name.substr(4));
      e.detail = static_cast<uint8_t>(classify_api(run.trace.names.view(e.name)));
    }
  }
}

}  // namespace stepwatch::synthetic
