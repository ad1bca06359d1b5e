// CUPTI activity records -> `Event`s: the one place record structs are read.
//
// Records of every CUPTI version in the layout table (record_layouts.h) are read through the CUDA
// 13.0 structs, whose fields in use sit at the same offsets in all of them; records are dispatched
// on `kind`, never on size, and iterated only with cuptiActivityGetNextRecord. Nothing converted keeps a pointer into the
// CUPTI buffer: names are interned while the buffer is ours, and OVERHEAD records' overheadData is
// freed here (CUPTI hands that memory to the client).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/event_sink.h"
#include "cupti/clock_check.h"
#include "cupti/cupti_api.h"
#include "cupti/record_layouts.h"
#include "cupti/sync_pairing.h"
#include "stepwatch/core/event.h"

namespace stepwatch::live {

class LaunchTracker;  // launch_tracker.h

// What one buffer contained; the adapter folds it into its stats.
struct BufferParseResult {
  uint64_t records = 0;         // records cuptiActivityGetNextRecord returned
  uint64_t events = 0;          // events submitted to the sink
  uint64_t ignored = 0;         // kinds we do not convert (another CUPTI client enabled them)
  uint64_t zero_timestamp = 0;  // timed records with start == end == 0 (skipped, reported)
  // Records a forced flush handed back before they completed (end 0, or before start): skipped
  // and reported; CUPTI never delivers them again.
  uint64_t incomplete_records = 0;
  bool incomplete = false;      // CUPTI_ERROR_INVALID_KIND stopped the buffer (reported)
  uint64_t skipped_bytes = 0;   // the part after it, which cannot be iterated
  uint64_t clock_dropped = 0;   // records set aside while CUPTI's clock was being calibrated
  uint64_t query_syncs = 0;     // sync records of polling queries (not waits): dropped
  int64_t cupti_overhead_ns = 0;
  // Per stream the earliest GPU record's start, the latest of those over streams (INT64_MIN when
  // no GPU record): after tracing restarts, work queued before cannot run past this point.
  int64_t gpu_resumed_ns = INT64_MIN;
};

class ParseScratch;  // cupti_records.cpp: a parse's kernel-name cache and scratch vectors
struct Timestamps;   // cupti_records.cpp: the clock map applied to one record

// Thread-safe: several threads may parse different buffers at once (per-thread activity buffers
// complete on application threads, on CUPTI's worker and inside our FlushAll). Shared state: the
// per-(domain, cbid) API-name cache (relaxed atomics, idempotent), the sync pairing (its mutex),
// and a pool of kernel-name caches, one per concurrent parse.
class RecordConverter {
 public:
  // `api` needs cuptiActivityGetNextRecord and cuptiGetCallbackName; both must outlive this.
  RecordConverter(const CuptiApi& api, EventSink& sink) noexcept;
  ~RecordConverter();
  RecordConverter(const RecordConverter&) = delete;
  RecordConverter& operator=(const RecordConverter&) = delete;

  // Optional collaborators (set before the first parse, never changed while parsing): the
  // correlation ids of each buffer go to `tracker` (the completeness watermark); timestamps go
  // through `clock`'s map (CUPTI's clock changed by another client).
  void set_tracker(LaunchTracker* tracker) noexcept { tracker_ = tracker; }
  void set_clock(const ClockCheck* clock) noexcept { clock_ = clock; }
  // The loaded library's record sizes (the 13.0 ones until set).
  void set_layout(const RecordLayout& layout) noexcept { layout_ = &layout; }

  // Converts every complete record of `buffer[0, valid_bytes)` and submits the events; reports
  // kZeroTimestamp / kIncompleteRecord losses to the sink (once per buffer, with the count).
  // `forced`: the buffer came from a forced flush, where a GPU record with no timestamps is one
  // that had not started (incomplete), not one whose timing was lost.
  BufferParseResult parse(uint8_t* buffer, size_t valid_bytes, bool forced = false) noexcept;
  // Once per flush: sync records held for their API record past their time are submitted.
  void tick() noexcept;
  // The start of the oldest record held back (INT64_MAX when none): the watermark waits for it.
  int64_t oldest_held_ns() const noexcept { return syncs_.oldest_held_ns(); }
  // CUPTI may free kernel names with their module (the records say the name is shared, 3069-3072,
  // not for how long): the resource callbacks for module unload / context destruction call this.
  void invalidate_names() noexcept { names_epoch_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  struct ApiName {
    NameId name = kNoName;
    ApiClass api_class = ApiClass::kOther;
  };
  ApiName api_name(CUpti_CallbackDomain domain, uint32_t cbid) noexcept;
  NameId overhead_name(uint32_t overhead_kind) noexcept;
  std::unique_ptr<ParseScratch> acquire_scratch() noexcept;
  void release_scratch(std::unique_ptr<ParseScratch> scratch) noexcept;
  // One record into `ev`; false when it is not submitted (ignored, held, dropped, incomplete).
  bool convert(CUpti_Activity* record, ParseScratch& scratch, const ClockMap& clock, bool forced, Event& ev,
               BufferParseResult& result) noexcept;
  // Sync, API, allocation and overhead records (the GPU kinds are a free function).
  bool convert_host_record(CUpti_Activity* record, ParseScratch& scratch, const Timestamps& ts, Event& ev,
                           BufferParseResult& result) noexcept;

  const CuptiApi& api_;
  EventSink& sink_;
  LaunchTracker* tracker_ = nullptr;
  const ClockCheck* clock_ = nullptr;
  const RecordLayout* layout_ = &compiled_record_layout();
  // Per CBID: name_id << 32 | api_class << 8 | 1 (cached); 0 = not looked up yet. The names are
  // interned in `sink_`'s table, so a converter is bound to one sink.
  std::array<std::atomic<uint64_t>, CUPTI_RUNTIME_TRACE_CBID_SIZE> runtime_names_{};
  std::array<std::atomic<uint64_t>, CUPTI_DRIVER_TRACE_CBID_SIZE> driver_names_{};
  std::array<std::atomic<NameId>, 10> overhead_names_{};  // by overhead slot (see overhead_name)
  SyncPairing syncs_;
  std::atomic<uint32_t> names_epoch_{1};
  // Kernel-name caches, one per concurrent parse, reused across buffers (allocated on first use
  // by each concurrent parser; the lock is taken twice per buffer, never per record).
  std::mutex caches_mu_;
  std::vector<std::unique_ptr<ParseScratch>> idle_scratch_;
};

}  // namespace stepwatch::live
