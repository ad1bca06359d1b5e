#include "cupti/cupti_api.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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
         cuptiActivityEnableAllSyncRecords && cuptiSetThreadIdType && cuptiGetResultString && cuptiGetVersion &&
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
    SW_RESOLVE(cuptiSetThreadIdType);
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

namespace {

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// The file name of a loaded object (the path it was opened by).
std::string loaded_path(void* handle) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return {};
  return map->l_name;
}

// A loaded object whose file name starts with "libcupti.so" (any version), else empty.
std::string any_loaded_libcupti() {
  std::string found;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* out) -> int {
        const char* name = info->dlpi_name;
        if (name == nullptr || *name == '\0') return 0;
        const char* slash = std::strrchr(name, '/');
        const char* base = slash != nullptr ? slash + 1 : name;
        if (std::strncmp(base, "libcupti.so", 11) != 0) return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &found);
  return found;
}

}  // namespace

bool open_cupti_library(const std::string& path, CuptiApi& api, std::string& error) noexcept {
  try {
    // RTLD_LOCAL: CUPTI's symbols must not interpose on another library's. RTLD_NOW: a broken
    // library fails here, not later in a callback.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      error = path + ": cannot open: " + (why ? why : "?");
      return false;
    }
    CuptiApi table;
    std::string missing;
    if (!resolve_cupti_api(handle, table, missing)) {
      error = path + ": " + missing;
      // Not dlclose'd: closing a library that may have started threads is riskier than the leak.
      return false;
    }
    table.library_path = path;
    api = std::move(table);
    return true;
  } catch (...) {
    error = "out of memory while loading CUPTI";
    return false;
  }
}

bool load_cupti_api(std::string_view explicit_path, CuptiApi& api, std::string& error) noexcept {
  try {
    const std::string wanted(explicit_path);
    // 1. The process's own libcupti.so.13 (torch's): never a second copy next to it.
    if (void* loaded = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      const std::string path = loaded_path(loaded);
      CuptiApi table;
      std::string missing;
      if (!resolve_cupti_api(loaded, table, missing)) {
        error = "the libcupti.so.13 already loaded in this process (" + path + ") lacks " + missing;
        return false;
      }
      table.library_path = path;
      table.already_loaded = true;
      api = std::move(table);
      error.clear();
      if (!wanted.empty() && real_path(wanted) != real_path(path)) {
        error = "STEPWATCH_CUPTI_PATH=" + wanted + " not loaded: this process already has libcupti at " + path +
                " (a second CUPTI in one process is undefined); using that one";
      }
      return true;
    }
    // 2. Another CUPTI (a libcupti.so.12, ...) is loaded: none of ours next to it.
    if (const std::string other = any_loaded_libcupti(); !other.empty()) {
      error = "this process already has another CUPTI loaded (" + other +
              "): stepwatch reads CUPTI 13.0 records and loads no second CUPTI next to it";
      return false;
    }
    // 3. Load one.
    std::vector<std::string> candidates;
    if (!wanted.empty()) candidates.push_back(wanted);
    candidates.push_back("libcupti.so.13");
    candidates.push_back(STEPWATCH_DEFAULT_CUPTI_DIR "/libcupti.so.13");
    candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
    std::string failures;
    for (size_t i = 0; i < candidates.size(); ++i) {
      std::string why;
      if (!open_cupti_library(candidates[i], api, why)) {
        failures += (failures.empty() ? "" : "; ") + why;
        continue;
      }
      // The loader's path: name the file it found.
      if (const std::string path = loaded_path(api.library_handle); !path.empty()) api.library_path = path;
      // An explicit path that failed is worth a warning even when a fallback worked.
      error = (!wanted.empty() && i > 0) ? failures : std::string();
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
