// Told about each blocking CUDA call on the thread that makes it, at its entry and exit: the live
// call-site recorder (live/call_site_recorder.h) reads where in the program the call was made.
// It sits in core so that the CUPTI adapter, which fires it, and the live session, which
// implements it, need not see each other.
#pragma once

#include <cstdint>

namespace stepwatch {

class BlockingCallHook {
 public:
  virtual ~BlockingCallHook() = default;
  // Inside the CUDA call, on its thread, once per host wait (a runtime call's own driver call is
  // not told again). `correlation` is the call's CUPTI correlation id (its API record has the
  // same); `t_ns` on the records' clock. Never blocks, never throws, makes no CUDA call.
  virtual void enter(uint64_t correlation, int64_t t_ns) noexcept = 0;
  virtual void exit(uint64_t correlation, int64_t t_ns) noexcept = 0;
};

}  // namespace stepwatch
