// Fix directions that fit the program (StepView::stack): a PyTorch program gets PyTorch's knobs, a
// serving engine (vLLM, SGLang) its own settings, a plain CUDA or HIP program the runtime's, a ROCm
// run HIP's names and tools (private to detectors/).
#pragma once

#include <string>

#include "stepwatch/core/step_view.h"

namespace stepwatch::fix {

// "cuda" or "hip": the runtime's prefix in call names.
std::string api(const ProgramStack& s);
// Per-op launch overhead between short kernels: graphs, fusion.
std::string launch_overhead(const ProgramStack& s);
// CPU work of the host's own while the GPU waits.
std::string host_work(const ProgramStack& s);
// Syncs that drain the queue (.item(), cudaDeviceSynchronize, ...).
std::string defer_syncs(const ProgramStack& s);
// Copies from pageable memory, staged by the driver.
std::string pinned_copies(const ProgramStack& s);
// Synchronous copies.
std::string async_copies(const ProgramStack& s);
// Allocations and frees mid-step.
std::string allocator(const ProgramStack& s);
// Clocks, power and temperature of the GPU.
std::string clocks(const ProgramStack& s);
// The host-device link (NUMA, PCIe).
std::string pcie(const ProgramStack& s);
// Step marks for data that has none.
std::string mark_steps(const ProgramStack& s);

}  // namespace stepwatch::fix
