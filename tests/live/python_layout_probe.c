/* Prints the frame-reader row (libtrace/src/live/python_layouts.h) measured with the headers of
 * the interpreter this is built against, in the table's field order; the test compares it with the
 * table. Built with Py_BUILD_CORE for the internal structs (they are what the reader walks). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <stddef.h>
#include <stdio.h>

int main(void) {
#if PY_VERSION_HEX >= 0x030D0000
  /* 3.13: the thread state holds the frame; the reader's row for it would use through_cframe 0. */
  printf("%d %d %zu 0 0 %zu %zu %zu %zu %d", PY_MAJOR_VERSION, PY_MINOR_VERSION, offsetof(PyThreadState, current_frame),
         offsetof(_PyInterpreterFrame, f_executable), offsetof(_PyInterpreterFrame, previous),
         offsetof(_PyInterpreterFrame, instr_ptr), offsetof(_PyInterpreterFrame, owner), (int)FRAME_OWNED_BY_CSTACK);
#elif PY_VERSION_HEX >= 0x030C0000
  printf("%d %d %zu 1 %zu %zu %zu %zu %zu %d", PY_MAJOR_VERSION, PY_MINOR_VERSION, offsetof(PyThreadState, cframe),
         offsetof(_PyCFrame, current_frame), offsetof(_PyInterpreterFrame, f_code),
         offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, prev_instr),
         offsetof(_PyInterpreterFrame, owner), (int)FRAME_OWNED_BY_CSTACK);
#else
  printf("%d %d %zu 1 %zu %zu %zu %zu %zu -1", PY_MAJOR_VERSION, PY_MINOR_VERSION, offsetof(PyThreadState, cframe),
         offsetof(_PyCFrame, current_frame), offsetof(_PyInterpreterFrame, f_code),
         offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, prev_instr),
         offsetof(_PyInterpreterFrame, owner));
#endif
  printf(" %zu %zu %zu %zu %zu\n", offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_name),
         offsetof(PyCodeObject, co_code_adaptive), sizeof(PyASCIIObject), offsetof(PyCompactUnicodeObject, utf8));
  return 0;
}
