#include "cupti/cupti_records.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "stepwatch/core/classify.h"

namespace stepwatch::live {

// ---- The record versions this adapter reads, pinned in one place ----------------------------
//
// CUDA 13.0 layouts. Within one CUPTI major version new fields are only appended, so a newer
// libcupti.so.13 still yields records these structs read correctly; the adapter refuses a
// libcupti whose cuptiGetVersion() is outside [130000, 140000). The sizes were measured with the
// 13.0 headers: a header update that changes one fails here and needs a review of this file.
static_assert(CUPTI_API_VERSION >= 130000, "the record table below is the CUPTI 13.0 one");
using KernelRecord = CUpti_ActivityKernel10;        // CONCURRENT_KERNEL, KERNEL
using MemcpyRecord = CUpti_ActivityMemcpy6;         // MEMCPY
using PeerCopyRecord = CUpti_ActivityMemcpyPtoP4;   // MEMCPY2
using MemsetRecord = CUpti_ActivityMemset4;         // MEMSET
using SyncRecord = CUpti_ActivitySynchronization2;  // SYNCHRONIZATION
using ApiRecord = CUpti_ActivityAPI;                // RUNTIME, DRIVER
using MemoryRecord = CUpti_ActivityMemory4;         // MEMORY2
using OverheadRecord = CUpti_ActivityOverhead3;     // OVERHEAD
static_assert(sizeof(KernelRecord) == 216 && sizeof(MemcpyRecord) == 96 && sizeof(PeerCopyRecord) == 96 &&
              sizeof(MemsetRecord) == 88 && sizeof(SyncRecord) == 56 && sizeof(ApiRecord) == 40 &&
              sizeof(MemoryRecord) == 128 && sizeof(OverheadRecord) == 56);

namespace {

CopyKind copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::kHtoD;  // arrays live on the device
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyKind::kDtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::kHtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::kPtoP;
    default: return CopyKind::kUnknown;
  }
}

MemoryKind memory_kind(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::kPageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::kPinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemoryKind::kDevice;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return MemoryKind::kArray;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::kManaged;
    default: return MemoryKind::kUnknown;
  }
}

SyncKind sync_kind(uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return SyncKind::kEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return SyncKind::kStreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return SyncKind::kStream;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return SyncKind::kContext;
    default: return SyncKind::kUnknown;
  }
}

// Ids that do not apply hold CUPTI_SYNCHRONIZATION_INVALID_VALUE (0xFFFFFFFF); ours use 0.
uint32_t valid_or_zero(uint32_t id) { return id == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0u : id; }

int16_t device_of(uint32_t device_id) {
  return device_id > 0x7fff ? int16_t{-1} : static_cast<int16_t>(device_id);
}

// Record timestamps are CLOCK_REALTIME ns: far below INT64_MAX until year 2262.
int64_t ns(uint64_t t) { return static_cast<int64_t>(t); }

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", "cudaStreamSynchronize_ptsz_v7000" ->
// "cudaStreamSynchronize_ptsz": CUPTI's API version suffix is noise in tables (Kineto's names
// carry none); per-thread-stream suffixes stay.
std::string_view without_version_suffix(std::string_view name) {
  const size_t us = name.rfind("_v");
  if (us == std::string_view::npos || us == 0 || us + 2 >= name.size()) return name;
  if (name.find_first_not_of("0123456789", us + 2) != std::string_view::npos) return name;
  return name.substr(0, us);
}

struct OverheadKindName {
  size_t slot;
  const char* name;
};

OverheadKindName overhead_kind_name(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return {1, "CUPTI overhead: driver compiler"};
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return {2, "CUPTI overhead: buffer flush"};
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return {3, "CUPTI overhead: instrumentation"};
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return {4, "CUPTI overhead: resource"};
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return {5, "CUPTI overhead: runtime-triggered module loading"};
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return {6, "CUPTI overhead: lazy function loading"};
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return {7, "CUPTI overhead: command buffer full"};
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return {8, "CUPTI overhead: activity buffer request"};
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return {9, "CUPTI overhead: UVM activity init"};
    default: return {0, "CUPTI overhead: unknown"};
  }
}

}  // namespace

// Kernel names repeat a lot (a training step launches the same few hundred kernels over and
// over, Inductor graphs a few thousand): an open-addressing cache keyed by CUPTI's name pointer
// saves a sink.intern() (hash + lock) and a classify_collective() (substring searches) per record.
// Valid for one buffer only (its generation): CUPTI owns the strings, and a pointer reused after a
// module unload must not map to a stale name. A new generation empties it in O(1).
class KernelNameCache {
 public:
  struct Entry {
    const char* key = nullptr;
    NameId name = kNoName;
    uint32_t generation = 0;
    CollectiveType collective = CollectiveType::kNone;
  };

  void next_buffer() noexcept {
    if (++generation_ == 0) {  // wrapped: really clear once every 2^32 buffers
      for (Entry& e : slots_) e = Entry{};
      generation_ = 1;
    }
  }

  const Entry& get(const char* name, EventSink& sink) {
    const auto key = reinterpret_cast<uintptr_t>(name);
    const size_t home = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - kBits));
    // Linear probing over a few slots; when they are all taken the home slot is recycled.
    for (size_t i = 0; i < kProbes; ++i) {
      Entry& slot = slots_[(home + i) & (kSlots - 1)];
      if (slot.generation != generation_) return fill(slot, name, sink);
      if (slot.key == name) return slot;
    }
    return fill(slots_[home], name, sink);
  }

 private:
  static constexpr int kBits = 12;
  static constexpr size_t kSlots = size_t{1} << kBits;  // 96 KiB
  static constexpr size_t kProbes = 8;

  const Entry& fill(Entry& slot, const char* name, EventSink& sink) {
    const std::string_view view(name);
    slot.key = name;
    slot.name = sink.intern(view);
    slot.collective = classify_collective(view);
    slot.generation = generation_;
    return slot;
  }

  std::vector<Entry> slots_ = std::vector<Entry>(kSlots);
  uint32_t generation_ = 0;
};

RecordConverter::RecordConverter(const CuptiApi& api, EventSink& sink) noexcept : api_(api), sink_(sink) {}

RecordConverter::~RecordConverter() = default;

std::unique_ptr<KernelNameCache> RecordConverter::acquire_cache() noexcept {
  try {
    {
      std::lock_guard lock(caches_mu_);
      if (!idle_caches_.empty()) {
        std::unique_ptr<KernelNameCache> cache = std::move(idle_caches_.back());
        idle_caches_.pop_back();
        return cache;
      }
    }
    return std::make_unique<KernelNameCache>();
  } catch (...) {
    return nullptr;  // out of memory: parse without the cache
  }
}

void RecordConverter::release_cache(std::unique_ptr<KernelNameCache> cache) noexcept {
  if (cache == nullptr) return;
  try {
    std::lock_guard lock(caches_mu_);
    idle_caches_.push_back(std::move(cache));
  } catch (...) {
  }
}

RecordConverter::ApiName RecordConverter::api_name(CUpti_CallbackDomain domain, uint32_t cbid) noexcept {
  std::atomic<uint64_t>* slot = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < runtime_names_.size()) slot = &runtime_names_[cbid];
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < driver_names_.size()) slot = &driver_names_[cbid];
  if (slot != nullptr) {
    const uint64_t packed = slot->load(std::memory_order_relaxed);
    if (packed != 0) return {static_cast<NameId>(packed >> 32), static_cast<ApiClass>((packed >> 8) & 0xff)};
  }
  // First time for this CBID: cuptiGetCallbackName returns a constant string inside libcupti.
  ApiName out;
  const char* raw = nullptr;
  if (api_.cuptiGetCallbackName(domain, cbid, &raw) == CUPTI_SUCCESS && raw != nullptr) {
    const std::string_view name = without_version_suffix(raw);
    out.name = sink_.intern(name);
    out.api_class = classify_api(name);
  }
  // Racing threads store the same value (intern is idempotent): relaxed is enough.
  if (slot != nullptr) {
    slot->store(uint64_t{out.name} << 32 | uint64_t{static_cast<uint8_t>(out.api_class)} << 8 | 1u,
                std::memory_order_relaxed);
  }
  return out;
}

NameId RecordConverter::overhead_name(uint32_t overhead_kind) noexcept {
  const OverheadKindName k = overhead_kind_name(overhead_kind);
  std::atomic<NameId>& slot = overhead_names_[k.slot];
  NameId id = slot.load(std::memory_order_relaxed);
  if (id == kNoName) {
    id = sink_.intern(k.name);
    slot.store(id, std::memory_order_relaxed);
  }
  return id;
}

BufferParseResult RecordConverter::parse(uint8_t* buffer, size_t valid_bytes) noexcept {
  BufferParseResult result;
  if (buffer == nullptr || valid_bytes == 0) return result;
  std::unique_ptr<KernelNameCache> kernel_names = acquire_cache();
  if (kernel_names != nullptr) kernel_names->next_buffer();
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = api_.cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // end of the valid part
    if (status != CUPTI_SUCCESS) {
      // CUPTI_ERROR_INVALID_KIND: an incomplete (or unknown) record; the iteration cannot step over
      // it, so the rest of the buffer is lost. Any other error: same consequence.
      result.incomplete = true;
      break;
    }
    ++result.records;
    Event ev;
    // The record is read in place (8-byte aligned, CUPTI's packed layout) and copied out field by
    // field; no pointer into the buffer outlives this iteration.
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* r = reinterpret_cast<const KernelRecord*>(record);
        ev.kind = EventKind::kKernel;
        ev.start_ns = ns(r->start);
        ev.end_ns = ns(r->end);
        ev.correlation = r->correlationId;
        ev.device = device_of(r->deviceId);
        ev.stream = r->streamId;
        if (ev.start_ns == 0 && ev.end_ns == 0) break;  // skipped below; no name needed
        if (r->name != nullptr && kernel_names != nullptr) {
          const KernelNameCache::Entry& n = kernel_names->get(r->name, sink_);
          ev.name = n.name;
          ev.collective = n.collective;
        } else if (r->name != nullptr) {
          ev.name = sink_.intern(r->name);
          ev.collective = classify_collective(r->name);
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* r = reinterpret_cast<const MemcpyRecord*>(record);
        ev.kind = EventKind::kMemcpy;
        ev.start_ns = ns(r->start);
        ev.end_ns = ns(r->end);
        // The runtime correlation joins the copy to the cudaMemcpy* API record when the copy came
        // through the runtime; driver-level copies only have correlationId.
        ev.correlation = r->runtimeCorrelationId != 0 ? r->runtimeCorrelationId : r->correlationId;
        ev.bytes = r->bytes;
        ev.device = device_of(r->deviceId);
        ev.stream = r->streamId;
        ev.detail = static_cast<uint8_t>(copy_kind(r->copyKind));
        ev.src_memory = memory_kind(r->srcKind);
        ev.dst_memory = memory_kind(r->dstKind);
        if ((r->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0) ev.flags |= event_flags::kAsync;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const auto* r = reinterpret_cast<const PeerCopyRecord*>(record);
        ev.kind = EventKind::kMemcpy;
        ev.start_ns = ns(r->start);
        ev.end_ns = ns(r->end);
        ev.correlation = r->correlationId;
        ev.bytes = r->bytes;
        ev.device = device_of(r->deviceId);
        ev.stream = r->streamId;
        ev.detail = static_cast<uint8_t>(CopyKind::kPtoP);
        ev.src_memory = memory_kind(r->srcKind);
        ev.dst_memory = memory_kind(r->dstKind);
        if ((r->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0) ev.flags |= event_flags::kAsync;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* r = reinterpret_cast<const MemsetRecord*>(record);
        ev.kind = EventKind::kMemset;
        ev.start_ns = ns(r->start);
        ev.end_ns = ns(r->end);
        ev.correlation = r->correlationId;
        ev.bytes = r->bytes;
        ev.device = device_of(r->deviceId);
        ev.stream = r->streamId;
        ev.dst_memory = memory_kind(r->memoryKind);
        if ((r->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0) ev.flags |= event_flags::kAsync;
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* r = reinterpret_cast<const SyncRecord*>(record);
        ev.kind = EventKind::kSync;
        ev.start_ns = ns(r->start);
        ev.end_ns = ns(r->end);
        ev.correlation = r->correlationId;
        ev.stream = valid_or_zero(r->streamId);
        ev.detail = static_cast<uint8_t>(sync_kind(r->type));
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* r = reinterpret_cast<const ApiRecord*>(record);
        ev.kind = EventKind::kApiCall;
        ev.start_ns = ns(r->start);
        ev.end_ns = ns(r->end);
        ev.correlation = r->correlationId;
        ev.thread = r->threadId;
        if (ev.start_ns == 0 && ev.end_ns == 0) break;
        const ApiName n = api_name(record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                               : CUPTI_CB_DOMAIN_DRIVER_API,
                                   r->cbid);
        ev.name = n.name;
        ev.detail = static_cast<uint8_t>(n.api_class);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMORY2: {
        const auto* r = reinterpret_cast<const MemoryRecord*>(record);
        ev.kind = EventKind::kAllocation;
        ev.start_ns = ev.end_ns = ns(r->timestamp);
        ev.correlation = r->correlationId;
        ev.bytes = r->bytes;
        ev.device = device_of(r->deviceId);
        ev.stream = r->streamId;
        ev.detail = static_cast<uint8_t>(
            r->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? 2 : 1);
        ev.dst_memory = memory_kind(r->memoryKind);
        break;
      }
      case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        auto* r = reinterpret_cast<OverheadRecord*>(record);
        // Ownership: CUPTI gives overheadData to the client ("Client is responsible for freeing
        // this memory"). Freed first, whatever happens to the record, and cleared so that a
        // buffer parsed twice cannot double-free.
        if (r->overheadData != nullptr) {
          std::free(r->overheadData);
          r->overheadData = nullptr;
        }
        ev.kind = EventKind::kOverhead;
        ev.start_ns = ns(r->start);
        ev.end_ns = ns(r->end);
        ev.correlation = r->correlationId;
        if (ev.start_ns == 0 && ev.end_ns == 0) break;
        ev.name = overhead_name(static_cast<uint32_t>(r->overheadKind));
        if (ev.end_ns > ev.start_ns) result.cupti_overhead_ns += ev.end_ns - ev.start_ns;
        break;
      }
      default:
        // Kinds another client (Kineto, ...) enabled in the process-global activity API.
        ++result.ignored;
        continue;
    }
    // Every converted kind is timed: start == end == 0 means CUPTI lost the timing (device buffer
    // too small, pitfall 5). Skipped, and counted.
    if (ev.start_ns == 0 && ev.end_ns == 0) {
      ++result.zero_timestamp;
      continue;
    }
    sink_.submit(ev);
    ++result.events;
  }
  release_cache(std::move(kernel_names));
  if (result.zero_timestamp != 0) sink_.report_loss(LossKind::kZeroTimestamp, result.zero_timestamp);
  if (result.incomplete) sink_.report_loss(LossKind::kIncompleteRecord, 1);
  return result;
}

}  // namespace stepwatch::live
