#include "fix_text.h"

namespace stepwatch::fix {

std::string api(const ProgramStack& s) { return s.rocm ? "hip" : "cuda"; }

std::string launch_overhead(const ProgramStack& s) {
  // A serving engine owns its graphs: its own settings, not torch.cuda.graphs in the user's code.
  if (s.engine == Engine::kVllm) {
    return "let vLLM capture CUDA graphs: drop enforce_eager (--enforce-eager), check --compilation-config's "
           "cudagraph_mode, keep iterations within the captured sizes (--max-cudagraph-capture-size; a longer "
           "prefill runs eagerly, a smaller --max-num-batched-tokens chunks it)";
  }
  if (s.engine == Engine::kSglang) {
    return "let SGLang capture CUDA graphs: drop --disable-cuda-graph, raise --cuda-graph-max-bs to the batch sizes "
           "served (prefill batches run eagerly)";
  }
  if (s.pytorch()) {
    return std::string("capture the step in ") + (s.rocm ? "HIP" : "CUDA") +
           " graphs (torch.compile(mode=\"reduce-overhead\"), torch.cuda.graphs), fuse kernels (torch.compile), "
           "larger batch per kernel";
  }
  const std::string a = api(s);
  return "capture the loop in a " + std::string(s.rocm ? "HIP" : "CUDA") + " graph (" + a + "StreamBeginCapture / " +
         a + "GraphLaunch), fuse kernels, more work per kernel";
}

std::string host_work(const ProgramStack& s) {
  // In a serving engine the host work inside an iteration is the model's eager forward, or the
  // engine's own (scheduling, input preparation, sampling): both have an engine setting.
  if (s.engine == Engine::kVllm) {
    return "take the host out of the iteration: let vLLM run the model as CUDA graphs (no --enforce-eager; "
           "--compilation-config's cudagraph_mode) and overlap its own CPU work — scheduling, input preparation, "
           "sampling — with the GPU (--async-scheduling)";
  }
  if (s.engine == Engine::kSglang) {
    return "take the host out of the iteration: let SGLang capture CUDA graphs (no --disable-cuda-graph; "
           "--cuda-graph-max-bs) and keep its overlap scheduler on (no --disable-overlap-schedule)";
  }
  if (s.pytorch()) {
    return "move that CPU work off the step (precompute it, run it in DataLoader workers or a side thread, or "
           "overlap it with queued GPU work), turn Python loops into tensor ops, and let the GPU run ahead without "
           "the host: torch.compile(mode=\"reduce-overhead\") / CUDA graphs";
  }
  return "overlap the CPU work with GPU work (enqueue the GPU work first, compute on the host while it runs, "
         "double-buffer), or move it off the loop";
}

std::string defer_syncs(const ProgramStack& s) {
  if (s.pytorch()) return "defer metrics (.item(), .cpu(), logging) off the step, keep reductions on device";
  const std::string a = api(s);
  return "drop the " + a + "DeviceSynchronize/" + a + "StreamSynchronize calls from the loop, order work with events (" +
         a + "EventRecord + " + a + "StreamWaitEvent) and read results back asynchronously";
}

std::string pinned_copies(const ProgramStack& s) {
  if (s.pytorch()) return "pin_memory=True / pinned host buffers and .to(device, non_blocking=True)";
  const std::string a = api(s);
  return "pinned host buffers (" + a + (s.rocm ? "HostMalloc" : "MallocHost") + " / " + a + "HostRegister) for " +
         a + "MemcpyAsync";
}

std::string async_copies(const ProgramStack& s) {
  const std::string a = api(s);
  if (s.pytorch()) {
    return a + "MemcpyAsync from pinned memory (pin_memory=True, .to(device, non_blocking=True)), prefetch the "
               "next batch to the device";
  }
  return a + "MemcpyAsync from pinned memory (" + a + (s.rocm ? "HostMalloc" : "MallocHost") +
         ") on a stream, overlapped with compute";
}

std::string allocator(const ProgramStack& s) {
  if (s.pytorch()) {
    return std::string(s.rocm ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF") +
           "=expandable_segments:True, preallocate/reuse buffers, pad or bucket shapes to remove shape variance";
  }
  const std::string a = api(s);
  return "allocate once outside the loop and reuse the buffers, or use the stream-ordered allocator (" + a +
         "MallocAsync / " + a + "FreeAsync with a memory pool)";
}

std::string clocks(const ProgramStack& s) {
  if (s.rocm) return "check clocks, power and temperature (rocm-smi --showclocks --showpower --showtemp)";
  return "check clocks, power and temperature (nvidia-smi dmon -s puct; nvidia-smi -q -d PERFORMANCE for the "
         "throttle reasons)";
}

std::string pcie(const ProgramStack& s) {
  if (s.rocm) return "check the process's NUMA affinity to the GPU (rocm-smi --showtopo), PCIe ACS/IOMMU settings";
  return "check the process's NUMA affinity to the GPU (nvidia-smi topo -m), PCIe ACS/IOMMU and peer-to-peer "
         "settings";
}

std::string mark_steps(const ProgramStack& s) {
  if (s.pytorch()) {
    return "torch.profiler with a schedule (ProfilerStep#N), an NVTX range named 'step', or stepwatch.step()";
  }
  if (s.rocm) return "a range named 'step' around each iteration (roctxRangePushA(\"step\") / roctxRangePop)";
  return "an NVTX range named 'step' around each iteration (nvtxRangePushA(\"step\") / nvtxRangePop), or "
         "stepwatch_step_begin / stepwatch_step_end from the C API";
}

}  // namespace stepwatch::fix
