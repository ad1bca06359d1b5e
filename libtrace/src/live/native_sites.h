// The native call site of a blocking call made from C/C++: the first return address on the
// calling thread's stack outside the CUDA stack (libcuda, libcudart, libcupti, NCCL, cuBLAS/cuDNN,
// libtorch/c10, and stepwatch itself), read in the callback; named later, off the hot path, on
// the analysis thread ("train_step+0x1c in trainer", or "trainer+0x4f2e1" for a symbol the
// module does not export: `addr2line -e trainer 0x4f2e1` names the line).
#pragma once

#include <cstdint>
#include <string>

namespace stepwatch::live {

// The caller's return address, or 0 when the stack holds nothing outside the CUDA stack (or
// cannot be unwound). Allocates only when it meets a module it has not seen (the module table).
uintptr_t native_caller() noexcept;
// "symbol+0xoff in module" / "module+0xoff"; "" when the address lies in no module.
std::string name_native_site(uintptr_t pc);

}  // namespace stepwatch::live
