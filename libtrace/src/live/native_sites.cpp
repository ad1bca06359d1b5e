#include "live/native_sites.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

namespace stepwatch::live {
namespace {

// Libraries between the program and the CUDA call: a site inside them says nothing the program
// can change.
// The C/C++ runtime and the interpreter are no site either: a thread they started (autograd's
// workers, a pool) that made the call has none of the program's frames.
constexpr std::array<std::string_view, 22> kCudaStack = {
    "libcuda.so", "libcudart", "libcupti", "fake_cupti", "libstepwatch", "libnccl", "libcublas", "libcudnn",
    "libtorch", "libc10", "libnvrtc", "libcufft", "libcusparse", "libcusolver", "libstdc++", "libc.so",
    "libgcc_s", "libpthread", "libgomp", "libpython", "ld-linux", "libtbb"};

struct Module {
  uintptr_t start = 0;
  uintptr_t end = 0;
  bool cuda_stack = false;
};

std::mutex g_modules_mu;
std::vector<Module> g_modules;  // sorted by start; rebuilt when an address falls outside all

int add_module(dl_phdr_info* info, size_t, void* out) {
  auto* modules = static_cast<std::vector<Module>*>(out);
  const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  bool cuda = false;
  for (std::string_view lib : kCudaStack) cuda = cuda || name.find(lib) != std::string_view::npos;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    modules->push_back({start, start + ph.p_memsz, cuda});
  }
  return 0;
}

// 1 in the CUDA stack, 0 outside it, -1 in no known module.
int classify(const std::vector<Module>& modules, uintptr_t pc) {
  auto it = std::upper_bound(modules.begin(), modules.end(), pc, [](uintptr_t x, const Module& m) { return x < m.start; });
  if (it == modules.begin()) return -1;
  --it;
  if (pc >= it->end) return -1;
  return it->cuda_stack ? 1 : 0;
}

struct Walk {
  std::array<uintptr_t, 48> pcs{};
  size_t n = 0;
};

_Unwind_Reason_Code collect(_Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  if (w->n == w->pcs.size()) return _URC_END_OF_STACK;
  const uintptr_t pc = _Unwind_GetIP(ctx);
  if (pc == 0) return _URC_END_OF_STACK;
  w->pcs[w->n++] = pc;
  return _URC_NO_REASON;
}

}  // namespace

uintptr_t native_caller() noexcept {
  try {
    Walk w;
    _Unwind_Backtrace(collect, &w);
    std::lock_guard<std::mutex> lock(g_modules_mu);
    bool rebuilt = false;
    for (size_t i = 0; i < w.n; ++i) {
      // A return address points after the call: one byte back lies inside the calling instruction.
      const uintptr_t pc = w.pcs[i] - 1;
      int where = classify(g_modules, pc);
      if (where < 0 && !rebuilt) {
        g_modules.clear();
        dl_iterate_phdr(add_module, &g_modules);
        std::sort(g_modules.begin(), g_modules.end(), [](const Module& a, const Module& b) { return a.start < b.start; });
        rebuilt = true;
        where = classify(g_modules, pc);
      }
      if (where == 0) return pc;
    }
  } catch (...) {
  }
  return 0;
}

std::string name_native_site(uintptr_t pc) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string_view module(info.dli_fname);
  if (const size_t slash = module.rfind('/'); slash != std::string_view::npos) module.remove_prefix(slash + 1);
  char hex[32];
  if (info.dli_sname != nullptr && info.dli_saddr != nullptr) {
    std::snprintf(hex, sizeof hex, "+0x%zx", static_cast<size_t>(pc - reinterpret_cast<uintptr_t>(info.dli_saddr)));
    int status = -1;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string symbol = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    std::free(demangled);
    // "ns::train_step(int)" reads as "ns::train_step": the arguments make the line long.
    if (const size_t paren = symbol.find('('); paren != std::string::npos && paren > 0) symbol.resize(paren);
    return symbol + hex + " in " + std::string(module);
  }
  std::snprintf(hex, sizeof hex, "+0x%zx", static_cast<size_t>(pc - reinterpret_cast<uintptr_t>(info.dli_fbase)));
  return std::string(module) + hex;
}

}  // namespace stepwatch::live
