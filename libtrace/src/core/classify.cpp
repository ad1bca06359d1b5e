#include "stepwatch/core/classify.h"

#include <array>
#include <string>
#include <utility>

namespace stepwatch {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// "cudaMemcpy_v3020" -> "cudaMemcpy", "cuStreamSynchronize_ptsz" -> "cuStreamSynchronize",
// "cuMemcpyDtoH_v2" -> "cuMemcpyDtoH". Suffixes are CUPTI/driver versioning, not semantics.
std::string_view strip_version(std::string_view name) {
  for (;;) {
    const size_t us = name.rfind('_');
    if (us == std::string_view::npos || us == 0) return name;
    std::string_view suffix = name.substr(us + 1);
    const bool versioned = (suffix.size() >= 2 && suffix[0] == 'v' &&
                            suffix.find_first_not_of("0123456789", 1) == std::string_view::npos) ||
                           suffix == "ptsz" || suffix == "ptds";
    if (!versioned) return name;
    name = name.substr(0, us);
  }
}

// Whether a name is a CUDA runtime/driver or HIP call: a family prefix followed by an upper-case
// letter (cudnn*, cublas*, cufft* are libraries, not CUDA calls).
std::string_view api_base(std::string_view name) {
  for (std::string_view prefix : {"__cuda", "cuda", "hip", "cu"}) {
    if (starts_with(name, prefix) && name.size() > prefix.size() && name[prefix.size()] >= 'A' &&
        name[prefix.size()] <= 'Z') {
      return name.substr(prefix.size());
    }
  }
  return {};
}

}  // namespace

std::string_view display_name(std::string_view name) {
  return api_base(name).empty() ? name : strip_version(name);
}

ApiClass classify_api(std::string_view raw) {
  std::string_view name = strip_version(raw);
  // Strip API family prefixes so one table serves runtime, driver and HIP names.
  const std::string_view base = api_base(name);
  if (base.empty()) return ApiClass::kOther;

  if (contains(base, "Launch")) {
    // LaunchKernel, LaunchKernelEx(C), LaunchCooperativeKernel, GraphLaunch, ModuleLaunchKernel,
    // ExtLaunchKernel, LaunchHostFunc (enqueues a host callback onto a stream).
    return ApiClass::kLaunch;
  }
  static constexpr std::array<std::pair<std::string_view, ApiClass>, 12> exact = {{
      {"StreamSynchronize", ApiClass::kStreamSync},
      {"DeviceSynchronize", ApiClass::kDeviceSync},
      {"CtxSynchronize", ApiClass::kDeviceSync},
      {"ThreadSynchronize", ApiClass::kDeviceSync},
      {"EventSynchronize", ApiClass::kEventSync},
      {"StreamWaitEvent", ApiClass::kStreamWait},
      {"EventQuery", ApiClass::kQuery},
      {"StreamQuery", ApiClass::kQuery},
      {"Free", ApiClass::kFree},
      {"MemFree", ApiClass::kFree},
      {"FreeHost", ApiClass::kFree},
      {"HostFree", ApiClass::kFree},
  }};
  for (const auto& [n, cls] : exact) {
    if (base == n) return cls;
  }
  if (starts_with(base, "Memcpy")) {
    // cudaMemcpy, cudaMemcpy2D, cudaMemcpyToSymbol, cuMemcpyDtoH, hipMemcpyWithStream (synchronous),
    // and their *Async variants.
    return contains(base, "Async") ? ApiClass::kMemcpyAsync : ApiClass::kMemcpySync;
  }
  if (starts_with(base, "Memset") || starts_with(base, "MemsetD")) {
    return contains(base, "Async") ? ApiClass::kMemsetAsync : ApiClass::kMemsetSync;
  }
  if (starts_with(base, "FreeAsync") || starts_with(base, "MemFreeAsync")) return ApiClass::kOther;
  if (starts_with(base, "Malloc") || starts_with(base, "MemAlloc") || base == "HostAlloc" || base == "HostMalloc") {
    return contains(base, "Async") ? ApiClass::kOther : ApiClass::kMalloc;
  }
  if (base == "FreeArray" || base == "FreeMipmappedArray") return ApiClass::kFree;
  return ApiClass::kOther;
}

CollectiveType classify_collective(std::string_view kernel) {
  // The collective follows the NCCL prefix: ncclDevKernel_AllReduce_Sum_f32_RING_LL,
  // ncclSymkDevKernel_AllGather_..., ncclKernel_AllReduce_RING_LL_Sum_float (pre-2.19).
  // Mangled names keep the prefix inside the identifier (_Z38ncclDevKernel_...).
  static constexpr std::array<std::string_view, 3> prefixes = {"ncclDevKernel_", "ncclSymkDevKernel_",
                                                              "ncclKernel_"};
  size_t at = std::string_view::npos;
  size_t plen = 0;
  for (std::string_view p : prefixes) {
    at = kernel.find(p);
    if (at != std::string_view::npos) {
      plen = p.size();
      break;
    }
  }
  if (at == std::string_view::npos) {
    // Some traces shorten names to "nccl:all_reduce"-style or "ncclAllReduce..." kernels.
    if (!starts_with(kernel, "nccl")) return CollectiveType::kNone;
    plen = 4;
    at = 0;
    while (at + plen < kernel.size() && (kernel[at + plen] == ':' || kernel[at + plen] == '_')) ++plen;
  }
  std::string_view op = kernel.substr(at + plen);
  // Kernel spellings (AllReduce) and PyTorch's record_param_comms annotations (nccl:all_reduce,
  // nccl:_all_gather_base, nccl:recv 0<-1); the longer of two shared prefixes first.
  static constexpr std::array<std::pair<std::string_view, CollectiveType>, 20> ops = {{
      {"AllReduce", CollectiveType::kAllReduce},
      {"all_reduce", CollectiveType::kAllReduce},
      {"allreduce", CollectiveType::kAllReduce},
      {"AllGather", CollectiveType::kAllGather},
      {"all_gather", CollectiveType::kAllGather},
      {"allgather", CollectiveType::kAllGather},
      {"ReduceScatter", CollectiveType::kReduceScatter},
      {"reduce_scatter", CollectiveType::kReduceScatter},
      {"AllToAll", CollectiveType::kAllToAll},
      {"all_to_all", CollectiveType::kAllToAll},
      {"alltoall", CollectiveType::kAllToAll},
      {"SendRecv", CollectiveType::kSendRecv},
      {"Broadcast", CollectiveType::kBroadcast},
      {"broadcast", CollectiveType::kBroadcast},
      {"Reduce", CollectiveType::kReduce},
      {"reduce", CollectiveType::kReduce},
      {"Send", CollectiveType::kSendRecv},
      {"send", CollectiveType::kSendRecv},
      {"Recv", CollectiveType::kSendRecv},
      {"recv", CollectiveType::kSendRecv},
  }};
  for (const auto& [p, type] : ops) {
    if (starts_with(op, p)) return type;
  }
  return CollectiveType::kOther;
}

CollectiveType classify_collective_op(std::string_view op) {
  // PyTorch's operation names ("allreduce", "_allgather_base", "reduce_scatter_tensor", "all_to_all",
  // "send", "recv") in any case, with or without underscores.
  std::string norm;
  for (char c : op) {
    if (c == '_' || c == ' ') continue;
    norm += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  static constexpr std::array<std::pair<std::string_view, CollectiveType>, 9> ops = {{
      {"allreduce", CollectiveType::kAllReduce},
      {"allgather", CollectiveType::kAllGather},
      {"reducescatter", CollectiveType::kReduceScatter},
      {"alltoall", CollectiveType::kAllToAll},
      {"broadcast", CollectiveType::kBroadcast},
      {"sendrecv", CollectiveType::kSendRecv},
      {"send", CollectiveType::kSendRecv},
      {"recv", CollectiveType::kSendRecv},
      {"reduce", CollectiveType::kReduce},
  }};
  for (const auto& [p, type] : ops) {
    if (starts_with(norm, p)) return type;
  }
  return CollectiveType::kOther;
}

bool is_module_loading_overhead(std::string_view name) {
  std::string lower(name.substr(0, 128));
  for (char& c : lower) c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  return contains(lower, "lazy function loading") || contains(lower, "module loading");
}

AllToAllPurpose all_to_all_purpose(std::string_view name) {
  // TorchRec's output distribution: its autograd functions (All2All_Pooled_*, All2All_Seq_*,
  // All2Allv_*, VariableBatchAll2All_Pooled_*, backward ones ending in "Backward", also under
  // "autograd::engine::evaluate_function: ...") and the ranges inside them.
  const bool output = contains(name, "All2All_Pooled") || contains(name, "All2All_Seq") ||
                      contains(name, "All2Allv") || contains(name, "alltoall_fwd") ||
                      contains(name, "alltoall_bwd") || contains(name, "EmbeddingsAllToAll");
  if (output) {
    return contains(name, "Backward") || contains(name, "alltoall_bwd") ? AllToAllPurpose::kEmbeddingsBackward
                                                                          : AllToAllPurpose::kEmbeddingsForward;
  }
  // The pipeline's range around the input distribution of the next batch ("## sparse_data_dist ##",
  // newer "## start_sparse_data_dist ##"), and the input distribution's own ranges
  // ("## all2all_data:lengths ##", "## all2all_tw_data:init ##", KJTAllToAll's awaitables).
  if (contains(name, "sparse_data_dist")) return AllToAllPurpose::kSparseFeaturesAhead;
  if ((contains(name, "all2all_") && contains(name, "data")) || contains(name, "KJTAllToAll")) {
    return AllToAllPurpose::kSparseFeatures;
  }
  return AllToAllPurpose::kUnknown;
}

namespace {
MemoryKind memory_from_word(std::string_view w) {
  if (w == "Pageable") return MemoryKind::kPageable;
  if (w == "Pinned") return MemoryKind::kPinned;
  if (w == "Device") return MemoryKind::kDevice;
  if (w == "Array") return MemoryKind::kArray;
  if (w == "Managed") return MemoryKind::kManaged;
  return MemoryKind::kUnknown;
}
}  // namespace

CopyDescription describe_copy(std::string_view name) {
  CopyDescription d;
  if (contains(name, "HtoD")) d.kind = CopyKind::kHtoD;
  else if (contains(name, "DtoH")) d.kind = CopyKind::kDtoH;
  else if (contains(name, "DtoD")) d.kind = CopyKind::kDtoD;
  else if (contains(name, "HtoH")) d.kind = CopyKind::kHtoH;
  else if (contains(name, "PtoP")) d.kind = CopyKind::kPtoP;
  // "(Pageable -> Device)"
  const size_t open = name.find('(');
  const size_t arrow = name.find(" -> ");
  const size_t close = name.find(')');
  if (open != std::string_view::npos && arrow != std::string_view::npos && close != std::string_view::npos &&
      open < arrow && arrow < close) {
    d.src = memory_from_word(name.substr(open + 1, arrow - open - 1));
    d.dst = memory_from_word(name.substr(arrow + 4, close - arrow - 4));
  }
  return d;
}

bool is_blocking(ApiClass cls, MemoryKind host_side_memory) {
  switch (cls) {
    case ApiClass::kStreamSync:
    case ApiClass::kDeviceSync:
    case ApiClass::kEventSync:
    case ApiClass::kMemcpySync:
    case ApiClass::kMemsetSync:
    case ApiClass::kFree:
      return true;
    case ApiClass::kMemcpyAsync:
      // An async copy to/from pageable memory is staged through a bounce buffer: the call
      // returns only once the copy is done, so it drains the queue like a sync.
      return host_side_memory == MemoryKind::kPageable;
    default:
      return false;
  }
}

MemoryKind host_side_memory(const Event& copy) {
  switch (copy.copy_kind()) {
    case CopyKind::kHtoD: return copy.src_memory;
    case CopyKind::kDtoH: return copy.dst_memory;
    case CopyKind::kHtoH:
      return copy.src_memory == MemoryKind::kPageable ? copy.src_memory : copy.dst_memory;
    default: return MemoryKind::kUnknown;
  }
}

bool is_enqueue(ApiClass cls) {
  return cls == ApiClass::kLaunch || cls == ApiClass::kMemcpyAsync || cls == ApiClass::kMemsetAsync;
}

std::string_view to_string(CopyKind k) {
  switch (k) {
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
    default: return "unknown";
  }
}
std::string_view to_string(MemoryKind k) {
  switch (k) {
    case MemoryKind::kPageable: return "pageable";
    case MemoryKind::kPinned: return "pinned";
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kArray: return "array";
    case MemoryKind::kManaged: return "managed";
    default: return "unknown";
  }
}
std::string_view to_string(SyncKind k) {
  switch (k) {
    case SyncKind::kEvent: return "event_sync";
    case SyncKind::kStreamWaitEvent: return "stream_wait_event";
    case SyncKind::kStream: return "stream_sync";
    case SyncKind::kContext: return "context_sync";
    default: return "unknown";
  }
}
std::string_view to_string(ApiClass c) {
  switch (c) {
    case ApiClass::kLaunch: return "launch";
    case ApiClass::kStreamSync: return "stream_sync";
    case ApiClass::kDeviceSync: return "device_sync";
    case ApiClass::kEventSync: return "event_sync";
    case ApiClass::kMemcpySync: return "memcpy_sync";
    case ApiClass::kMemcpyAsync: return "memcpy_async";
    case ApiClass::kMemsetSync: return "memset_sync";
    case ApiClass::kMemsetAsync: return "memset_async";
    case ApiClass::kMalloc: return "malloc";
    case ApiClass::kFree: return "free";
    case ApiClass::kStreamWait: return "stream_wait_event";
    case ApiClass::kQuery: return "query";
    default: return "other";
  }
}
std::string_view to_string(CollectiveType t) {
  switch (t) {
    case CollectiveType::kAllReduce: return "AllReduce";
    case CollectiveType::kAllGather: return "AllGather";
    case CollectiveType::kReduceScatter: return "ReduceScatter";
    case CollectiveType::kAllToAll: return "AllToAll";
    case CollectiveType::kSendRecv: return "SendRecv";
    case CollectiveType::kBroadcast: return "Broadcast";
    case CollectiveType::kReduce: return "Reduce";
    case CollectiveType::kOther: return "Other";
    default: return "none";
  }
}

std::string_view to_string(TimeDomainError e) {
  switch (e) {
    case TimeDomainError::kTimestampOutOfRange: return "timestamp_out_of_range";
    case TimeDomainError::kNegativeDuration: return "negative_duration";
    case TimeDomainError::kDurationTooLong: return "duration_over_a_day";
    default: return "none";
  }
}

}  // namespace stepwatch
