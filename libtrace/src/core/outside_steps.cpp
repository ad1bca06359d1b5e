#include "stepwatch/core/outside_steps.h"

#include <algorithm>

#include "stepwatch/core/classify.h"
#include "stepwatch/core/timeline.h"

namespace stepwatch {
namespace {

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// A long CUDA call's initialization kind. Waits (syncs, copies, queries) are never initialization:
// their time is the GPU's. The data's first CUDA call creates the context whatever it is (PyTorch's
// first is often cudaGetDeviceCount, cudaFree(0) or a stream-priority query).
InitKind init_kind(std::string_view name, ApiClass cls, int64_t duration_ns, bool first_call) {
  if (duration_ns < kMinInitCallNs) return InitKind::kNone;
  switch (cls) {
    case ApiClass::kStreamSync:
    case ApiClass::kDeviceSync:
    case ApiClass::kEventSync:
    case ApiClass::kMemcpySync:
    case ApiClass::kMemcpyAsync:
    case ApiClass::kMemsetSync:
    case ApiClass::kMemsetAsync:
    case ApiClass::kQuery:
    case ApiClass::kStreamWait:
      return InitKind::kNone;
    default: break;
  }
  if (first_call) return InitKind::kContext;
  if (contains(name, "ModuleLoad") || contains(name, "LibraryLoad") || contains(name, "LinkComplete") ||
      contains(name, "ModuleGetFunction") || cls == ApiClass::kLaunch) {
    return InitKind::kModuleLoad;
  }
  if (cls == ApiClass::kMalloc || cls == ApiClass::kFree) return InitKind::kAllocator;
  if (contains(name, "Init") || contains(name, "PrimaryCtx") || contains(name, "CtxCreate") ||
      contains(name, "SetDevice") || contains(name, "GetDeviceCount")) {
    return InitKind::kContext;
  }
  return InitKind::kSetup;
}

}  // namespace

std::string_view to_string(InitKind k) {
  switch (k) {
    case InitKind::kContext: return "context creation";
    case InitKind::kModuleLoad: return "module loading";
    case InitKind::kAllocator: return "allocator set-up";
    case InitKind::kSetup: return "runtime set-up";
    default: return "none";
  }
}

std::vector<InitCall> init_calls_in(const Timeline& tl, int64_t s, int64_t e, int64_t first_call_ns, int64_t& idle_ns) {
  std::vector<InitCall> calls;
  std::vector<Interval> spans;
  const auto events = tl.events();
  const auto api = tl.api_by_start();
  auto it = std::lower_bound(api.begin(), api.end(), s, [&](uint32_t i, int64_t t) { return events[i].start_ns < t; });
  for (; it != api.end() && events[*it].start_ns < e; ++it) {
    const Event& call = events[*it];
    const std::string_view name = display_name(tl.names().view(call.name));
    InitKind kind = init_kind(name, call.api_class(), call.duration_ns(), call.start_ns == first_call_ns);
    // A launch of any length that the tracer saw loading its kernel's module (CUDA >= 12.2 and
    // HIP load modules lazily, at a kernel's first launch: each load is often short, many add up).
    if (kind == InitKind::kNone && call.api_class() == ApiClass::kLaunch && call.duration_ns() > 0 &&
        2 * tl.module_loading().measure_within(call.start_ns, call.end_ns) >= call.duration_ns()) {
      kind = InitKind::kModuleLoad;
    }
    if (kind == InitKind::kNone) continue;
    const int64_t end = std::min(call.end_ns, e);
    spans.push_back({call.start_ns, end});
    calls.push_back({std::string(name), kind, call.start_ns, call.duration_ns(),
                     (end - call.start_ns) - tl.busy().measure_within(call.start_ns, end)});
  }
  const IntervalSet init = IntervalSet::from_unsorted(std::move(spans));
  idle_ns = init.total_length() - init.intersect(tl.busy()).total_length();
  std::sort(calls.begin(), calls.end(),
            [](const InitCall& a, const InitCall& b) { return a.duration_ns > b.duration_ns; });
  if (calls.size() > OutsideView::kMaxInitCalls) calls.resize(OutsideView::kMaxInitCalls);
  return calls;
}

OutsideView describe_outside(const Timeline& tl, int64_t s, int64_t e, int64_t first_call_ns, int rank) {
  OutsideView o;
  o.start_ns = s;
  o.end_ns = e;
  if (e <= s) return o;
  // The same analysis a step gets: its host activity names what ran while the GPU was idle.
  const StepView v = analyze_step(StepWindow{s, e, 0, StepSource::kWholeTrace}, tl, rank);
  o.busy_ns = v.busy_ns;
  o.kernels = v.kernels;
  o.host_activity = v.host_activity;
  o.init_calls = init_calls_in(tl, s, e, first_call_ns, o.init_idle_ns);
  return o;
}

}  // namespace stepwatch
