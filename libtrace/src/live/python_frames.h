// The calling thread's innermost user Python frame, read without the GIL.
//
// Why without it: PyTorch releases the GIL before every blocking call (`Tensor.item()` goes
// through dispatch_to, which starts with pybind11::gil_scoped_release; ctypes releases it too),
// and taking it inside a CUDA call could deadlock with a thread that holds it while waiting on a
// CUDA lock. What makes it safe: the frames read are the calling thread's own, and that thread is
// blocked inside this very call — nothing can pop or free them until it returns (the approach of
// out-of-process samplers such as py-spy, from inside the thread). Only immutable data is read:
// the frame chain, code objects (kept alive by their frames), their name strings and line table.
//
// Symbols come from the process (dlsym: the interpreter or libpython exports them); struct
// offsets from a table per interpreter version (python_layouts.cpp), checked against each
// version's own headers where a test can build against them. An interpreter the table does not
// know reads as "no Python": the caller falls back to the native call site.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace stepwatch::live {

struct PythonLayout;

class PythonFrameReader {
 public:
  // Looks for an interpreter in the process (call off the hot path: at start-up). `why` says what
  // was found: "Python 3.11", "no Python interpreter in the process", "Python 3.14: no frame
  // layout known (native call sites only)".
  static PythonFrameReader probe(std::string& why) noexcept;
  bool usable() const noexcept { return layout_ != nullptr; }

  // Kineto-style names ("file(line): function") of the calling thread's innermost user frame, with
  // the line it is executing, and of the frame it called on the way here (a torch function, "" when
  // the user frame made the call itself). False when the thread runs no Python, or no user frame.
  // Paths under the working directory are made relative to it. Writes into caller storage only.
  enum class Read : uint8_t {
    kSite,        // `user` (and `callee`) written
    kNoUserFrame, // a Python thread with no user frame on its stack (torch's own code): no site
    kNotPython,   // a thread Python never ran on, or no interpreter: the native caller is the site
  };
  Read innermost_user_frame(char* user, size_t user_size, char* callee, size_t callee_size) const noexcept;

 private:
  const PythonLayout* layout_ = nullptr;
  void* (*this_thread_state_)() = nullptr;         // PyGILState_GetThisThreadState
  int (*addr2line_)(void*, int) = nullptr;          // PyCode_Addr2Line
  const void* code_type_ = nullptr;                 // &PyCode_Type
  const void* unicode_type_ = nullptr;              // &PyUnicode_Type
  std::string cwd_;                                 // with a trailing '/'
};

}  // namespace stepwatch::live
