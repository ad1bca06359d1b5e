#include "cupti/cupti_api.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
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
  return (cuptiSubscribe_v2 || cuptiSubscribe) && cuptiUnsubscribe && cuptiEnableCallback && cuptiEnableDomain &&
         cuptiGetCallbackName && cuptiActivityEnable && cuptiActivityDisable &&
         cuptiActivityRegisterCallbacks && cuptiActivitySetAttribute && cuptiActivityFlushAll &&
         cuptiActivityGetNextRecord && cuptiActivityGetNumDroppedRecords &&
         cuptiSetThreadIdType && cuptiGetResultString && cuptiGetVersion &&
         cuptiGetTimestamp && cuptiFinalize;
}

bool resolve_cupti_api(void* handle, CuptiApi& api, std::string& error) noexcept {
  try {
    std::string missing;
#define SW_RESOLVE(fn) resolve_one(handle, #fn, api.fn, missing)
    std::string optional;  // absent in some supported versions (see cupti_api.h)
    resolve_one(handle, "cuptiSubscribe_v2", api.cuptiSubscribe_v2, optional);
    resolve_one(handle, "cuptiSubscribe", api.cuptiSubscribe, optional);
    if (api.cuptiSubscribe_v2 == nullptr && api.cuptiSubscribe == nullptr) {
      missing += missing.empty() ? "" : ", ";
      missing += "cuptiSubscribe_v2 and cuptiSubscribe";
    }
    resolve_one(handle, "cuptiActivityEnableAllSyncRecords", api.cuptiActivityEnableAllSyncRecords, optional);
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

int driver_cuda_major_hint(const char* version_file) noexcept {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  ..." (or "Open Kernel Module for
  // x86_64  580.65.06 ..."): CUDA 13 needs an R580 or later driver.
  std::FILE* f = std::fopen(version_file, "re");
  if (f == nullptr) return 0;
  char line[512] = {};
  const bool read = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  if (!read) return 0;
  const char* p = std::strstr(line, "Module");
  if (p == nullptr) return 0;
  for (p += 6; *p != '\0'; ++p) {
    if (*p >= '0' && *p <= '9' && (p[-1] == ' ' || p[-1] == '\t')) {
      char* end = nullptr;
      const long major = std::strtol(p, &end, 10);
      if (end != nullptr && *end == '.' && major > 0) return major >= 580 ? 13 : 12;
    }
  }
  return 0;
}

bool load_cupti_api(std::string_view explicit_path, CuptiApi& api, std::string& error) noexcept {
  try {
    const std::string wanted(explicit_path);
    // 1. The process's own libcupti (torch's wheel copy: libcupti.so.13 with CUDA 13 wheels,
    //    libcupti.so.12 with CUDA 12 ones): never a second copy next to it.
    for (const char* soname : {"libcupti.so.13", "libcupti.so.12"}) {
      void* loaded = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
      if (loaded == nullptr) continue;
      const std::string path = loaded_path(loaded);
      CuptiApi table;
      std::string missing;
      if (!resolve_cupti_api(loaded, table, missing)) {
        error = std::string("the ") + soname + " already loaded in this process (" + path + ") lacks " + missing;
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
    // 2. Another CUPTI (a libcupti.so.11, ...) is loaded: none of ours next to it.
    if (const std::string other = any_loaded_libcupti(); !other.empty()) {
      error = "this process already has another CUPTI loaded (" + other +
              "): stepwatch reads the records of CUPTI 12 and 13 (libcupti.so.12/.13) and loads no second CUPTI "
              "next to it";
      return false;
    }
    // 3. Load one: the major of the CUDA runtime the process has loaded, else the one the driver
    //    supports (CUDA 13 needs R580+), else 13 first.
    int first_major = 0;
    if (void* rt = dlopen("libcudart.so.12", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      first_major = 12;
      dlclose(rt);  // drops only the reference NOLOAD took
    } else if (void* rt13 = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      first_major = 13;
      dlclose(rt13);
    } else {
      first_major = driver_cuda_major_hint("/proc/driver/nvidia/version");
    }
    std::vector<std::string> candidates;
    if (!wanted.empty()) candidates.push_back(wanted);
    const int majors[2] = {first_major == 12 ? 12 : 13, first_major == 12 ? 13 : 12};
    for (const int major : majors) {
      const std::string name = "libcupti.so." + std::to_string(major);
      candidates.push_back(name);  // the loader's search path
      if (major == 13) candidates.push_back(STEPWATCH_DEFAULT_CUPTI_DIR "/libcupti.so.13");  // our toolkit
      candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/" + name);
    }
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
