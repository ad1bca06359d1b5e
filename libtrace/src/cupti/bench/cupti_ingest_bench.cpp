// CUPTI ingest throughput: activity records per second through the real parsing path — the real
// libcupti's cuptiActivityGetNextRecord, the adapter's conversion (RecordConverter), and a sink that
// appends to a pre-reserved vector. Target: >= 10M kernel records/s on one core.
//
// Needs the live library (CUPTI headers + stepwatch_live); compiled to nothing otherwise, so that
// stepwatch_bench still builds where CUDA is absent. CMake: link stepwatch_bench with
// stepwatch_live when that target exists.
#if __has_include("cupti/cupti_records.h") && __has_include(<cupti.h>)

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "cupti/cupti_api.h"
#include "cupti/cupti_records.h"
#include "live/fake_cupti/cupti_record_builder.h"
#include "stepwatch/core/name_table.h"

namespace {

using stepwatch::Event;
using stepwatch::NameId;
using stepwatch::live::BufferParseResult;
using stepwatch::live::CuptiApi;
using stepwatch::EventSink;
using stepwatch::LossKind;
using stepwatch::live::RecordConverter;
using stepwatch::test_support::ActivityBufferBuilder;

// What the live session's queue does at best: an append into reserved memory.
class VectorSink : public EventSink {
 public:
  explicit VectorSink(size_t capacity) { events_.reserve(capacity); }
  void submit(const Event& event) noexcept override { events_.push_back(event); }
  NameId intern(std::string_view name) noexcept override { return names_.intern(name); }
  void report_loss(LossKind, uint64_t) noexcept override {}
  void advance_watermark(int64_t) noexcept override {}
  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}
  void clear() { events_.clear(); }
  size_t size() const { return events_.size(); }

 private:
  std::vector<Event> events_;
  stepwatch::NameTable names_;
};

const CuptiApi* real_cupti() {
  static const CuptiApi* api = [] {
    auto* a = new CuptiApi();
    std::string error;
    return stepwatch::live::load_cupti_api("", *a, error) ? a : nullptr;
  }();
  return api;
}

// Distinct kernel names: a training step launches a few hundred distinct kernels, repeatedly.
std::vector<std::string> kernel_names(size_t distinct) {
  std::vector<std::string> v;
  v.push_back("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  for (size_t i = 1; i < distinct; ++i) {
    v.push_back("_ZN7cutlass6KernelINS_4gemm6kernel4GemmILi" + std::to_string(i) + "EEEEvNT_6ParamsE");
  }
  return v;
}

constexpr size_t kBufferBytes = 4u << 20;  // the adapter's default activity buffer

void fill_kernels(ActivityBufferBuilder& b, const std::vector<std::string>& names) {
  uint64_t t = 1'700'000'000'000'000'000ull;
  for (uint32_t i = 0;; ++i) {
    if (b.kernel(names[i % names.size()].c_str(), t, t + 2'000, i, 0, 7 + i % 4) == nullptr) break;
    t += 2'500;
  }
}

void BM_CuptiIngestKernels(benchmark::State& state) {
  const CuptiApi* api = real_cupti();
  if (api == nullptr) {
    state.SkipWithError("libcupti.so.13 not found");
    return;
  }
  const std::vector<std::string> names = kernel_names(static_cast<size_t>(state.range(0)));
  ActivityBufferBuilder buffer(kBufferBytes);
  fill_kernels(buffer, names);
  VectorSink sink(kBufferBytes / sizeof(CUpti_ActivityKernel10) + 16);
  RecordConverter converter(*api, sink);
  uint64_t records = 0;
  for (auto _ : state) {
    sink.clear();
    const BufferParseResult r = converter.parse(buffer.data(), buffer.size());
    records += r.records;
    benchmark::DoNotOptimize(sink.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
  state.counters["records_per_buffer"] = static_cast<double>(records) / static_cast<double>(state.iterations());
}
// Arg: distinct kernel names in the buffer (the default case is a few hundred).
BENCHMARK(BM_CuptiIngestKernels)->Arg(16)->Arg(200)->Arg(4000)->Unit(benchmark::kMicrosecond);

// A launch-bound mix: per launch one runtime API record and one kernel, plus a copy now and then.
void BM_CuptiIngestMixed(benchmark::State& state) {
  const CuptiApi* api = real_cupti();
  if (api == nullptr) {
    state.SkipWithError("libcupti.so.13 not found");
    return;
  }
  ActivityBufferBuilder b(kBufferBytes);
  const std::vector<std::string> names = kernel_names(200);
  uint64_t t = 1'700'000'000'000'000'000ull;
  for (uint32_t i = 0;; ++i, t += 3'000) {
    if (b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, t, t + 400, 1234, i) ==
            nullptr ||
        b.kernel(names[i % names.size()].c_str(), t + 500, t + 2'500, i) == nullptr) {
      break;
    }
    if (i % 16 == 0 && b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                                CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 1 << 20, t, t + 100, i, i) == nullptr) {
      break;
    }
  }
  VectorSink sink(kBufferBytes / sizeof(CUpti_ActivityAPI) + 16);
  RecordConverter converter(*api, sink);
  uint64_t records = 0;
  for (auto _ : state) {
    sink.clear();
    records += converter.parse(b.data(), b.size()).records;
    benchmark::DoNotOptimize(sink.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_CuptiIngestMixed)->Unit(benchmark::kMicrosecond);

// Baseline: cuptiActivityGetNextRecord alone (CUPTI's share of the cost).
void BM_CuptiGetNextRecordOnly(benchmark::State& state) {
  const CuptiApi* api = real_cupti();
  if (api == nullptr) {
    state.SkipWithError("libcupti.so.13 not found");
    return;
  }
  ActivityBufferBuilder buffer(kBufferBytes);
  const std::vector<std::string> names = kernel_names(200);
  fill_kernels(buffer, names);
  uint64_t records = 0;
  for (auto _ : state) {
    CUpti_Activity* record = nullptr;
    while (api->cuptiActivityGetNextRecord(buffer.data(), buffer.size(), &record) == CUPTI_SUCCESS) {
      benchmark::DoNotOptimize(record);
      ++records;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_CuptiGetNextRecordOnly)->Unit(benchmark::kMicrosecond);

}  // namespace

#endif  // live library available
