// Byte offsets of the CPython internals the frame reader walks (python_frames.h), per
// interpreter version: x86-64 and aarch64 release builds (LP64; no debug or free-threaded build).
// Each row cites the headers it was read from; tests/live/python_layout_probe.c checks every row
// against the headers of each interpreter the build machine has (tests/python/interpreters.cmake).
#pragma once

#include <cstddef>
#include <string>

namespace stepwatch::live {

struct PythonLayout {
  int major = 0;
  int minor = 0;
  size_t tstate_frames = 0;    // PyThreadState.cframe (3.11, 3.12) or .current_frame (3.13)
  bool through_cframe = true;  // 3.11/3.12: tstate->cframe->current_frame
  size_t cframe_current = 0;   // _PyCFrame.current_frame
  size_t frame_code = 0;       // _PyInterpreterFrame.f_code (3.13: f_executable)
  size_t frame_previous = 0;
  size_t frame_instr = 0;      // prev_instr (3.11, 3.12) or instr_ptr (3.13)
  size_t frame_owner = 0;
  int owner_cstack = -1;       // FRAME_OWNED_BY_CSTACK (3.12+): shim frames, skipped; -1 none
  size_t code_filename = 0;    // PyCodeObject.co_filename
  size_t code_name = 0;        // PyCodeObject.co_name
  size_t code_adaptive = 0;    // PyCodeObject.co_code_adaptive: _PyCode_CODE(co)
  size_t ascii_size = 0;       // sizeof(PyASCIIObject): a compact ASCII string's data follows it
  size_t compact_utf8 = 0;     // PyCompactUnicodeObject.utf8 (utf8_length just before it)
};

// The row of an interpreter version, or null.
const PythonLayout* find_python_layout(int major, int minor) noexcept;
std::string known_python_layouts_text();  // "3.11, 3.12, 3.13"

}  // namespace stepwatch::live
