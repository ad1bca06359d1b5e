// Calls the real libnccl (path in argv[1]) the way a training job would, without a GPU: NCCL
// pushes its NVTX range (domain "NCCL", registered name, payload schema with the message size)
// on entry, then rejects the null communicator. Run by nvtx_injection_test.cpp with the test
// injection library, to check our payload parsing against NCCL's real schemas.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>

namespace {

// ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)
using AllReduceFunction = int (*)(const void*, void*, size_t, int, int, void*, void*);
using GetVersionFunction = int (*)(int*);
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* nccl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (nccl == nullptr) {
    std::printf("dlopen %s\n", dlerror());
    return 3;
  }
  auto get_version = reinterpret_cast<GetVersionFunction>(dlsym(nccl, "ncclGetVersion"));
  auto all_reduce = reinterpret_cast<AllReduceFunction>(dlsym(nccl, "ncclAllReduce"));
  if (get_version == nullptr || all_reduce == nullptr) return 4;
  int version = 0;
  get_version(&version);
  std::printf("version %d\n", version);
  const int result = all_reduce(nullptr, nullptr, 1024, kNcclFloat32, kNcclSum, nullptr, nullptr);
  std::printf("result %d\n", result);
  return 0;
}
