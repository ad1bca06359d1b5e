// A second shared object using NVTX, like libtorch next to the app: NVTX3's globals are hidden
// per object, so this one has its own NVTX instance and initializes the injection separately.
#include <nvtx3/nvToolsExt.h>

extern "C" __attribute__((visibility("default"))) void nvtx_app_lib_range(const char* name) {
  nvtxRangePushA(name);
  nvtxRangePop();
}
