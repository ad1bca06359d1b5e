// bench_support/record_ingest.h over the adapter's real parser (built into stepwatch_bench only).
#include "bench_support/record_ingest.h"

#include <string>
#include <vector>

#include "cupti/cupti_api.h"
#include "cupti/cupti_record_builder.h"
#include "cupti/cupti_records.h"

namespace stepwatch::bench {
namespace {

using live::ActivityBufferBuilder;

// Distinct kernel names: a training step launches a few hundred distinct kernels, repeatedly;
// torch.compile and Triton make thousands. The strings live as long as the buffer, like CUPTI's.
std::vector<std::string> kernel_names(size_t distinct) {
  std::vector<std::string> v;
  v.push_back("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  for (size_t i = 1; i < distinct; ++i) {
    v.push_back("_ZN7cutlass6KernelINS_4gemm6kernel4GemmILi" + std::to_string(i) + "EEEEvNT_6ParamsE");
  }
  return v;
}

class BuiltBuffer final : public RecordBuffer {
 public:
  BuiltBuffer(size_t bytes, size_t distinct) : builder_(bytes), names_(kernel_names(std::max<size_t>(distinct, 1))) {}
  size_t records() const override { return records_; }
  size_t bytes() const override { return builder_.size(); }
  uint8_t* data() override { return builder_.data(); }

  void fill_kernels() {
    uint64_t t = 1'700'000'000'000'000'000ull;
    for (uint32_t i = 0;; ++i, t += 2'500) {
      if (builder_.kernel(names_[i % names_.size()].c_str(), t, t + 2'000, i, 0, 7 + i % 4) == nullptr) break;
      ++records_;
    }
  }
  void fill_launches() {
    uint64_t t = 1'700'000'000'000'000'000ull;
    for (uint32_t i = 0;; ++i, t += 3'000) {
      if (builder_.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, t, t + 400,
                       1234, i) == nullptr) {
        break;
      }
      ++records_;
      if (builder_.kernel(names_[i % names_.size()].c_str(), t + 500, t + 2'500, i) == nullptr) break;
      ++records_;
      if (i % 16 == 0) {
        if (builder_.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                            CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 1 << 20, t, t + 100, i, i) == nullptr) {
          break;
        }
        ++records_;
      }
    }
  }

 private:
  ActivityBufferBuilder builder_;
  std::vector<std::string> names_;
  size_t records_ = 0;
};

class Parser final : public RecordParser {
 public:
  Parser(const live::CuptiApi& api, EventSink& sink) : api_(api), converter_(api_, sink) {}
  uint64_t parse(RecordBuffer& buffer) override { return converter_.parse(buffer.data(), buffer.bytes()).records; }
  uint64_t iterate_only(RecordBuffer& buffer) override {
    uint64_t n = 0;
    CUpti_Activity* record = nullptr;
    while (api_.cuptiActivityGetNextRecord(buffer.data(), buffer.bytes(), &record) == CUPTI_SUCCESS) ++n;
    return n;
  }

 private:
  live::CuptiApi api_;
  live::RecordConverter converter_;
};

}  // namespace

std::unique_ptr<RecordBuffer> RecordBuffer::kernels(size_t bytes, size_t distinct_names) {
  auto b = std::make_unique<BuiltBuffer>(bytes, distinct_names);
  b->fill_kernels();
  return b;
}

std::unique_ptr<RecordBuffer> RecordBuffer::launches(size_t bytes, size_t distinct_names) {
  auto b = std::make_unique<BuiltBuffer>(bytes, distinct_names);
  b->fill_launches();
  return b;
}

std::unique_ptr<RecordParser> RecordParser::create(EventSink& sink, std::string& error) {
  live::CuptiApi api;
  // The real libcupti by its file: the parser benchmarked is the production one.
  if (!live::open_cupti_library(STEPWATCH_DEFAULT_CUPTI_DIR "/libcupti.so.13", api, error) &&
      !live::open_cupti_library("libcupti.so.13", api, error)) {
    return nullptr;
  }
  return std::make_unique<Parser>(api, sink);
}

}  // namespace stepwatch::bench
