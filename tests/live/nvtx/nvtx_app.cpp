// An application that uses NVTX the way training jobs do, run by nvtx_injection_test.cpp with
// NVTX_INJECTION64_PATH set. It only includes the public nvtx3 headers. It prints the thread
// ids the test needs to stdout ("<role> <tid>").
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <thread>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <nvtx3/nvtx3.hpp>

extern "C" void nvtx_app_lib_range(const char* name);

namespace {

unsigned os_thread_id() { return static_cast<unsigned>(::syscall(SYS_gettid)); }

struct nccl_domain {
  static constexpr const char* name{"NCCL"};
};

// NCCL's payload for ncclAllReduce (src/include/nvtx_payload_schemas.h).
struct AllReduceParams {
  uint64_t comm;
  size_t bytes;
  int op;
};

// What NCCL's NVTX3_FUNC_WITH_PARAMS does: a registered function name in domain "NCCL", and a
// static payload schema whose entries carry the communicator and the message size.
void nccl_all_reduce_like(size_t bytes) {
  static const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(AllReduceParams, comm),
       nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(AllReduceParams, bytes),
       nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Reduction operation", nullptr, 0, offsetof(AllReduceParams, op), nullptr,
       nullptr},
  };
  constexpr uint64_t kSchemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
  static const uint64_t registered_schema = [] {
    nvtxPayloadSchemaAttr_t attributes{};
    attributes.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                           NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    attributes.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    attributes.entries = entries;
    attributes.numEntries = sizeof(entries) / sizeof(entries[0]);
    attributes.payloadStaticSize = sizeof(AllReduceParams);
    attributes.schemaId = kSchemaId;
    return nvtxPayloadSchemaRegister(nvtx3::domain::get<nccl_domain>(), &attributes);
  }();
  std::printf("schema %llu\n", static_cast<unsigned long long>(registered_schema));

  static const nvtx3::registered_string_in<nccl_domain> function_name{"ncclAllReduce"};
  AllReduceParams params{0xC0FFEE, bytes, 0};
  nvtxPayloadData_t payload[] = {{kSchemaId, sizeof(params), &params}};
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = function_name.get_handle();
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(attributes, payload)
  nvtxDomainHandle_t domain = nvtx3::domain::get<nccl_domain>();
  nvtxDomainRangePushEx(domain, &attributes);
  nvtxDomainRangePop(domain);
}

}  // namespace

int main() {
  std::printf("main %u\n", os_thread_id());

  // Nesting on one thread.
  nvtxRangePushA("outer");
  nvtxRangePushA("inner");
  nvtxRangePop();
  nvtxRangePop();
  nvtxMarkA("a mark");

  // NCCL-style domain ranges: the C API with a registered string and payload, then nvtx3.hpp.
  nccl_all_reduce_like(size_t{1} << 20);
  {
    static const nvtx3::registered_string_in<nccl_domain> all_gather{"ncclAllGather"};
    nvtx3::scoped_range_in<nccl_domain> range{all_gather};
  }

  // A start/end range that ends on another thread.
  const nvtxRangeId_t id = nvtxRangeStartA("cross_thread");
  std::thread ender([id] {
    std::printf("ender %u\n", os_thread_id());
    nvtxRangeEnd(id);
  });
  ender.join();

  // Wide strings arrive as UTF-8.
  nvtxRangePushW(L"wide_\u00e9");
  nvtxRangePop();

  // A range from another shared object (its own NVTX instance).
  nvtx_app_lib_range("lib_range");

  // A step range on a worker thread, through the C++ API.
  std::thread worker([] {
    std::printf("worker %u\n", os_thread_id());
    nvtx3::scoped_range range{"step 7"};
  });
  worker.join();

  // One pop too many: reported as an unpaired range, never a crash.
  nvtxRangePop();
  std::fflush(stdout);
  return 0;
}
