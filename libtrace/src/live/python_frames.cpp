#include "live/python_frames.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string_view>

#include "core/call_sites.h"
#include "live/python_layouts.h"

namespace stepwatch::live {
namespace {

template <typename T>
T read_at(const void* base, size_t offset) noexcept {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + offset, sizeof(T));
  return v;
}

// PyObject_HEAD: ob_refcnt, then ob_type (release builds; 3.12's immortal refcount keeps the size).
constexpr size_t kObType = 8;
// PyASCIIObject: length at 16, hash at 24, the state bit field at 32 (interned:2, kind:3,
// compact:1, ascii:1, … — the same bits in 3.11-3.13).
constexpr size_t kLength = 16;
constexpr size_t kState = 32;

void copy_text(char* out, size_t cap, const char* data, size_t n) noexcept {
  const size_t k = n < cap - 1 ? n : cap - 1;
  for (size_t i = 0; i < k; ++i) {
    const unsigned char c = static_cast<unsigned char>(data[i]);
    out[i] = c >= 0x20 && c != 0x7f ? static_cast<char>(c) : '?';
  }
  out[k] = '\0';
}

}  // namespace

PythonFrameReader PythonFrameReader::probe(std::string& why) noexcept {
  PythonFrameReader r;
  try {
    using VersionFn = const char* (*)();
    auto version = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
    if (version == nullptr) {
      why = "no Python interpreter in the process";
      return r;
    }
    const char* text = version();
    int major = 0, minor = 0;
    if (text == nullptr || std::sscanf(text, "%d.%d", &major, &minor) != 2) {
      why = "Python of unreadable version";
      return r;
    }
    const PythonLayout* layout = find_python_layout(major, minor);
    const std::string name = "Python " + std::to_string(major) + "." + std::to_string(minor);
    // A free-threaded or debug build lays its objects out otherwise.
    if (std::strstr(text, "experimental free-threading") != nullptr || dlsym(RTLD_DEFAULT, "_Py_RefTotal") != nullptr ||
        dlsym(RTLD_DEFAULT, "_Py_GetRefTotal") != nullptr) {
      layout = nullptr;
    }
    if (layout == nullptr) {
      why = name + ": no frame layout known for this build (native call sites only; known: " +
            known_python_layouts_text() + ")";
      return r;
    }
    r.this_thread_state_ = reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
    r.addr2line_ = reinterpret_cast<int (*)(void*, int)>(dlsym(RTLD_DEFAULT, "PyCode_Addr2Line"));
    r.code_type_ = dlsym(RTLD_DEFAULT, "PyCode_Type");
    r.unicode_type_ = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    if (r.this_thread_state_ == nullptr || r.addr2line_ == nullptr || r.code_type_ == nullptr ||
        r.unicode_type_ == nullptr) {
      why = name + ": its C API is not exported to this library (native call sites only)";
      return r;
    }
    // A cheap check of the row on the live interpreter: the thread state's `interp` (at 16 in
    // every version: prev, next, interp) is what the interpreter's own accessor returns.
    using InterpFn = void* (*)(void*);
    auto interp_of = reinterpret_cast<InterpFn>(dlsym(RTLD_DEFAULT, "PyThreadState_GetInterpreter"));
    if (void* ts = r.this_thread_state_(); ts != nullptr && interp_of != nullptr &&
                                           interp_of(ts) != read_at<void*>(ts, 16)) {
      why = name + ": its thread state does not match the frame layout known for it (native call sites only)";
      return r;
    }
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) r.cwd_ = std::string(cwd) + "/";
    r.layout_ = layout;
    why = name;
  } catch (...) {
    r.layout_ = nullptr;
    why = "Python frames unavailable";
  }
  return r;
}

namespace {

// A Python str as UTF-8 (compact strings: every str a code object holds); false otherwise.
bool read_str(const PythonLayout& L, const void* unicode_type, const void* obj, char* out, size_t cap) noexcept {
  if (obj == nullptr || cap == 0 || read_at<const void*>(obj, kObType) != unicode_type) return false;
  const uint32_t state = read_at<uint32_t>(obj, kState);
  const bool compact = ((state >> 5) & 1u) != 0;
  const bool ascii = ((state >> 6) & 1u) != 0;
  if (!compact) return false;
  const int64_t length = read_at<int64_t>(obj, kLength);
  if (ascii) {
    copy_text(out, cap, static_cast<const char*>(obj) + L.ascii_size, static_cast<size_t>(length));
    return true;
  }
  // Non-ASCII: the UTF-8 form when the interpreter has made it (it is cached on first use).
  const char* utf8 = read_at<const char*>(obj, L.compact_utf8);
  if (utf8 == nullptr) return false;
  copy_text(out, cap, utf8, static_cast<size_t>(read_at<int64_t>(obj, L.compact_utf8 - 8)));
  return true;
}

}  // namespace

PythonFrameReader::Read PythonFrameReader::innermost_user_frame(char* user, size_t user_size, char* callee,
                                                                size_t callee_size) const noexcept {
  if (layout_ == nullptr || user_size == 0 || callee_size == 0) return Read::kNotPython;
  const PythonLayout& L = *layout_;
  // The thread's own state through thread-specific storage: no GIL needed, null for a thread
  // Python never ran on.
  const void* tstate = this_thread_state_();
  if (tstate == nullptr) return Read::kNotPython;
  const void* frame = nullptr;
  if (L.through_cframe) {
    const void* cframe = read_at<const void*>(tstate, L.tstate_frames);
    if (cframe == nullptr) return Read::kNoUserFrame;
    frame = read_at<const void*>(cframe, L.cframe_current);
  } else {
    frame = read_at<const void*>(tstate, L.tstate_frames);
  }
  callee[0] = '\0';
  char file[1024];
  char function[256];
  // The innermost frame of an installed package other than torch's: the site when the program
  // itself has no frame on the stack (a server running from site-packages).
  char fallback[1024];
  char fallback_callee[1024];
  fallback[0] = '\0';
  bool frame_seen = false;
  for (int depth = 0; frame != nullptr && depth < 512; ++depth, frame = read_at<const void*>(frame, L.frame_previous)) {
    if (L.owner_cstack >= 0 && read_at<char>(frame, L.frame_owner) == static_cast<char>(L.owner_cstack)) continue;
    void* code = read_at<void*>(frame, L.frame_code);
    if (code == nullptr || read_at<const void*>(code, kObType) != code_type_) continue;
    frame_seen = true;
    if (!read_str(L, unicode_type_, read_at<const void*>(code, L.code_filename), file, sizeof file)) continue;
    if (!read_str(L, unicode_type_, read_at<const void*>(code, L.code_name), function, sizeof function)) continue;
    const auto* instr = read_at<const char*>(frame, L.frame_instr);
    const char* first = static_cast<const char*>(code) + L.code_adaptive;
    const long offset = instr - first;
    const int line = offset >= 0 && offset < (1l << 30) ? addr2line_(code, static_cast<int>(offset)) : -1;
    std::string_view path(file);
    if (!cwd_.empty() && path.substr(0, cwd_.size()) == cwd_) path.remove_prefix(cwd_.size());
    char text[1024];
    std::snprintf(text, sizeof text, "%.*s(%d): %s", static_cast<int>(path.size()), path.data(), line < 0 ? 0 : line,
                  function);
    if (is_framework_file(path)) {
      std::snprintf(callee, callee_size, "%s", text);
      continue;
    }
    if (is_installed(path)) {
      if (fallback[0] == '\0') {
        std::snprintf(fallback, sizeof fallback, "%s", text);
        std::snprintf(fallback_callee, sizeof fallback_callee, "%s", callee);
      }
      std::snprintf(callee, callee_size, "%s", text);
      continue;
    }
    std::snprintf(user, user_size, "%s", text);
    return Read::kSite;
  }
  // No frame at all: a thread Python registered that runs no Python code now (a C++ worker made
  // by an extension through PyGILState_Ensure): its native caller may say more.
  if (fallback[0] == '\0') return frame_seen ? Read::kNoUserFrame : Read::kNotPython;
  std::snprintf(user, user_size, "%s", fallback);
  std::snprintf(callee, callee_size, "%s", fallback_callee);
  return Read::kSite;
}

}  // namespace stepwatch::live
