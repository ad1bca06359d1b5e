#include "cupti/cupti_records.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cupti/launch_tracker.h"
#include "cupti/record_size.h"
#include "stepwatch/core/classify.h"

namespace stepwatch::live {

// ---- The structs the fields are read through ------------------------------------------------
//
// The CUDA 13.0 structs. Every layout in record_layouts.cpp keeps the fields read here at these
// offsets (checked below against the compiled headers, and by tests/live/cupti_layout_probe.cpp
// against each pinned release's), so a record of any known version is read through them: only the
// fields of the common prefix are touched, never a 13.0 field past a shorter record's end.
static_assert(CUPTI_API_VERSION >= 130000, "the structs below are the CUPTI 13.0 ones");
using KernelRecord = CUpti_ActivityKernel10;        // CONCURRENT_KERNEL, KERNEL
using MemcpyRecord = CUpti_ActivityMemcpy6;         // MEMCPY
using PeerCopyRecord = CUpti_ActivityMemcpyPtoP4;   // MEMCPY2
using MemsetRecord = CUpti_ActivityMemset4;         // MEMSET
using SyncRecord = CUpti_ActivitySynchronization2;  // SYNCHRONIZATION
using ApiRecord = CUpti_ActivityAPI;                // RUNTIME, DRIVER
using MemoryRecord = CUpti_ActivityMemory4;         // MEMORY2
using OverheadRecord = CUpti_ActivityOverhead3;     // OVERHEAD

namespace read_structs {
using kernel = KernelRecord;
using memcpy = MemcpyRecord;
using peer_copy = PeerCopyRecord;
using memset = MemsetRecord;
using sync = SyncRecord;
using api = ApiRecord;
using memory = MemoryRecord;
using overhead = OverheadRecord;
}  // namespace read_structs
#define SW_CHECK_READ_FIELD(kind, field, offset) \
  static_assert(offsetof(read_structs::kind, field) == (offset), #kind "." #field " moved");
SW_CUPTI_READ_FIELDS(SW_CHECK_READ_FIELD)
#undef SW_CHECK_READ_FIELD
// The older structs of the table that the 13.0 headers still carry (cupti_activity_deprecated.h).
static_assert(offsetof(CUpti_ActivityKernel9, name) == 104 && offsetof(CUpti_ActivityKernel9, correlationId) == 92 &&
              offsetof(CUpti_ActivityMemcpy5, runtimeCorrelationId) == 48 &&
              offsetof(CUpti_ActivitySynchronization, streamId) == 32 && offsetof(CUpti_ActivitySynchronization, type) == 4);
static_assert(sizeof(KernelRecord) == 216 && sizeof(CUpti_ActivityKernel9) == 208 && sizeof(MemcpyRecord) == 96 &&
              sizeof(CUpti_ActivityMemcpy5) == 88 && sizeof(SyncRecord) == 56 &&
              sizeof(CUpti_ActivitySynchronization) == 40 && sizeof(PeerCopyRecord) == 96 && sizeof(MemsetRecord) == 88 &&
              sizeof(ApiRecord) == 40 && sizeof(MemoryRecord) == 128 && sizeof(OverheadRecord) == 56);

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
// over; torch.compile and Triton make thousands): an open-addressing cache keyed by CUPTI's name
// pointer saves a sink.intern() (hash + lock) and a classify_collective() (substring searches) per
// record. CUPTI shares one name string among all records of a kernel (cupti_activity.h:3069-3072),
// so the pointer is a key for as long as CUPTI keeps the string: the cache lives across buffers and
// is emptied when the converter's epoch moves (module unload / context destruction), so that a
// pointer reused by a new module never maps to a stale name. It grows with the number of names
// (to 128k entries), which keeps the cost per record independent of that number.
class ParseScratch {
 public:
  struct Entry {
    const char* key = nullptr;
    NameId name = kNoName;
    CollectiveType collective = CollectiveType::kNone;
  };

  // Per parse: the correlation ids seen (for the completeness watermark) and held sync records
  // completed by an API record of this buffer.
  std::vector<uint32_t> api_ids, gpu_ids;
  std::vector<Event> ready;
  std::vector<std::pair<uint32_t, int64_t>> first_start;  // per stream: the earliest GPU start

  void begin(uint32_t epoch) {
    api_ids.clear();
    gpu_ids.clear();
    ready.clear();
    first_start.clear();
    if (epoch != epoch_) {
      std::fill(slots_.begin(), slots_.end(), Entry{});
      used_ = 0;
      epoch_ = epoch;
    }
  }

  const Entry& get(const char* name, EventSink& sink) {
    for (;;) {
      const size_t mask = slots_.size() - 1;
      size_t i = home(name, mask);
      for (size_t p = 0; p < kProbes; ++p, i = (i + 1) & mask) {
        Entry& e = slots_[i];
        if (e.key == name) return e;
        if (e.key == nullptr) {
          if (2 * (used_ + 1) > slots_.size() && grow()) break;  // rehashed: probe again
          ++used_;
          return fill(e, name, sink);
        }
      }
      if (slots_.size() - 1 != mask) continue;  // grew while probing
      if (!grow()) return fill(slots_[home(name, mask)], name, sink);  // at the cap: recycle the home slot
    }
  }

 private:
  static constexpr size_t kProbes = 8;
  static constexpr size_t kInitialSlots = size_t{1} << 12;
  static constexpr size_t kMaxSlots = size_t{1} << 17;

  static size_t home(const char* name, size_t mask) {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(name) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  }

  bool grow() {
    if (slots_.size() >= kMaxSlots) return false;
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    used_ = 0;
    for (const Entry& e : old) {
      if (e.key == nullptr) continue;
      size_t i = home(e.key, mask);
      while (slots_[i].key != nullptr) i = (i + 1) & mask;
      slots_[i] = e;
      ++used_;
    }
    return true;
  }

  static const Entry& fill(Entry& slot, const char* name, EventSink& sink) {
    const std::string_view view(name);
    slot.key = name;
    slot.name = sink.intern(view);
    slot.collective = classify_collective(view);
    return slot;
  }

  std::vector<Entry> slots_ = std::vector<Entry>(kInitialSlots);
  size_t used_ = 0;
  uint32_t epoch_ = 0;
};

RecordConverter::RecordConverter(const CuptiApi& api, EventSink& sink) noexcept : api_(api), sink_(sink) {}

RecordConverter::~RecordConverter() = default;

std::unique_ptr<ParseScratch> RecordConverter::acquire_scratch() noexcept {
  try {
    {
      std::lock_guard lock(caches_mu_);
      if (!idle_scratch_.empty()) {
        std::unique_ptr<ParseScratch> scratch = std::move(idle_scratch_.back());
        idle_scratch_.pop_back();
        return scratch;
      }
    }
    return std::make_unique<ParseScratch>();
  } catch (...) {
    return nullptr;  // out of memory: the buffer is left unparsed (counted by the caller)
  }
}

void RecordConverter::release_scratch(std::unique_ptr<ParseScratch> scratch) noexcept {
  if (scratch == nullptr) return;
  try {
    std::lock_guard lock(caches_mu_);
    idle_scratch_.push_back(std::move(scratch));
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

// The clock map of one parse applied to a record's timestamps (0 stays 0: "no timestamp"). CUPTI's
// default is CLOCK_REALTIME ns: far below INT64_MAX until year 2262.
struct Timestamps {
  ClockMap map;
  int64_t operator()(uint64_t t) const noexcept {
    return map.mode == ClockMap::Mode::kConvert && t != 0 ? map.to_host(t) : static_cast<int64_t>(t);
  }
  bool dropped() const noexcept { return map.mode == ClockMap::Mode::kDrop; }
};

namespace {

// A handful of streams per buffer: a linear search beats a map.
void note_stream_start(ParseScratch& sc, const Event& ev) {
  for (auto& [stream, start] : sc.first_start) {
    if (stream == ev.stream) {
      start = std::min(start, ev.start_ns);
      return;
    }
  }
  if (sc.first_start.size() < 64) sc.first_start.emplace_back(ev.stream, ev.start_ns);
}


// A GPU record a forced flush handed back before it completed: no end, or an end before its start
// (pytorch/pytorch#195844: "a still-running kernel handed back with a zero end timestamp and never
// re-delivered"). Without a forced flush, start == end == 0 is timing lost for lack of device
// memory (cupti_activity.h:7576-7579), reported as such.
bool incomplete_gpu_record(const Event& ev, bool forced) noexcept {
  if (ev.start_ns == 0 && ev.end_ns == 0) return forced;
  return ev.end_ns == 0 || ev.end_ns < ev.start_ns;
}

}  // namespace

namespace {

// The GPU kinds (kernels, copies, memsets): false when the record is not submitted (incomplete).
bool convert_gpu_record(CUpti_Activity* record, ParseScratch& sc, EventSink& sink, const Timestamps& ts, bool forced,
                        Event& ev, BufferParseResult& result) noexcept {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* r = reinterpret_cast<const KernelRecord*>(record);
      ev.kind = EventKind::kKernel;
      ev.start_ns = ts(r->start);
      ev.end_ns = ts(r->end);
      ev.correlation = r->correlationId;
      ev.device = device_of(r->deviceId);
      ev.stream = r->streamId;
      if (incomplete_gpu_record(ev, forced)) {
        ++result.incomplete_records;
        return false;
      }
      if (ev.start_ns == 0 && ev.end_ns == 0) break;  // skipped below; no name needed
      if (r->name != nullptr) {
        const ParseScratch::Entry& n = sc.get(r->name, sink);
        ev.name = n.name;
        ev.collective = n.collective;
      }
      sc.gpu_ids.push_back(r->correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* r = reinterpret_cast<const MemcpyRecord*>(record);
      ev.kind = EventKind::kMemcpy;
      ev.start_ns = ts(r->start);
      ev.end_ns = ts(r->end);
      // The runtime correlation joins the copy to the cudaMemcpy* API record when the copy came
      // through the runtime (2205-2211); driver-level copies only have correlationId.
      ev.correlation = r->runtimeCorrelationId != 0 ? r->runtimeCorrelationId : r->correlationId;
      ev.bytes = r->bytes;
      ev.device = device_of(r->deviceId);
      ev.stream = r->streamId;
      ev.detail = static_cast<uint8_t>(copy_kind(r->copyKind));
      ev.src_memory = memory_kind(r->srcKind);
      ev.dst_memory = memory_kind(r->dstKind);
      if ((r->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0) ev.flags |= event_flags::kAsync;
      if (incomplete_gpu_record(ev, forced)) {
        ++result.incomplete_records;
        return false;
      }
      sc.gpu_ids.push_back(r->correlationId);
      if (r->runtimeCorrelationId != 0) sc.gpu_ids.push_back(r->runtimeCorrelationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* r = reinterpret_cast<const PeerCopyRecord*>(record);
      ev.kind = EventKind::kMemcpy;
      ev.start_ns = ts(r->start);
      ev.end_ns = ts(r->end);
      ev.correlation = r->correlationId;
      ev.bytes = r->bytes;
      ev.device = device_of(r->deviceId);
      ev.stream = r->streamId;
      ev.detail = static_cast<uint8_t>(CopyKind::kPtoP);
      ev.src_memory = memory_kind(r->srcKind);
      ev.dst_memory = memory_kind(r->dstKind);
      if ((r->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0) ev.flags |= event_flags::kAsync;
      if (incomplete_gpu_record(ev, forced)) {
        ++result.incomplete_records;
        return false;
      }
      sc.gpu_ids.push_back(r->correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* r = reinterpret_cast<const MemsetRecord*>(record);
      ev.kind = EventKind::kMemset;
      ev.start_ns = ts(r->start);
      ev.end_ns = ts(r->end);
      // The driver call's id (2455-2457): the memset joins its launching call through the driver
      // API record, an api_call event of its own (DRIVER kind is traced).
      ev.correlation = r->correlationId;
      ev.bytes = r->bytes;
      ev.device = device_of(r->deviceId);
      ev.stream = r->streamId;
      ev.dst_memory = memory_kind(r->memoryKind);
      if ((r->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0) ev.flags |= event_flags::kAsync;
      if (incomplete_gpu_record(ev, forced)) {
        ++result.incomplete_records;
        return false;
      }
      sc.gpu_ids.push_back(r->correlationId);
      break;
    }
    default:
      return false;
  }
  return true;
}

}  // namespace

bool RecordConverter::convert_host_record(CUpti_Activity* record, ParseScratch& sc, const Timestamps& ts, Event& ev,
                                          BufferParseResult& result) noexcept {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* r = reinterpret_cast<const SyncRecord*>(record);
      ev.kind = EventKind::kSync;
      ev.start_ns = ts(r->start);
      ev.end_ns = ts(r->end);
      ev.correlation = r->correlationId;
      ev.stream = valid_or_zero(r->streamId);
      ev.detail = static_cast<uint8_t>(sync_kind(r->type));
      if (ts.dropped() || (ev.start_ns == 0 && ev.end_ns == 0)) break;  // counted below
      switch (syncs_.sync_record(ev)) {
        case SyncPairing::Outcome::kSubmit: break;
        case SyncPairing::Outcome::kHeld: return false;
        case SyncPairing::Outcome::kDropped: ++result.query_syncs; return false;
      }
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* r = reinterpret_cast<const ApiRecord*>(record);
      ev.kind = EventKind::kApiCall;
      ev.start_ns = ts(r->start);
      ev.end_ns = ts(r->end);
      ev.correlation = r->correlationId;
      ev.thread = r->threadId;
      if (ev.start_ns == 0 && ev.end_ns == 0) break;
      const ApiName n = api_name(record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                             : CUPTI_CB_DOMAIN_DRIVER_API,
                                 r->cbid);
      ev.name = n.name;
      ev.detail = static_cast<uint8_t>(n.api_class);
      sc.api_ids.push_back(r->correlationId);
      if (SyncPairing::pairs_with(n.api_class) && !ts.dropped()) {
        syncs_.api_record(r->correlationId, r->threadId, n.api_class, sc.ready);
      }
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto* r = reinterpret_cast<const MemoryRecord*>(record);
      ev.kind = EventKind::kAllocation;
      ev.start_ns = ev.end_ns = ts(r->timestamp);
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
      ev.start_ns = ts(r->start);
      ev.end_ns = ts(r->end);
      ev.correlation = r->correlationId;
      if (ev.start_ns == 0 && ev.end_ns == 0) break;
      ev.name = overhead_name(static_cast<uint32_t>(r->overheadKind));
      if (ev.end_ns > ev.start_ns) result.cupti_overhead_ns += ev.end_ns - ev.start_ns;
      break;
    }
    default:
      // Kinds another client (Kineto, ...) enabled in the process-global activity API.
      ++result.ignored;
      return false;
  }
  return true;
}

bool RecordConverter::convert(CUpti_Activity* record, ParseScratch& sc, const ClockMap& clock, bool forced, Event& ev,
                              BufferParseResult& result) noexcept {
  const Timestamps ts{clock};
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
    case CUPTI_ACTIVITY_KIND_MEMSET:
      if (!convert_gpu_record(record, sc, sink_, ts, forced, ev, result)) return false;
      break;
    default:
      if (!convert_host_record(record, sc, ts, ev, result)) return false;
      break;
  }
  // CUPTI's clock changed and the conversion is not calibrated yet: set aside (the adapter
  // reports the interval incomplete), never mixed with host-clock events.
  if (ts.dropped()) {
    ++result.clock_dropped;
    return false;
  }
  // Every converted kind is timed: start == end == 0 means CUPTI lost the timing (device buffer
  // too small, pitfall 5). Skipped, and counted.
  if (ev.start_ns == 0 && ev.end_ns == 0) {
    ++result.zero_timestamp;
    return false;
  }
  return true;
}


BufferParseResult RecordConverter::parse(uint8_t* buffer, size_t valid_bytes, bool forced) noexcept {
  BufferParseResult result;
  if (buffer == nullptr || valid_bytes == 0) return result;
  std::unique_ptr<ParseScratch> scratch = acquire_scratch();
  if (scratch == nullptr) {
    result.incomplete = true;
    result.skipped_bytes = valid_bytes;
    sink_.report_loss(LossKind::kIncompleteRecord, 1);
    return result;
  }
  ParseScratch& sc = *scratch;
  sc.begin(names_epoch_.load(std::memory_order_acquire));
  Timestamps ts;
  if (clock_ != nullptr) ts.map = clock_->map();
  CUpti_Activity* record = nullptr;
  size_t next_offset = 0;  // where the record after the last one read starts (for the loss estimate)
  for (;;) {
    const CUptiResult status = api_.cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // end of the valid part
    if (status != CUPTI_SUCCESS) {
      // CUPTI_ERROR_INVALID_KIND: an incomplete or unknown record (7586). The iteration cannot step
      // over it (the record pointer stays on the previous one), so the rest of the buffer is lost:
      // its records are counted, estimated at the mean size of those read before.
      result.incomplete = true;
      result.skipped_bytes = valid_bytes > next_offset ? valid_bytes - next_offset : 0;
      break;
    }
    ++result.records;
    next_offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(record) - buffer) + record_size(*layout_, record->kind);
    Event ev;
    if (!convert(record, sc, ts.map, forced, ev, result)) continue;
    if (ev.is_gpu_record()) note_stream_start(sc, ev);
    sink_.submit(ev);
    ++result.events;
  }
  for (const auto& [stream, start] : sc.first_start) result.gpu_resumed_ns = std::max(result.gpu_resumed_ns, start);
  for (const Event& ev : sc.ready) {
    sink_.submit(ev);
    ++result.events;
  }
  if (tracker_ != nullptr && !ts.dropped()) tracker_->arrived(sc.api_ids, sc.gpu_ids);
  release_scratch(std::move(scratch));
  if (result.zero_timestamp != 0) sink_.report_loss(LossKind::kZeroTimestamp, result.zero_timestamp);
  // Set aside, not silently: the data_loss finding names them (the steps are incomplete anyway).
  if (result.clock_dropped != 0) sink_.report_loss(LossKind::kClockUncalibrated, result.clock_dropped);
  uint64_t incomplete = result.incomplete_records;
  if (result.incomplete) {
    const uint64_t mean = result.records > 0 ? std::max<uint64_t>(next_offset / result.records, 8) : 96;
    incomplete += std::max<uint64_t>(1, (result.skipped_bytes + mean - 1) / mean);
  }
  if (incomplete != 0) sink_.report_loss(LossKind::kIncompleteRecord, incomplete);
  return result;
}

void RecordConverter::tick() noexcept {
  try {
    std::vector<Event> released;
    syncs_.tick(released);
    for (const Event& ev : released) sink_.submit(ev);
  } catch (...) {
  }
}

}  // namespace stepwatch::live
