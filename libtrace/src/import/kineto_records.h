// One Kineto record, from simdjson's On-Demand view of its JSON object to an Event (or a count of
// why it was left out). Private to libtrace/src/import.
//
// Handles every format in the corpus: 2021-era categories (`Runtime`, `Kernel`, `Memcpy`, ...,
// matched case-insensitively), `cuda_runtime`/`cuda_driver`/`cuda_sync` (newer traces), NVIDIA
// and AMD (`hip*`) names; flows, metadata and Python frames are not records of ours.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "import/kineto_scalars.h"
#include "stepwatch/core/trace.h"

// simdjson reports errors by code; every reader passes them up to one place that knows the source
// name and the offset, and turns them into ImportError.
#define SW_JSON_TRY(expr)                                                                  \
  do {                                                                                     \
    if (const simdjson::error_code sw_err_ = (expr); sw_err_ != simdjson::SUCCESS) return sw_err_; \
  } while (0)

namespace stepwatch::import_detail {

class EventCollector;

// What a record becomes. Kineto's `cat`, matched case-insensitively with the 2021-era names.
enum class Category : uint8_t {
  kUnknown,  // no `cat` seen yet
  kIgnored,  // flows, "Trace", anything new
  kRange,
  kPythonFrame,  // python_function (with_stack=True): the sites of blocking calls (core/call_sites.h)
  kGpuRange,
  kKernel,
  kMemcpy,
  kMemset,
  kApiCall,
  kSync,
  kOverhead,
};


struct KinetoArgs {
  Scalar device;
  Scalar stream;
  Scalar correlation;
  Scalar bytes;
  Scalar value;                // NVML samples in stepwatch's dumps (gpu_samples.h)
  std::string_view copy_kind;  // AMD copies: "HtoD", "DtoD"
  std::string_view sync_kind;  // cuda_sync: "Stream Sync", "Event Sync", ...
  std::string_view collective_name;  // NCCL/RCCL kernels: "Collective name": "allreduce"
  Scalar in_nelems;                  // record_param_comms: "In msg nelems"
  std::string_view dtype;            // record_param_comms: "dtype": "Float"
};


// One traceEvents element as read: views into the chunk's text and its parser's string buffer.
struct KinetoRecord {
  std::string_view ph;
  std::string_view name;
  Category category = Category::kUnknown;
  Scalar ts;
  Scalar dur;
  Scalar pid;
  Scalar tid;
  KinetoArgs args;
};

// What reading events needs besides the JSON: where they go, and what is decided once per distinct
// name (its interned id for recently seen names, its API class, its collective type).
struct EventContext {
  EventContext(Trace& t, EventCollector& e) : trace(t), events(e), overflow_name(t.names.overflow_id()) {}
  Trace& trace;  // names are interned in trace.names, records left out counted in trace.skipped
  EventCollector& events;
  NameId overflow_name;  // what the name table answers past its cap: never cached

  static constexpr NameId kNoCachedName = static_cast<NameId>(-1);
  static constexpr uint8_t kUnclassified = 0xFF;
  struct RecentName {
    std::string_view text;  // a view into trace.names (its entries never move)
    NameId id = kNoCachedName;
  };
  std::array<RecentName, 1024> recent_names{};
  std::vector<uint8_t> api_class_by_name;  // by NameId, kUnclassified until first seen
  std::vector<uint8_t> collective_by_name;
};

// Reads a traceEvents element (not an object: a record of no category) into `record`.
simdjson::error_code read_event(simdjson::ondemand::value& element, KinetoRecord& record);
// A complete event of a category we import becomes an Event in context.events; one we cannot use
// is counted in trace.skipped by reason. In file order: names are interned as they come.
void add_record(EventContext& context, const KinetoRecord& record);

// Values of an unexpected type count as absent: wrong types skip a field, never the file.
simdjson::error_code read_string(simdjson::ondemand::value& v, std::string_view& out);
simdjson::error_code read_scalar(simdjson::ondemand::value& v, Scalar& out);

}  // namespace stepwatch::import_detail
