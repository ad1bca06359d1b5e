#include "live/python_layouts.h"

#include <array>

namespace stepwatch::live {
namespace {

constexpr std::array<PythonLayout, 3> kLayouts = {{
    // 3.11: Include/cpython/pystate.h (struct _ts: cframe after prev, next, interp and seven ints;
    // _PyCFrame {use_tracing, current_frame, previous}), Include/internal/pycore_frame.h
    // (_PyInterpreterFrame {f_func, f_globals, f_builtins, f_locals, f_code, frame_obj, previous,
    // prev_instr, stacktop, is_entry, owner}), Include/cpython/code.h, Include/cpython/unicodeobject.h
    // (PyASCIIObject still has wstr). Checked by the probe against the 3.11 headers.
    {3, 11, 56, true, 8, 32, 48, 56, 69, -1, 112, 120, 184, 48, 56},
    // 3.12: cframe at 56 (struct _ts: _status bit field, py/c recursion counters, tracing,
    // what_event); _PyCFrame {current_frame, previous}; _PyInterpreterFrame {f_code, previous,
    // f_funcobj, f_globals, f_builtins, f_locals, frame_obj, prev_instr, stacktop, return_offset,
    // owner}, FRAME_OWNED_BY_CSTACK = 3; PyASCIIObject without wstr.
    // Checked by the probe against 3.12.1's headers (3.12.10's are the same for these structs).
    {3, 12, 56, true, 0, 0, 8, 56, 70, 3, 112, 120, 192, 40, 48},
    // 3.13: no _PyCFrame — PyThreadState.current_frame at 72 (eval_breaker, _whence and state came
    // before it); _PyInterpreterFrame {f_executable (a code object or None: the reader checks the
    // type), previous, …, instr_ptr, stacktop, return_offset, owner}; co_executors moved
    // co_code_adaptive to 200. The same numbers as 3.13's _Py_DebugOffsets. Checked against 3.13.0.
    {3, 13, 72, false, 0, 0, 8, 56, 70, 3, 112, 120, 200, 40, 48},
}};

}  // namespace

const PythonLayout* find_python_layout(int major, int minor) noexcept {
  for (const PythonLayout& l : kLayouts) {
    if (l.major == major && l.minor == minor) return &l;
  }
  return nullptr;
}

std::string known_python_layouts_text() {
  std::string s;
  for (const PythonLayout& l : kLayouts) {
    s += (s.empty() ? "" : ", ") + std::to_string(l.major) + "." + std::to_string(l.minor);
  }
  return s;
}

}  // namespace stepwatch::live
