// NVTX calls in a shared object of their own that no tool is injected into: NVTX3 keeps its state
// per shared object (hidden, weak globals), so while stepwatch_bench injects its own NVTX, these
// calls run the uninjected path — the baseline for the NVTX hooks' "added ns" (bench/nvtx_bench.cpp
// BM_NvtxPlainPushPop).
#include <nvtx3/nvToolsExt.h>

extern "C" __attribute__((visibility("default"))) void stepwatch_bench_nvtx_plain_push_pop(const char* name) {
  nvtxRangePushA(name);
  nvtxRangePop();
}
