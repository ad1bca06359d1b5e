// Builds real CUPTI activity records in memory, laid out exactly as a given CUPTI version lays them
// out in an activity buffer (8-byte aligned, back to back, each of the size of that version's struct
// for its kind: record_layouts.h) — kineto's mock buffers
// (libkineto/test/CuptiActivityProfilerTest.cpp, MockCuptiActivityBuffer). Fields are written
// through the CUDA 13.0 structs, only those of the prefix common to every layout (the read fields
// of record_layouts.h), so a shorter record (CUPTI 12.6's Memcpy5) is never written past its end.
//
// Production use: the start-up layout check (layout_check.cpp) builds one record of each kind the
// adapter reads and has the loaded libcupti iterate them, so a library whose record sizes differ
// from the structs below is refused before its records are read. Tests and benchmarks push the
// same records through the real cuptiActivityGetNextRecord and the adapter's conversion, and the
// fake libcupti writes them into the adapter's buffers.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "cupti/record_layouts.h"
#include "cupti/record_size.h"

namespace stepwatch::live {

class ActivityBufferBuilder {
 public:
  // Owns zeroed, 8-byte-aligned storage of `capacity_bytes`.
  explicit ActivityBufferBuilder(size_t capacity_bytes = 1u << 20,
                                 const RecordLayout& layout = compiled_record_layout())
      : owned_(static_cast<uint8_t*>(std::calloc(1, capacity_bytes))),
        data_(owned_.get()),
        capacity_(capacity_bytes),
        layout_(&layout) {}
  // Writes into `buffer` (e.g. one the adapter handed out through bufferRequested), from offset 0.
  ActivityBufferBuilder(uint8_t* buffer, size_t capacity_bytes, const RecordLayout& layout = compiled_record_layout())
      : data_(buffer), capacity_(capacity_bytes), layout_(&layout) {}

  const RecordLayout& layout() const { return *layout_; }
  // The bytes of the last record appended (its own version's size).
  size_t last_record_bytes() const { return last_bytes_; }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  void clear() {
    std::memset(data_, 0, size_);
    size_ = 0;
  }

  // A zeroed record of `kind` at this layout's size for it, seen through R (the 13.0 struct);
  // nullptr when it does not fit. Every record size in the table is a multiple of 8, so records
  // stay aligned. Only R's fields of the common prefix may be written.
  template <typename R>
  R* append(CUpti_ActivityKind kind) {
    size_t bytes = record_size(*layout_, kind);
    if (bytes == 0) bytes = sizeof(R);  // a kind stepwatch does not read (a marker, ...)
    if (bytes % 8 != 0 || size_ + bytes > capacity_) return nullptr;
    auto* r = reinterpret_cast<R*>(data_ + size_);
    std::memset(static_cast<void*>(r), 0, bytes);
    r->kind = kind;
    size_ += bytes;
    last_bytes_ = bytes;
    return r;
  }

  // Raw bytes whose first word is `kind` (an unknown kind, or a record CUPTI cannot step over).
  uint8_t* append_raw(uint32_t kind, size_t bytes) {
    bytes = (bytes + 7) & ~size_t{7};
    if (bytes < sizeof(uint32_t) || size_ + bytes > capacity_) return nullptr;
    uint8_t* r = data_ + size_;
    std::memset(r, 0, bytes);
    std::memcpy(r, &kind, sizeof(kind));
    size_ += bytes;
    return r;
  }

  CUpti_ActivityKernel10* kernel(const char* name, uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id,
                                 uint32_t device_id = 0, uint32_t stream_id = 7) {
    auto* r = append<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r == nullptr) return nullptr;
    r->name = name;
    r->start = start_ns;
    r->end = end_ns;
    r->completed = end_ns;
    r->correlationId = correlation_id;
    r->deviceId = device_id;
    r->contextId = 1;
    r->streamId = stream_id;
    r->gridX = r->gridY = r->gridZ = 1;
    r->blockX = 128;
    r->blockY = r->blockZ = 1;
    return r;
  }

  CUpti_ActivityMemcpy6* memcpy(CUpti_ActivityMemcpyKind copy_kind, CUpti_ActivityMemoryKind src,
                                CUpti_ActivityMemoryKind dst, bool async, uint64_t bytes, uint64_t start_ns,
                                uint64_t end_ns, uint32_t correlation_id, uint32_t runtime_correlation_id = 0,
                                uint32_t device_id = 0, uint32_t stream_id = 7) {
    auto* r = append<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (r == nullptr) return nullptr;
    r->copyKind = static_cast<uint8_t>(copy_kind);
    r->srcKind = static_cast<uint8_t>(src);
    r->dstKind = static_cast<uint8_t>(dst);
    r->flags = static_cast<uint8_t>(async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0);
    r->bytes = bytes;
    r->start = start_ns;
    r->end = end_ns;
    r->deviceId = device_id;
    r->contextId = 1;
    r->streamId = stream_id;
    r->correlationId = correlation_id;
    r->runtimeCorrelationId = runtime_correlation_id;
    if (layout_->memcpy.bytes > kMemcpyCopyCountOffset) r->copyCount = 1;  // Memcpy6 and later
    return r;
  }

  CUpti_ActivityMemcpyPtoP4* peer_memcpy(uint64_t bytes, uint64_t start_ns, uint64_t end_ns, uint32_t correlation_id,
                                         uint32_t src_device, uint32_t dst_device, bool async = true,
                                         uint32_t stream_id = 7) {
    auto* r = append<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
    if (r == nullptr) return nullptr;
    r->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    r->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r->flags = static_cast<uint8_t>(async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0);
    r->bytes = bytes;
    r->start = start_ns;
    r->end = end_ns;
    r->deviceId = src_device;
    r->contextId = 1;
    r->streamId = stream_id;
    r->srcDeviceId = src_device;
    r->dstDeviceId = dst_device;
    r->correlationId = correlation_id;
    return r;
  }

  CUpti_ActivityMemset4* memset(uint64_t bytes, CUpti_ActivityMemoryKind memory_kind, bool async, uint64_t start_ns,
                                uint64_t end_ns, uint32_t correlation_id, uint32_t device_id = 0,
                                uint32_t stream_id = 7) {
    auto* r = append<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
    if (r == nullptr) return nullptr;
    r->bytes = bytes;
    r->start = start_ns;
    r->end = end_ns;
    r->deviceId = device_id;
    r->contextId = 1;
    r->streamId = stream_id;
    r->correlationId = correlation_id;
    r->flags = static_cast<uint16_t>(async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0);
    r->memoryKind = static_cast<uint16_t>(memory_kind);
    return r;
  }

  CUpti_ActivitySynchronization2* sync(CUpti_ActivitySynchronizationType type, uint64_t start_ns, uint64_t end_ns,
                                       uint32_t correlation_id, uint32_t stream_id = CUPTI_SYNCHRONIZATION_INVALID_VALUE) {
    auto* r = append<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    if (r == nullptr) return nullptr;
    r->type = type;
    r->start = start_ns;
    r->end = end_ns;
    r->correlationId = correlation_id;
    r->contextId = 1;
    r->streamId = stream_id;
    r->cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    return r;
  }

  CUpti_ActivityAPI* api(CUpti_ActivityKind kind /*RUNTIME or DRIVER*/, uint32_t cbid, uint64_t start_ns,
                         uint64_t end_ns, uint32_t thread_id, uint32_t correlation_id) {
    auto* r = append<CUpti_ActivityAPI>(kind);
    if (r == nullptr) return nullptr;
    r->cbid = cbid;
    r->start = start_ns;
    r->end = end_ns;
    r->processId = 4242;
    r->threadId = thread_id;
    r->correlationId = correlation_id;
    return r;
  }

  CUpti_ActivityMemory4* memory(CUpti_ActivityMemoryOperationType operation, CUpti_ActivityMemoryKind memory_kind,
                                uint64_t bytes, uint64_t timestamp_ns, uint32_t correlation_id,
                                uint32_t device_id = 0, uint32_t stream_id = 0) {
    auto* r = append<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (r == nullptr) return nullptr;
    r->memoryOperationType = operation;
    r->memoryKind = memory_kind;
    r->correlationId = correlation_id;
    r->address = 0x7f0000000000ull;
    r->bytes = bytes;
    r->timestamp = timestamp_ns;
    r->deviceId = device_id;
    r->contextId = 1;
    r->streamId = stream_id;
    return r;
  }

  // `overhead_data_bytes` > 0 attaches malloc'ed overheadData, which the client (the adapter) must
  // free — as CUPTI does.
  CUpti_ActivityOverhead3* overhead(CUpti_ActivityOverheadKind overhead_kind, uint64_t start_ns, uint64_t end_ns,
                                    uint32_t correlation_id, size_t overhead_data_bytes = 0) {
    auto* r = append<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
    if (r == nullptr) return nullptr;
    r->overheadKind = overhead_kind;
    r->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    r->start = start_ns;
    r->end = end_ns;
    r->correlationId = correlation_id;
    if (overhead_data_bytes > 0) r->overheadData = std::calloc(1, overhead_data_bytes);
    return r;
  }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> owned_;
  uint8_t* data_;
  size_t capacity_;
  const RecordLayout* layout_;
  size_t size_ = 0;
  size_t last_bytes_ = 0;
};

}  // namespace stepwatch::live
