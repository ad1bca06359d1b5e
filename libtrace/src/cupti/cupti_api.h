// The CUPTI function table: every cupti* function the adapter calls, resolved with dlsym from a
// dlopen'ed libcupti (production), or from the test fake (tests/live/fake_cupti). libcupti is never
// linked, so libstepwatch.so loads — and stands down with one clear line — where CUPTI is missing.
//
// Only libtrace/src/cupti/ includes this header (it pulls in cupti.h); code outside the folder
// uses the CUPTI-free declarations in cupti_adapter.h.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepwatch::live {

// Members are named after the CUPTI functions they point to, so that `SW_CUPTI_CALL(api,
// cuptiActivityEnable(kind))` reads (and logs) like the real call.
struct CuptiApi {
  // Callback API. CUPTI 12 has only cuptiSubscribe; 13 adds cuptiSubscribe_v2 (which names the
  // client holding the subscription). One of the two is required; the adapter picks by version.
  decltype(&::cuptiSubscribe) cuptiSubscribe = nullptr;
  decltype(&::cuptiSubscribe_v2) cuptiSubscribe_v2 = nullptr;
  decltype(&::cuptiUnsubscribe) cuptiUnsubscribe = nullptr;
  decltype(&::cuptiEnableCallback) cuptiEnableCallback = nullptr;
  decltype(&::cuptiEnableDomain) cuptiEnableDomain = nullptr;
  decltype(&::cuptiGetCallbackName) cuptiGetCallbackName = nullptr;
  // Activity API (process-global in CUPTI 13.0: no subscriber handle).
  decltype(&::cuptiActivityEnable) cuptiActivityEnable = nullptr;
  decltype(&::cuptiActivityDisable) cuptiActivityDisable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) cuptiActivityRegisterCallbacks = nullptr;
  decltype(&::cuptiActivitySetAttribute) cuptiActivitySetAttribute = nullptr;
  decltype(&::cuptiActivityFlushAll) cuptiActivityFlushAll = nullptr;
  decltype(&::cuptiActivityGetNextRecord) cuptiActivityGetNextRecord = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) cuptiActivityGetNumDroppedRecords = nullptr;
  // Optional: CUPTI 12.6 has none (added in 12.8); without it query syncs are dropped by the
  // converter alone (sync_pairing.h).
  decltype(&::cuptiActivityEnableAllSyncRecords) cuptiActivityEnableAllSyncRecords = nullptr;
  decltype(&::cuptiSetThreadIdType) cuptiSetThreadIdType = nullptr;
  // Misc.
  decltype(&::cuptiGetResultString) cuptiGetResultString = nullptr;
  decltype(&::cuptiGetVersion) cuptiGetVersion = nullptr;
  decltype(&::cuptiGetTimestamp) cuptiGetTimestamp = nullptr;
  decltype(&::cuptiFinalize) cuptiFinalize = nullptr;

  // NOTE: never dlclose'd — CUPTI's threads may run our callbacks until the process exits.
  void* library_handle = nullptr;
  std::string library_path;     // the file in use
  bool already_loaded = false;  // the process had it loaded before stepwatch looked (torch's copy)

  // True when every required function above is resolved (the adapter calls them without null
  // checks; the optional ones are checked where called).
  bool complete() const noexcept;
};

// The libcupti stepwatch uses, never a second copy in one process (two CUPTIs in a process is
// undefined; PyTorch's wheels load their libcupti.so.12 or .13 when torch is imported, before the
// driver calls InitializeInjection):
//   1. the libcupti.so.13 or libcupti.so.12 the process has loaded already (dlopen RTLD_NOLOAD by
//      soname). An `explicit_path` (STEPWATCH_CUPTI_PATH, read by the session's Config — never
//      here) to another file is not loaded: `error` says so, the loaded one is used;
//   2. else, when another libcupti* is loaded (a libcupti.so.11), none: its records are not ones
//      stepwatch reads and a second CUPTI must not join it (`error` says which);
//   3. else the first that loads of `explicit_path`, then per major — first the one of the
//      libcudart the process has loaded, else the one the driver supports (driver_cuda_major_hint),
//      else 13 — "libcupti.so.N" (the loader's search path), STEPWATCH_DEFAULT_CUPTI_DIR
//      "/libcupti.so.13" (the toolkit we were built against) and
//      /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.N.
// Whether the loaded version's records can be read is the adapter's check (record_layouts.h).
// Returns true when one loaded and resolved every required function. `error` receives one human
// line per failed candidate; on success it is non-empty only for a note worth a warning (an
// explicit path refused or failed).
bool load_cupti_api(std::string_view explicit_path, CuptiApi& api, std::string& error) noexcept;

// 13 when the NVIDIA driver of `version_file` (/proc/driver/nvidia/version) runs CUDA 13 (R580 or
// later), 12 for an older one, 0 when unknown (no file, another format).
int driver_cuda_major_hint(const char* version_file) noexcept;

// dlopen + resolve one file, nothing else (tests, and the policy above).
bool open_cupti_library(const std::string& path, CuptiApi& api, std::string& error) noexcept;

// Resolves the table from an already dlopen'ed handle. `error` names the missing symbols.
bool resolve_cupti_api(void* handle, CuptiApi& api, std::string& error) noexcept;

// "CUPTI_ERROR_NOT_INITIALIZED (15)"; safe with a partially filled table.
std::string cupti_result_text(const CuptiApi& api, CUptiResult result) noexcept;

// Where the adapter's warnings go (see set_cupti_log in cupti_adapter.h).
void cupti_log(std::string_view line) noexcept;

// The body of SW_CUPTI_CALL: on failure logs call text, file, line and the result string through
// cupti_log, rate-limited per call site (the first few failures, then every 1000th with a count).
CUptiResult cupti_check(const CuptiApi& api, CUptiResult result, const char* call_text, const char* file,
                        int line, std::atomic<uint32_t>& site_failures) noexcept;

}  // namespace stepwatch::live

// The one error macro: calls `api.call`, logs a failure (rate-limited per call site), returns the
// CUptiResult. Never throws. Use it for every control call whose failure is not an expected
// outcome handled right there (subscribe's MULTIPLE_SUBSCRIBERS, GetNextRecord's end of buffer).
#define SW_CUPTI_CALL(api, call)                                                                \
  ([&]() noexcept -> CUptiResult {                                                              \
    static std::atomic<uint32_t> sw_site_failures{0};                                           \
    return ::stepwatch::live::cupti_check((api), (api).call, #call, __FILE__, __LINE__,         \
                                          sw_site_failures);                                    \
  }())
