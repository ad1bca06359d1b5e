#include "cupti/cupti_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cupti/cupti_adapter.h"

#ifndef STEPWATCH_DEFAULT_CUPTI_DIR
#define STEPWATCH_DEFAULT_CUPTI_DIR "/usr/local/cuda/lib64"
#endif

namespace stepwatch::live {
namespace {

std::atomic<TracerLogFn> g_log_fn{nullptr};

template <typename Fn>
void resolve_one(void* handle, const char* name, Fn& slot, std::string& missing) {
  // dlsym returns void*; POSIX guarantees it converts to a function pointer.
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot == nullptr) {
    if (!missing.empty()) missing += ", ";
    missing += name;
  }
}

}  // namespace

void set_cupti_log(TracerLogFn fn) noexcept { g_log_fn.store(fn, std::memory_order_release); }

void cupti_log(std::string_view line) noexcept {
  if (TracerLogFn fn = g_log_fn.load(std::memory_order_acquire)) {
    fn(line);
    return;
  }
  std::fprintf(stderr, "[stepwatch] %.*s\n", static_cast<int>(line.size()), line.data());
}

bool CuptiApi::complete() const noexcept {
  return cuptiSubscribe_v2 && cuptiUnsubscribe && cuptiEnableCallback && cuptiEnableDomain &&
         cuptiGetCallbackName && cuptiActivityEnable && cuptiActivityDisable &&
         cuptiActivityRegisterCallbacks && cuptiActivitySetAttribute && cuptiActivityFlushAll &&
         cuptiActivityGetNextRecord && cuptiActivityGetNumDroppedRecords &&
         cuptiActivityEnableAllSyncRecords && cuptiGetResultString && cuptiGetVersion &&
         cuptiGetTimestamp && cuptiFinalize;
}

bool resolve_cupti_api(void* handle, CuptiApi& api, std::string& error) noexcept {
  try {
    std::string missing;
#define SW_RESOLVE(fn) resolve_one(handle, #fn, api.fn, missing)
    SW_RESOLVE(cuptiSubscribe_v2);
    SW_RESOLVE(cuptiUnsubscribe);
    SW_RESOLVE(cuptiEnableCallback);
    SW_RESOLVE(cuptiEnableDomain);
    SW_RESOLVE(cuptiGetCallbackName);
    SW_RESOLVE(cuptiActivityEnable);
    SW_RESOLVE(cuptiActivityDisable);
    SW_RESOLVE(cuptiActivityRegisterCallbacks);
    SW_RESOLVE(cuptiActivitySetAttribute);
    SW_RESOLVE(cuptiActivityFlushAll);
    SW_RESOLVE(cuptiActivityGetNextRecord);
    SW_RESOLVE(cuptiActivityGetNumDroppedRecords);
    SW_RESOLVE(cuptiActivityEnableAllSyncRecords);
    SW_RESOLVE(cuptiGetResultString);
    SW_RESOLVE(cuptiGetVersion);
    SW_RESOLVE(cuptiGetTimestamp);
    SW_RESOLVE(cuptiFinalize);
#undef SW_RESOLVE
    api.library_handle = handle;
    if (!missing.empty()) {
      error = "missing symbols: " + missing;
      return false;
    }
    return true;
  } catch (...) {
    error = "out of memory while resolving CUPTI symbols";
    return false;
  }
}

bool load_cupti_api(std::string_view explicit_path, CuptiApi& api, std::string& error) noexcept {
  try {
    std::string candidates[4];
    size_t n = 0;
    if (!explicit_path.empty()) candidates[n++] = std::string(explicit_path);
    candidates[n++] = "libcupti.so.13";
    candidates[n++] = STEPWATCH_DEFAULT_CUPTI_DIR "/libcupti.so.13";
    candidates[n++] = "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13";

    std::string failures;
    for (size_t i = 0; i < n; ++i) {
      const std::string& path = candidates[i];
      // RTLD_LOCAL: CUPTI's symbols must not interpose on another libcupti (a PyTorch wheel's
      // libcupti.so.12) in the host process. RTLD_NOW: a broken library fails here, not later in
      // a callback.
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* why = dlerror();
        failures += (failures.empty() ? "" : "; ") + path + ": cannot open: " + (why ? why : "?");
        continue;
      }
      CuptiApi table;
      std::string missing;
      if (!resolve_cupti_api(handle, table, missing)) {
        failures += (failures.empty() ? "" : "; ") + path + ": " + missing;
        // Not dlclose'd: closing a library that may have started threads is riskier than the leak.
        continue;
      }
      table.library_path = path;
      api = std::move(table);
      // An explicit path that failed is worth a warning even when a fallback worked.
      error = (!explicit_path.empty() && i > 0) ? failures : std::string();
      return true;
    }
    error = failures;
    return false;
  } catch (...) {
    error = "out of memory while loading CUPTI";
    return false;
  }
}

std::string cupti_result_text(const CuptiApi& api, CUptiResult result) noexcept {
  try {
    const char* text = nullptr;
    if (api.cuptiGetResultString == nullptr || api.cuptiGetResultString(result, &text) != CUPTI_SUCCESS ||
        text == nullptr) {
      text = "CUPTI_ERROR_?";
    }
    return std::string(text) + " (" + std::to_string(static_cast<int>(result)) + ")";
  } catch (...) {
    return {};
  }
}

CUptiResult cupti_check(const CuptiApi& api, CUptiResult result, const char* call_text, const char* file,
                        int line, std::atomic<uint32_t>& site_failures) noexcept {
  if (result == CUPTI_SUCCESS) return result;
  try {
    // Rate limit per call site: a call that fails on every flush must not flood the job log.
    const uint32_t n = site_failures.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n > 3 && n % 1000 != 0) return result;
    const char* slash = std::strrchr(file, '/');
    std::string msg = std::string("CUPTI call failed: ") + call_text + " -> " + cupti_result_text(api, result) +
                      " at " + (slash ? slash + 1 : file) + ":" + std::to_string(line);
    if (n > 3) msg += " (" + std::to_string(n) + " failures at this site)";
    cupti_log(msg);
  } catch (...) {
  }
  return result;
}

}  // namespace stepwatch::live
