// CUPTI activity records -> `Event`s: the one place record structs are read.
//
// The record versions are pinned in one table (cupti_records.cpp) with a static_assert on the
// minimum CUPTI version; records are dispatched on `kind`, never on size, and iterated only with
// cuptiActivityGetNextRecord. Nothing converted keeps a pointer into the CUPTI buffer: names are
// interned while the buffer is ours, and OVERHEAD records' overheadData is freed here (CUPTI
// hands that memory to the client).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "cupti/cupti_api.h"
#include "core/event_sink.h"
#include "stepwatch/core/event.h"

namespace stepwatch::live {

// What one buffer contained; the adapter folds it into its stats.
struct BufferParseResult {
  uint64_t records = 0;         // records cuptiActivityGetNextRecord returned
  uint64_t events = 0;          // events submitted to the sink
  uint64_t ignored = 0;         // kinds we do not convert (another CUPTI client enabled them)
  uint64_t zero_timestamp = 0;  // timed records with start == end == 0 (skipped, reported)
  bool incomplete = false;      // CUPTI_ERROR_INVALID_KIND stopped the buffer (reported)
  int64_t cupti_overhead_ns = 0;
};

class KernelNameCache;  // cupti_records.cpp

// Thread-safe: several threads may parse different buffers at once (per-thread activity buffers
// complete on application threads, on CUPTI's worker and inside our FlushAll). The only shared
// state is the per-(domain, cbid) API-name cache, filled with relaxed atomics (idempotent).
class RecordConverter {
 public:
  // `api` needs cuptiActivityGetNextRecord and cuptiGetCallbackName; both must outlive this.
  RecordConverter(const CuptiApi& api, EventSink& sink) noexcept;
  ~RecordConverter();
  RecordConverter(const RecordConverter&) = delete;
  RecordConverter& operator=(const RecordConverter&) = delete;

  // Converts every complete record of `buffer[0, valid_bytes)` and submits the events; reports
  // kZeroTimestamp / kIncompleteRecord losses to the sink (once per buffer, with the count).
  BufferParseResult parse(uint8_t* buffer, size_t valid_bytes) noexcept;

 private:
  struct ApiName {
    NameId name = kNoName;
    ApiClass api_class = ApiClass::kOther;
  };
  ApiName api_name(CUpti_CallbackDomain domain, uint32_t cbid) noexcept;
  NameId overhead_name(uint32_t overhead_kind) noexcept;
  std::unique_ptr<KernelNameCache> acquire_cache() noexcept;
  void release_cache(std::unique_ptr<KernelNameCache> cache) noexcept;

  const CuptiApi& api_;
  EventSink& sink_;
  // Per CBID: name_id << 32 | api_class << 8 | 1 (cached); 0 = not looked up yet. The names are
  // interned in `sink_`'s table, so a converter is bound to one sink.
  std::array<std::atomic<uint64_t>, CUPTI_RUNTIME_TRACE_CBID_SIZE> runtime_names_{};
  std::array<std::atomic<uint64_t>, CUPTI_DRIVER_TRACE_CBID_SIZE> driver_names_{};
  std::array<std::atomic<NameId>, 10> overhead_names_{};  // by overhead slot (see overhead_name)
  // Kernel-name caches, one per concurrent parse, reused across buffers (allocated on first use
  // by each concurrent parser; the lock is taken twice per buffer, never per record).
  std::mutex caches_mu_;
  std::vector<std::unique_ptr<KernelNameCache>> idle_caches_;
};

}  // namespace stepwatch::live
