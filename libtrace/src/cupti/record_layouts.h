// The CUPTI versions whose activity records stepwatch reads, and how each lays them out.
//
// CUPTI writes the newest struct version of each record kind its release defines, and the struct
// versions change within a major version (12.8 moved to Memcpy6 and Synchronization2, 13.1 to
// Kernel11, 13.3 to Kernel12, 13.4 to Kernel13, Memcpy7 and Memset5). Every one of those keeps the
// fields the converter reads at the same offsets (SW_CUPTI_READ_FIELDS below) and appends its new
// fields at the end, so one converter reads them all, given each version's record sizes: those
// locate what follows the last record read, and the start-up check (layout_check.cpp) has the
// loaded library iterate records of exactly these sizes before any of its records is read.
//
// Deliberately free of CUPTI types (plain numbers): tests/live/cupti_layout_probe.cpp compiles this
// table against each pinned CUPTI's own headers and checks every size and offset here against them.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace stepwatch::live {

struct RecordLayout {
  uint32_t first_version, last_version;  // cuptiGetVersion() range (cupti_version.h lists them)
  const char* name;                       // "CUDA 12.8-12.9", for log lines
  uint32_t major;                         // libcupti.so.<major>
  // Bytes and struct name (for messages and the probe) of each kind as this CUPTI writes it.
  struct Kind {
    uint16_t bytes;
    const char* record;
  };
  Kind kernel, memcpy, peer_copy, memset, sync, api, memory, overhead;
};

// The layout of `cupti_version`, or nullptr for a version stepwatch does not read.
const RecordLayout* record_layout(uint32_t cupti_version) noexcept;
// The 13.0 layout: that of the headers the adapter is compiled with (tests' default).
const RecordLayout& compiled_record_layout() noexcept;
std::span<const RecordLayout> known_record_layouts() noexcept;
// "12.6, 12.8-12.9, 13.0, ...": the versions the table accepts, for the refusal line.
std::string known_record_layouts_text();

// The fields the converter reads and the record builder writes, with their offset in every layout
// above (the probe checks each against each version's header; cupti_records.cpp against the
// compiled structs). X(kind, field, offset).
#define SW_CUPTI_READ_FIELDS(X)                                                                          \
  X(kernel, start, 16) X(kernel, end, 24) X(kernel, completed, 32) X(kernel, deviceId, 40)                \
  X(kernel, contextId, 44) X(kernel, streamId, 48) X(kernel, gridX, 52) X(kernel, gridY, 56)              \
  X(kernel, gridZ, 60) X(kernel, blockX, 64) X(kernel, blockY, 68) X(kernel, blockZ, 72)                  \
  X(kernel, correlationId, 92) X(kernel, name, 104)                                                       \
  X(memcpy, copyKind, 4) X(memcpy, srcKind, 5) X(memcpy, dstKind, 6) X(memcpy, flags, 7)                  \
  X(memcpy, bytes, 8) X(memcpy, start, 16) X(memcpy, end, 24) X(memcpy, deviceId, 32)                    \
  X(memcpy, contextId, 36) X(memcpy, streamId, 40) X(memcpy, correlationId, 44)                           \
  X(memcpy, runtimeCorrelationId, 48)                                                                     \
  X(peer_copy, copyKind, 4) X(peer_copy, srcKind, 5) X(peer_copy, dstKind, 6) X(peer_copy, flags, 7)      \
  X(peer_copy, bytes, 8) X(peer_copy, start, 16) X(peer_copy, end, 24) X(peer_copy, deviceId, 32)         \
  X(peer_copy, contextId, 36) X(peer_copy, streamId, 40) X(peer_copy, srcDeviceId, 44)                    \
  X(peer_copy, dstDeviceId, 52) X(peer_copy, correlationId, 60)                                           \
  X(memset, bytes, 8) X(memset, start, 16) X(memset, end, 24) X(memset, deviceId, 32)                     \
  X(memset, contextId, 36) X(memset, streamId, 40) X(memset, correlationId, 44) X(memset, flags, 48)      \
  X(memset, memoryKind, 50)                                                                               \
  X(sync, type, 4) X(sync, start, 8) X(sync, end, 16) X(sync, correlationId, 24) X(sync, contextId, 28)   \
  X(sync, streamId, 32) X(sync, cudaEventId, 36)                                                          \
  X(api, cbid, 4) X(api, start, 8) X(api, end, 16) X(api, processId, 24) X(api, threadId, 28)             \
  X(api, correlationId, 32)                                                                               \
  X(memory, memoryOperationType, 4) X(memory, memoryKind, 8) X(memory, correlationId, 12)                 \
  X(memory, address, 16) X(memory, bytes, 24) X(memory, timestamp, 32) X(memory, deviceId, 52)            \
  X(memory, contextId, 56) X(memory, streamId, 60)                                                        \
  X(overhead, overheadKind, 4) X(overhead, objectKind, 8) X(overhead, start, 24) X(overhead, end, 32)     \
  X(overhead, correlationId, 40) X(overhead, overheadData, 48)

// Memcpy6 and later end with copyCount (offset 88); Memcpy5 (CUPTI 12.6) is 88 bytes without it.
inline constexpr uint16_t kMemcpyCopyCountOffset = 88;

}  // namespace stepwatch::live
