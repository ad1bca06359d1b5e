#include "cupti/layout_check.h"

#include <cstddef>
#include <vector>

#include "cupti/cupti_record_builder.h"

namespace stepwatch::live {

std::string check_record_layouts(const CuptiApi& api, const RecordLayout& layout) noexcept {
  try {
    if (api.cuptiActivityGetNextRecord == nullptr) return "cuptiActivityGetNextRecord is missing";
    ActivityBufferBuilder b(4096, layout);
    struct Expected {
      size_t offset;
      std::string what;
    };
    std::vector<Expected> expected;
    auto at = [&](const char* kind, const RecordLayout::Kind* k) {
      expected.push_back({b.size(), k == nullptr ? std::string(kind)
                                                 : std::string(kind) + " (" + k->record + ", " +
                                                       std::to_string(k->bytes) + " bytes)"});
    };
    at("CONCURRENT_KERNEL", &layout.kernel);
    b.kernel("layout_check", 1, 2, 1);
    at("MEMCPY", &layout.memcpy);
    b.memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
             true, 8, 1, 2, 2, 2);
    at("MEMCPY2", &layout.peer_copy);
    b.peer_memcpy(8, 1, 2, 3, 0, 1);
    at("MEMSET", &layout.memset);
    b.memset(8, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, 1, 2, 4);
    at("SYNCHRONIZATION", &layout.sync);
    b.sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1, 2, 5);
    at("RUNTIME", &layout.api);
    b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 2, 1, 6);
    at("DRIVER", &layout.api);
    b.api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1, 2, 1, 7);
    at("MEMORY2", &layout.memory);
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 8, 1, 8);
    at("OVERHEAD", &layout.overhead);
    b.overhead(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 1, 2, 9);
    at("the record after OVERHEAD", nullptr);
    b.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 2, 1, 10);

    CUpti_Activity* record = nullptr;
    for (size_t i = 0; i < expected.size(); ++i) {
      const CUptiResult r = api.cuptiActivityGetNextRecord(b.data(), b.size(), &record);
      const size_t offset = r == CUPTI_SUCCESS ? static_cast<size_t>(reinterpret_cast<uint8_t*>(record) - b.data()) : 0;
      if (r != CUPTI_SUCCESS || offset != expected[i].offset) {
        const std::string after = i == 0 ? "the buffer's start" : expected[i - 1].what;
        return "its record layouts differ from " + std::string(layout.name) + "'s: after " + after +
               (r != CUPTI_SUCCESS ? std::string(" it returned ") + cupti_result_text(api, r)
                                   : " the next record is at byte " + std::to_string(offset) + ", not " +
                                         std::to_string(expected[i].offset));
      }
    }
    return {};
  } catch (...) {
    return "the record-layout check ran out of memory";
  }
}

}  // namespace stepwatch::live
