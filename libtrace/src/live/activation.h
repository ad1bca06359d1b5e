// When the process-wide stepwatch session exists: only where stepwatch was asked for. Linking
// libstepwatch.so (stepwatch::stepwatch) or importing the Python shim alone must not turn it on in
// every process — no ./stepwatch-out/, no exit summary, no thread — so the C API is a no-op until:
//   - the CUDA driver called InitializeInjection (CUDA_INJECTION64_PATH), or NVTX called
//     InitializeInjectionNvtx2 (NVTX_INJECTION64_PATH): injected;
//   - CUDA_INJECTION64_PATH or NVTX_INJECTION64_PATH names this very library (`stepwatch run`
//     sets both): injected, even before the process's first cuInit (a training script marks
//     steps before it touches CUDA);
//   - STEPWATCH_ENABLE=1 is set explicitly.
// STEPWATCH_ENABLE=0 turns it off in every case (the session's configuration reads it).
#pragma once

namespace stepwatch::live {

// The CUDA driver or NVTX called one of our injection entry points.
void note_injected() noexcept;
// Whether the session may be created now.
bool activation_requested() noexcept;

}  // namespace stepwatch::live
