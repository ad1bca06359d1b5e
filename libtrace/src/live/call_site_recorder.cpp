#include "live/call_site_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "live/native_sites.h"

namespace stepwatch::live {
namespace {

// The blocking call in progress on this thread (blocking calls do not nest: the outermost is
// told, its own driver call is not). Trivially destructible: no TLS destructor on the app's threads.
struct Pending {
  uint64_t correlation = 0;
  int64_t start_ns = 0;
  NameId user = kNoName;
  NameId callee = kNoName;
  uintptr_t pc = 0;
};
thread_local Pending t_pending;
thread_local uint32_t t_tid = 0;

// The names this thread interned last, by a 64-bit hash of their text: a loop makes its blocking
// calls from a handful of lines, and the name table's lock is then taken once per line.
struct CachedName {
  uint64_t hash = 0;
  NameId id = kNoName;
};
thread_local CachedName t_names[16];

uint64_t hash_of(const char* s) noexcept {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (; *s != '\0'; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h | 1;  // never 0: 0 marks an empty slot
}

NameId intern_cached(EventSink& sink, const char* text) noexcept {
  const uint64_t h = hash_of(text);
  CachedName& slot = t_names[h % 16];
  if (slot.hash != h || slot.id == kNoName) slot = {h, sink.intern(text)};
  return slot.id;
}

// The reads' own CPU time (a preempted read must not count its wait).
int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

void CallSiteRecorder::enter(uint64_t correlation, int64_t t_ns) noexcept {
  const int64_t t0 = thread_cpu_ns();
  Pending p;
  p.correlation = correlation;
  p.start_ns = t_ns;
  char user[1024];
  char callee[1024];
  const PythonFrameReader::Read read = python_.innermost_user_frame(user, sizeof user, callee, sizeof callee);
  if (read == PythonFrameReader::Read::kSite) {
    p.user = intern_cached(sink_, user);
    if (callee[0] != '\0') p.callee = intern_cached(sink_, callee);
    python_sites_.fetch_add(1, std::memory_order_relaxed);
  } else if (read == PythonFrameReader::Read::kNotPython && (p.pc = native_caller()) != 0) {
    native_sites_.fetch_add(1, std::memory_order_relaxed);
  } else {
    unsited_.fetch_add(1, std::memory_order_relaxed);
  }
  t_pending = p;
  read_ns_.fetch_add(thread_cpu_ns() - t0, std::memory_order_relaxed);
}

void CallSiteRecorder::exit(uint64_t correlation, int64_t t_ns) noexcept {
  const Pending p = t_pending;
  t_pending = Pending{};
  if (p.correlation != correlation || (p.user == kNoName && p.pc == 0)) return;
  if (t_tid == 0) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  Event e;
  e.kind = EventKind::kPythonFrame;
  e.start_ns = p.start_ns;
  e.end_ns = std::max(t_ns, p.start_ns);
  e.correlation = correlation;
  e.thread = t_tid;
  if (p.user != kNoName) {
    e.name = p.user;
    e.bytes = p.callee;
    e.flags = event_flags::kCallLine;
  } else {
    e.bytes = p.pc;
    e.flags = event_flags::kNativeSite;
  }
  sink_.submit(e);
}

void CallSiteRecorder::name_native_sites(std::vector<Event>& batch) noexcept {
  try {
    for (Event& e : batch) {
      if (e.kind != EventKind::kPythonFrame || !e.has_flag(event_flags::kNativeSite) || e.name != kNoName) continue;
      const uintptr_t pc = static_cast<uintptr_t>(e.bytes);
      auto it = std::find_if(native_names_.begin(), native_names_.end(), [&](const auto& x) { return x.first == pc; });
      if (it == native_names_.end()) {
        // A handful of call sites per program: a short list, bounded.
        const std::string name = name_native_site(pc);
        const NameId id = name.empty() ? kNoName : sink_.intern(name);
        if (native_names_.size() < 4096) native_names_.emplace_back(pc, id);
        e.name = id;
      } else {
        e.name = it->second;
      }
      e.bytes = 0;
    }
  } catch (...) {
  }
}

CallSiteStats CallSiteRecorder::stats() const noexcept {
  return {python_sites_.load(std::memory_order_relaxed), native_sites_.load(std::memory_order_relaxed),
          unsited_.load(std::memory_order_relaxed), read_ns_.load(std::memory_order_relaxed)};
}

}  // namespace stepwatch::live
