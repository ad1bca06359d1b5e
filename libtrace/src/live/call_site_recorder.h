// Where each blocking call was made, read live (core/call_sites.h): the BlockingCallHook the CUPTI
// adapter fires on the calling thread. At the call's entry it reads the innermost user Python
// frame (python_frames.h) or, for a call from native code, the caller's address (native_sites.h);
// at its exit it submits one kPythonFrame event spanning the call, tied to it by correlation id.
// Native addresses are named on the analysis thread (name_native_sites), off the hot path.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/blocking_call_hook.h"
#include "core/event_sink.h"
#include "live/python_frames.h"

namespace stepwatch::live {

struct CallSiteStats {
  uint64_t python_sites = 0;  // blocking calls sited by a Python frame
  uint64_t native_sites = 0;  // by a native caller
  uint64_t unsited = 0;       // neither (no user frame, stack not unwindable)
  int64_t read_ns = 0;        // time spent reading them (inside the calls, before the wait)
};

class CallSiteRecorder final : public BlockingCallHook {
 public:
  CallSiteRecorder(EventSink& sink, PythonFrameReader python) noexcept : sink_(sink), python_(python) {}
  void enter(uint64_t correlation, int64_t t_ns) noexcept override;
  void exit(uint64_t correlation, int64_t t_ns) noexcept override;

  // Analysis thread: gives the native sites of a drained batch their names.
  void name_native_sites(std::vector<Event>& batch) noexcept;
  CallSiteStats stats() const noexcept;
  bool reads_python() const noexcept { return python_.usable(); }

 private:
  EventSink& sink_;
  const PythonFrameReader python_;
  std::atomic<uint64_t> python_sites_{0}, native_sites_{0}, unsited_{0};
  std::atomic<int64_t> read_ns_{0};
  std::vector<std::pair<uintptr_t, NameId>> native_names_;  // analysis thread only
};

}  // namespace stepwatch::live
