// Cost of NVTX ranges with stepwatch's hooks installed: the hook functions called directly, and
// the real NVTX3 inline API after NVTX has injected our table (static injection, below). The
// sink's submit is a cheap bounded per-thread buffer, so the figures are the hooks' own cost.
// Target: <= 100 ns per push+pop of a repeated literal.
//
// Needs stepwatch_live (for libtrace/src/nvtx/ and the NVTX3 headers); compiles to nothing
// when bench/CMakeLists.txt does not link it.
#if __has_include("nvtx/nvtx_hooks.h") && __has_include(<nvtx3/nvToolsExt.h>)

#include <time.h>

#include <array>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include <benchmark/benchmark.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "nvtx/nvtx_hooks.h"
#include "nvtx/nvtx_injection.h"

namespace stepwatch::live {

// Weak: the live session's definition wins if linked; the benchmark routes events to its own
// sink with nvtx_set_sink_for_testing either way.
__attribute__((weak)) EventSink* nvtx_event_sink() noexcept { return nullptr; }

namespace {

class BufferSink final : public EventSink {
 public:
  void submit(const Event& event) noexcept override {
    thread_local std::array<Event, 1024> buffer;
    thread_local size_t next = 0;
    buffer[next++ & (buffer.size() - 1)] = event;
    benchmark::DoNotOptimize(buffer.data());
  }
  NameId intern(std::string_view name) noexcept override {
    std::lock_guard lock(mutex_);
    return ids_.try_emplace(std::string(name), static_cast<NameId>(ids_.size() + 1)).first->second;
  }
  void report_loss(LossKind, uint64_t) noexcept override {}
  void advance_watermark(int64_t) noexcept override {}
  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, NameId> ids_;
};

BufferSink& sink() {
  static BufferSink* const instance = new BufferSink();
  return *instance;
}

// Static injection (nvtxDetail/nvtxInit.h, load sequence v2): with NVTX_INJECTION64_PATH unset,
// NVTX calls the function this weak pointer holds on the first NVTX call of this binary.
void inject_once() {
  static const bool injected = [] {
    ::unsetenv("NVTX_INJECTION64_PATH");
    nvtx_set_sink_for_testing(&sink());
    InitializeInjectionNvtx2_fnptr = &InitializeInjectionNvtx2;
    nvtxInitialize(nullptr);
    return nvtx_stats().modules > 0;
  }();
  if (!injected) std::abort();
}

void BM_ClockRealtime(benchmark::State& state) {
  for (auto _ : state) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    benchmark::DoNotOptimize(now);
  }
}
BENCHMARK(BM_ClockRealtime);

void BM_HookPushPop(benchmark::State& state) {
  inject_once();
  for (auto _ : state) {
    nvtx::range_push_a("forward");
    nvtx::range_pop();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HookPushPop);

void BM_NvtxPushPop(benchmark::State& state) {
  inject_once();
  for (auto _ : state) {
    nvtxRangePushA("forward");
    nvtxRangePop();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NvtxPushPop)->Threads(1)->Threads(2)->Threads(4);

#if defined(STEPWATCH_HAVE_NVTX_PLAIN)
}  // namespace
}  // namespace stepwatch::live
extern "C" void stepwatch_bench_nvtx_plain_push_pop(const char* name);
namespace stepwatch::live {
namespace {

// The baseline: the same push+pop with no tool injected (bench/support/nvtx_plain.cpp, a shared
// object of its own, so its NVTX state is not this binary's). BM_NvtxPushPop minus this is what
// stepwatch's hooks add to an NVTX range.
void BM_NvtxPlainPushPop(benchmark::State& state) {
  inject_once();  // ours is injected; the plain library's NVTX is not
  for (auto _ : state) stepwatch_bench_nvtx_plain_push_pop("forward");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NvtxPlainPushPop);
#endif

void BM_NvtxNestedPushPop(benchmark::State& state) {
  inject_once();
  for (auto _ : state) {
    nvtxRangePushA("step");
    nvtxRangePushA("forward");
    nvtxRangePop();
    nvtxRangePushA("backward");
    nvtxRangePop();
    nvtxRangePop();
  }
  state.SetItemsProcessed(state.iterations() * 3);
}
BENCHMARK(BM_NvtxNestedPushPop);

// NCCL's shape: domain "NCCL", registered function name, extended payload with the message size.
void BM_NvtxNcclDomainPushPop(benchmark::State& state) {
  inject_once();
  struct Params {
    uint64_t comm;
    size_t bytes;
    int op;
  };
  static const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(Params, comm), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(Params, bytes), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Reduction operation", nullptr, 0, offsetof(Params, op), nullptr, nullptr},
  };
  constexpr uint64_t kSchemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
  nvtxDomainHandle_t domain = nvtxDomainCreateA("NCCL");
  nvtxPayloadSchemaAttr_t schema{};
  schema.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
  schema.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
  schema.entries = entries;
  schema.numEntries = 3;
  schema.payloadStaticSize = sizeof(Params);
  schema.schemaId = kSchemaId;
  nvtxPayloadSchemaRegister(domain, &schema);
  nvtxStringHandle_t name = nvtxDomainRegisterStringA(domain, "ncclAllReduce");
  Params params{1, 1 << 20, 0};
  nvtxPayloadData_t payload[] = {{kSchemaId, sizeof(params), &params}};
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = name;
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(attributes, payload)
  for (auto _ : state) {
    nvtxDomainRangePushEx(domain, &attributes);
    nvtxDomainRangePop(domain);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NvtxNcclDomainPushPop);

void BM_NvtxStartEnd(benchmark::State& state) {
  inject_once();
  for (auto _ : state) nvtxRangeEnd(nvtxRangeStartA("async"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NvtxStartEnd);

}  // namespace
}  // namespace stepwatch::live

#endif
