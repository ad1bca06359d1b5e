// The event model: one compact POD for everything the pipeline sees, live or offline.
//
// Front ends (CUPTI adapter, NVTX injection, C API, Kineto/nsys importers) convert their records
// into `Event` at the boundary; nothing past that boundary sees a vendor type. Names are interned
// (see NameTable), so an Event is trivially copyable and at most 64 bytes.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace stepwatch {

using NameId = uint32_t;
inline constexpr NameId kNoName = 0;

enum class EventKind : uint8_t {
  kKernel,     // GPU kernel (compute, or NCCL when `collective` != kNone)
  kMemcpy,     // GPU copy
  kMemset,     // GPU memset
  kSync,       // CUPTI synchronization record (host-side interval of a sync wait)
  kApiCall,    // CUDA runtime/driver (or HIP) API call on a host thread
  kRange,      // a host range (NVTX, profiler annotation, C API phase); GPU-side when kOnDevice
  kStepMark,   // explicit step boundary from the C API (start_ns = mark time, step = number)
  kOverhead,   // the tracer's own overhead interval (CUPTI buffer requests, ...)
  kAllocation, // a device memory allocation (detail 1) or release (detail 2) at start_ns; bytes
  // A Python frame of a host thread (call_sites.h): Kineto's `python_function` events offline
  // (name "file(line): function", nested, line = where the function is defined), and live the
  // user frame the library read at a blocking call's entry (correlation = that call's, flag
  // kCallLine: the line executing; bytes = the NameId of the frame it called, 0 none) or, for a
  // call made from native code, the caller's return address in bytes (name kNoName) until the
  // pipeline names it. Never a range: step inference and host activity must not see frames.
  kPythonFrame,
};

enum class CopyKind : uint8_t { kUnknown, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
enum class MemoryKind : uint8_t { kUnknown, kPageable, kPinned, kDevice, kArray, kManaged };
enum class SyncKind : uint8_t { kUnknown, kEvent, kStreamWaitEvent, kStream, kContext };

// What an API call does to the host/GPU relationship. Decides its role in gap attribution:
// launches enqueue work (rule 3's "launch"), blocking calls make the host wait (rule 2).
enum class ApiClass : uint8_t {
  kOther,
  kLaunch,        // kernel / graph / cooperative launches
  kStreamSync,
  kDeviceSync,
  kEventSync,
  kMemcpySync,    // synchronous memcpy (blocking whatever the memory kind)
  kMemcpyAsync,   // async memcpy: enqueues, unless host memory is pageable (then it blocks)
  kMemsetSync,
  kMemsetAsync,
  kMalloc,
  kFree,          // cudaFree and friends: implicitly synchronizing
  kStreamWait,    // cudaStreamWaitEvent: a GPU-side wait, the host does not block
  kQuery,         // cudaEventQuery / cudaStreamQuery: polling, never blocks
};

enum class CollectiveType : uint8_t {
  kNone,  // not a collective kernel
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv,
  kBroadcast,
  kReduce,
  kOther,  // an NCCL kernel whose operation the name does not tell (e.g. ncclDevKernel_Generic)
};

namespace event_flags {
inline constexpr uint8_t kOnDevice = 1u << 0;      // a range on the GPU timeline (gpu_user_annotation)
inline constexpr uint8_t kExplicitStep = 1u << 1;  // a step range from the C API (highest priority)
inline constexpr uint8_t kAsync = 1u << 2;         // copy/memset record flagged asynchronous by the tracer
inline constexpr uint8_t kCallLine = 1u << 3;      // a frame whose line is the line executing, not the def
inline constexpr uint8_t kNativeSite = 1u << 4;    // a frame that is a native call site (live, C/C++ callers)
}  // namespace event_flags

// The time domain every stage does its arithmetic in. Importers and adapters leave out (and count)
// records outside it, so no later sum, difference or gap can overflow: timestamps within ±2^62 ns
// (±146 years around the clock's epoch: Kineto's epoch microseconds, nsys's session nanoseconds and
// CUPTI's CLOCK_REALTIME all fit), and no single record longer than a day. A kernel, copy, API call
// or range that lasts longer than that is a corrupt row, not a measurement; a step's sum over its
// records stays below 2^63 for any realistic record count, and the per-kernel totals that add
// unclipped durations saturate (sat_add).
inline constexpr int64_t kMaxTimestampNs = int64_t{1} << 62;
inline constexpr int64_t kMaxRecordDurationNs = int64_t{24} * 3600 * 1'000'000'000;

// Why a record is outside the time domain; nullopt-like kInDomain when it is inside.
enum class TimeDomainError : uint8_t { kNone, kTimestampOutOfRange, kNegativeDuration, kDurationTooLong };
constexpr TimeDomainError check_time_domain(int64_t start_ns, int64_t end_ns) {
  if (start_ns < -kMaxTimestampNs || start_ns > kMaxTimestampNs || end_ns < -kMaxTimestampNs ||
      end_ns > kMaxTimestampNs) {
    return TimeDomainError::kTimestampOutOfRange;
  }
  if (end_ns < start_ns) return TimeDomainError::kNegativeDuration;
  if (end_ns - start_ns > kMaxRecordDurationNs) return TimeDomainError::kDurationTooLong;
  return TimeDomainError::kNone;
}
// The skipped-record reason for each error ("timestamp_out_of_range", ...).
std::string_view to_string(TimeDomainError);

// a + b for non-negative durations, saturating at INT64_MAX instead of overflowing.
constexpr int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

struct Event {
  int64_t start_ns = 0;
  int64_t end_ns = 0;       // == start_ns for instantaneous events
  uint64_t correlation = 0;  // joins a GPU record to the API call that launched it; 0 = none
  uint64_t bytes = 0;        // copies and memsets
  int64_t step = -1;         // step number carried by a step mark or step range; -1 = none
  NameId name = kNoName;
  uint32_t thread = 0;  // host thread id (API calls, ranges); 0 when unknown
  uint32_t stream = 0;  // GPU stream (GPU records)
  int16_t device = -1;
  EventKind kind = EventKind::kKernel;
  uint8_t detail = 0;  // CopyKind for copies, SyncKind for syncs, ApiClass for API calls
  MemoryKind src_memory = MemoryKind::kUnknown;
  MemoryKind dst_memory = MemoryKind::kUnknown;
  CollectiveType collective = CollectiveType::kNone;
  uint8_t flags = 0;

  int64_t duration_ns() const { return end_ns - start_ns; }
  bool is_gpu_record() const {
    return kind == EventKind::kKernel || kind == EventKind::kMemcpy || kind == EventKind::kMemset;
  }
  bool is_comm_kernel() const { return kind == EventKind::kKernel && collective != CollectiveType::kNone; }
  bool is_compute_kernel() const { return kind == EventKind::kKernel && collective == CollectiveType::kNone; }
  CopyKind copy_kind() const { return static_cast<CopyKind>(detail); }
  SyncKind sync_kind() const { return static_cast<SyncKind>(detail); }
  ApiClass api_class() const { return static_cast<ApiClass>(detail); }
  bool has_flag(uint8_t f) const { return (flags & f) != 0; }
};

static_assert(std::is_trivially_copyable_v<Event>);
static_assert(sizeof(Event) <= 64, "events must stay within one cache line");

std::string_view to_string(CopyKind);
std::string_view to_string(MemoryKind);
std::string_view to_string(SyncKind);
std::string_view to_string(ApiClass);
std::string_view to_string(CollectiveType);

}  // namespace stepwatch
