// Where in the program a blocking call was made: the reference's confirming measurement for a
// hidden sync, "correlate with python frames (.item(), .cpu(), logging, max_norm clip on CPU)".
//
// Frames come as kPythonFrame events (event.h). Offline they are Kineto's `python_function`
// events: every frame of the host thread's Python stack, nested, each named
// "file(line): function" with the line where the function is *defined* (torch's python tracer
// reads the frame's line at call entry), and the C built-ins the code went through named
// "<built-in method item of Tensor object at 0x…>". Live, the library reads the calling thread's
// innermost user frame itself at the blocking call's entry, with the line executing, and ties it
// to the call by correlation id (live/python_frames.h), or the native caller's address.
//
// A site is the innermost *user* frame around the call — not torch's own code, not the standard
// library, not `nn.Module` wrappers or built-ins — plus what that frame called on the way to the
// blocking call (`Tensor.item()`, `torch.cuda.synchronize()`): the line a user would change.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/core/name_table.h"

namespace stepwatch {

struct CallSite {
  std::string where;  // "train.py:142 in train_step", "log_metrics() defined at train.py:40", "f+0x1c in app"
  std::string call;   // what the site called: "Tensor.item()", "torch.cuda.synchronize()"; empty: not known
};

// How a frame's name reads (Kineto's naming; live frames are named the same way).
enum class FrameRole : uint8_t {
  kUser,       // the program's own code (or a library that is not torch's): a site
  kFramework,  // torch / torchvision / … and the standard library, site-packages paths
  kBuiltin,    // "<built-in method … >", "<built-in function …>"
  kWrapper,    // "nn.Module: Linear_0" and other frames of no file
};
FrameRole frame_role(std::string_view name);
// Whether a frame's file is torch's, the standard library's (relative as Kineto writes it, or
// under .../lib/python3.X/), or "<frozen …>": not where a user would change a line.
bool is_framework_file(std::string_view file);
// Whether a (live, absolute) path lies in site-packages or dist-packages.
bool is_installed(std::string_view file);
// "Tensor.item()" for "<built-in method item of Tensor object at 0x…>", "torch.cuda.synchronize()"
// for "torch/cuda/__init__.py(975): synchronize"; empty when the frame says nothing useful.
std::string call_text(std::string_view frame_name);
// The site text of a user frame: "log_metrics() defined at train.py:40" (definition line),
// "train.py:142 in train_step" (`call_line`: the line executing). Paths are shortened to what
// follows site-packages/ or dist-packages/.
std::string site_text(std::string_view frame_name, bool call_line);

class CallSiteIndex {
 public:
  // Collect frames (indices into `events`), then build once.
  void add(uint32_t event_index) { pending_.push_back(event_index); }
  void build(std::span<const Event> events, const NameTable& names);
  bool empty() const { return frames_.empty(); }

  // The site of a blocking call (an API call, or a sync record: `fallback_thread` when it has no
  // thread), or nullopt when no user frame covers it.
  std::optional<CallSite> site_of(const Event& call, uint32_t fallback_thread, std::span<const Event> events,
                                  const NameTable& names) const;

 private:
  struct Frame {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    uint32_t event = 0;
    int32_t parent = -1;  // innermost frame enclosing it on the same thread, -1 none
  };
  FrameRole role_of(NameId name) const;
  std::optional<CallSite> from_chain(int32_t innermost, const std::vector<Frame>& frames, std::span<const Event> events,
                                     const NameTable& names) const;
  static CallSite live_site(const Event& frame, const NameTable& names);

  std::vector<uint32_t> pending_;
  std::unordered_map<uint32_t, std::vector<Frame>> frames_;     // by thread, sorted by start
  std::vector<std::pair<uint64_t, uint32_t>> by_correlation_;  // live frames: (correlation, event)
  std::unordered_map<NameId, FrameRole> roles_;                // decided once per name, at build
};

}  // namespace stepwatch
