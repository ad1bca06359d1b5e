// The NVTX entry points: `InitializeInjectionNvtx2` (called once per shared object that uses
// NVTX, from whichever thread makes that object's first NVTX call, before or after cuInit) and
// `InitializeInjectionNvtxExtension` (once per object and extension module, e.g. NCCL's payload
// schemas). Both only write function pointers into the calling NVTX instance's tables: no CUDA,
// no CUPTI, no allocation beyond registering a fork handler.
//
// NVTX reads NVTX_INJECTION64_PATH, dlopens it and calls us (nvtxDetail/nvtxInit.h). Returning 0
// makes that object's NVTX a permanent no-op, which is what we want when stepwatch is disabled.
#define NVTX_NO_IMPL
#include "nvtx/nvtx_injection.h"

#include "nvtx/nvtx_hooks.h"
#include "nvtx/nvtx_ranges.h"

namespace stepwatch::live::nvtx {
namespace {

template <typename Function>
NvtxFunctionPointer as_slot_value(Function* function) noexcept {
  return reinterpret_cast<NvtxFunctionPointer>(function);
}

// `table[id]` points at the instance's function-pointer variable for callback `id`; a missing
// or short table (an older NVTX) leaves that call a no-op instead of failing the whole module.
void install(NvtxFunctionTable table, unsigned int size, unsigned int id, NvtxFunctionPointer hook) noexcept {
  if (table != nullptr && id < size && table[id] != nullptr) *table[id] = hook;
}

bool hook_core(const NvtxExportTableCallbacks& callbacks) noexcept {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks.GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 || table == nullptr) return false;
  install(table, size, NVTX_CBID_CORE_MarkEx, as_slot_value(&mark_ex));
  install(table, size, NVTX_CBID_CORE_MarkA, as_slot_value(&mark_a));
  install(table, size, NVTX_CBID_CORE_MarkW, as_slot_value(&mark_w));
  install(table, size, NVTX_CBID_CORE_RangeStartEx, as_slot_value(&range_start_ex));
  install(table, size, NVTX_CBID_CORE_RangeStartA, as_slot_value(&range_start_a));
  install(table, size, NVTX_CBID_CORE_RangeStartW, as_slot_value(&range_start_w));
  install(table, size, NVTX_CBID_CORE_RangeEnd, as_slot_value(&range_end));
  install(table, size, NVTX_CBID_CORE_RangePushEx, as_slot_value(&range_push_ex));
  install(table, size, NVTX_CBID_CORE_RangePushA, as_slot_value(&range_push_a));
  install(table, size, NVTX_CBID_CORE_RangePushW, as_slot_value(&range_push_w));
  install(table, size, NVTX_CBID_CORE_RangePop, as_slot_value(&range_pop));
  // NameCategory/NameOsThread stay unhooked (no-ops): nothing downstream uses them.
  return true;
}

void hook_core2(const NvtxExportTableCallbacks& callbacks) noexcept {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks.GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0 || table == nullptr) return;
  install(table, size, NVTX_CBID_CORE2_DomainMarkEx, as_slot_value(&domain_mark_ex));
  install(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, as_slot_value(&domain_range_start_ex));
  install(table, size, NVTX_CBID_CORE2_DomainRangeEnd, as_slot_value(&domain_range_end));
  install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, as_slot_value(&domain_range_push_ex));
  install(table, size, NVTX_CBID_CORE2_DomainRangePop, as_slot_value(&domain_range_pop));
  install(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, as_slot_value(&domain_register_string_a));
  install(table, size, NVTX_CBID_CORE2_DomainRegisterStringW, as_slot_value(&domain_register_string_w));
  install(table, size, NVTX_CBID_CORE2_DomainCreateA, as_slot_value(&domain_create_a));
  install(table, size, NVTX_CBID_CORE2_DomainCreateW, as_slot_value(&domain_create_w));
  install(table, size, NVTX_CBID_CORE2_DomainDestroy, as_slot_value(&domain_destroy));
  // Resources, domain categories and nvtxInitialize stay no-ops. CUDA/CUDART/SYNC naming calls
  // (nvtxNameCudaStream…) are not hooked either: ranges are all stepwatch reads.
}

}  // namespace
}  // namespace stepwatch::live::nvtx

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  namespace nvtx = stepwatch::live::nvtx;
  try {
    stepwatch::live::nvtx_injection_started();  // NVTX_INJECTION64_PATH named us
    if (get_export_table == nullptr || nvtx::current_sink() == nullptr) return 0;
    const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
        callbacks->GetModuleFunctionTable == nullptr) {
      return 0;
    }
    nvtx::install_fork_handler_once();
    if (!nvtx::hook_core(*callbacks)) return 0;
    nvtx::hook_core2(*callbacks);
    // NVTX asks tools to say which version they were built against (ignored today, but it is
    // how a future NVTX could refuse a known-bad tool instead of crashing).
    const auto* version =
        static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
    if (version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
        version->SetInjectionNvtxVersion != nullptr) {
      version->SetInjectionNvtxVersion(NVTX_VERSION);
    }
    nvtx::count_module_initialized();
    return 1;
  } catch (...) {
    return 0;
  }
}

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(
    nvtxExtModuleInfo_t* module_info) {
  namespace nvtx = stepwatch::live::nvtx;
  try {
    if (module_info == nullptr || nvtx::current_sink() == nullptr) return 0;
    // Other extensions (memory, counters, …) get no handlers: their calls become no-ops.
    if (module_info->moduleId != NVTX_EXT_PAYLOAD_MODULEID) return 1;
    if (module_info->segmentsCount < 1 || module_info->segments == nullptr) return 1;
    nvtxExtModuleSegment_t& segment = module_info->segments[0];
    if (segment.functionSlots == nullptr || segment.slotCount <= NVTX3EXT_CBID_nvtxPayloadSchemaRegister) return 1;
    // Only schema registration: NCCL's payloads then arrive attached to nvtxDomainRangePushEx
    // (NVTX_PAYLOAD_TYPE_EXT), which the CORE2 hook parses. nvtxDomainIsEnabled stays "enabled".
    segment.functionSlots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister] =
        reinterpret_cast<intptr_t>(&nvtx::payload_schema_register);
    return 1;
  } catch (...) {
    return 0;
  }
}
