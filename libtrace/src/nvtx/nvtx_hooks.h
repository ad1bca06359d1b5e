// The functions `InitializeInjectionNvtx2` installs into each NVTX instance's callback slots.
// Their signatures are exactly NVTX's `*_impl_fntype`s. Tests and the benchmark call them
// directly; everything else reaches them through NVTX.
//
// Contract shared by all hooks: noexcept, never throw, never block on anything but a tiny
// spinlock, never allocate for a message (pointer and content) seen before on the calling
// thread. Pushes/pops are per thread and per domain; starts/ends are process-wide by id.
#pragma once

#include <cstdint>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

namespace stepwatch::live::nvtx {

// Default domain (CORE module).
int range_push_a(const char* message) noexcept;
int range_push_w(const wchar_t* message) noexcept;
int range_push_ex(const nvtxEventAttributes_t* attributes) noexcept;
int range_pop() noexcept;
nvtxRangeId_t range_start_a(const char* message) noexcept;
nvtxRangeId_t range_start_w(const wchar_t* message) noexcept;
nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t* attributes) noexcept;
void range_end(nvtxRangeId_t id) noexcept;
void mark_a(const char* message) noexcept;
void mark_w(const wchar_t* message) noexcept;
void mark_ex(const nvtxEventAttributes_t* attributes) noexcept;

// Domains (CORE2 module). A null domain is the default domain.
int domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) noexcept;
int domain_range_pop(nvtxDomainHandle_t domain) noexcept;
nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t domain,
                                    const nvtxEventAttributes_t* attributes) noexcept;
void domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id) noexcept;
void domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) noexcept;
nvtxDomainHandle_t domain_create_a(const char* name) noexcept;
nvtxDomainHandle_t domain_create_w(const wchar_t* name) noexcept;
void domain_destroy(nvtxDomainHandle_t domain) noexcept;
nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t domain, const char* text) noexcept;
nvtxStringHandle_t domain_register_string_w(nvtxDomainHandle_t domain, const wchar_t* text) noexcept;

// Payload extension (InitializeInjectionNvtxExtension): schema registration, so that NCCL's
// extended payload ("Message size [bytes]") can be read when its ranges are pushed.
uint64_t payload_schema_register(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t* attributes) noexcept;

}  // namespace stepwatch::live::nvtx

// The entry points NVTX looks up by name (defined in nvtx_injection.cpp, exported by
// libstepwatch.so). Declared here for tests and for static injection (`InitializeInjectionNvtx2_fnptr`).
extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
extern "C" int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* module_info);
