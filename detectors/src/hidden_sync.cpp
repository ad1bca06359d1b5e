// hidden_sync — the host blocks in a synchronizing call and the GPU queue drains.
// Catalog: "Periodic cudaStreamSynchronize/cudaDeviceSynchronize mid-step; compute stream drains
// before each." nsys's expert rules cuda_api_sync, cuda_memcpy_sync and cuda_memcpy_async
// (pageable) are the anchor: all three kinds of call are blocking calls here.
// Cost: max(idle attributed to sync, GPU idle while the host was blocked).
// The umbrella of sync_memcpy, pageable_memcpy, allocator_churn and checkpoint_stall: its message
// follows the calls that cost the most GPU idle — frees point to the allocator, pageable copies to
// pinned memory, synchronous copies to async ones, syncs and small device-to-host read-backs
// (`.item()`: a 4-byte copy to pageable memory) to deferring metrics — and the pipeline
// adds the refinement that fired on the same step (link_refinements).
#include "hidden_sync.h"

#include <algorithm>
#include <array>

#include "detector_util.h"
#include "fix_text.h"
#include "site_evidence.h"
#include "stepwatch/core/classify.h"

namespace stepwatch {
namespace {

// What kind of blocking call drained the queue: each has its own fix.
enum class Kind : uint8_t { kSync, kSyncCopy, kPageableCopy, kFree };

// A device-to-host copy of at most this many bytes per call is the host reading a result back
// (`.item()`, `.cpu()` of a metric, a scalar cudaMemcpy): it waits for the value, whatever the
// memory kind — pinned memory would not help, deferring the read does.
constexpr uint64_t kReadbackBytes = 64 * 1024;

bool is_readback(const BlockingCallStat& c) {
  return c.copy_kind == CopyKind::kDtoH && c.count > 0 && c.bytes > 0 &&
         c.bytes / static_cast<uint64_t>(c.count) <= kReadbackBytes;
}

Kind kind_of(const BlockingCallStat& c) {
  if (c.api_class == ApiClass::kFree) return Kind::kFree;
  if (is_readback(c)) return Kind::kSync;
  if (c.api_class == ApiClass::kMemcpySync || c.api_class == ApiClass::kMemsetSync) return Kind::kSyncCopy;
  if (c.api_class == ApiClass::kMemcpyAsync && c.host_memory == MemoryKind::kPageable) return Kind::kPageableCopy;
  return Kind::kSync;
}

std::string describe_call(const BlockingCallStat& c) {
  std::string s = std::to_string(c.count) + "x " + c.name;
  if (is_readback(c)) {
    s += " (" + std::string(to_string(c.copy_kind)) + " read-back of " +
         std::to_string(c.bytes / static_cast<uint64_t>(c.count)) + " B)";
  } else if (kind_of(c) == Kind::kPageableCopy) {
    s += " (" + std::string(to_string(c.copy_kind)) + " with pageable memory)";
  } else if (c.api_class == ApiClass::kMemcpySync) {
    s += " (synchronous copy)";
  }
  return s;
}

std::string why_and_fix(Kind k, const ProgramStack& stack) {
  switch (k) {
    case Kind::kFree:
      return ": frees synchronize the device — the allocator hands memory back mid-step. Fix: " +
             fix::allocator(stack) + ".";
    case Kind::kPageableCopy:
      return ": a copy from pageable memory is staged and returns only when done. Fix: " + fix::pinned_copies(stack) +
             ".";
    case Kind::kSyncCopy:
      return ": a synchronous copy waits for all queued work. Fix: " + fix::async_copies(stack) + ".";
    case Kind::kSync: break;
  }
  return ". Fix: " + fix::defer_syncs(stack) + ".";
}

}  // namespace

HiddenSyncDetector::HiddenSyncDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void HiddenSyncDetector::on_step(const StepView& step, FindingSink& sink) {
  const int64_t sync_idle_ns = step.idle[IdleCause::kSync];
  const int64_t cost_ns = std::max(sync_idle_ns, step.blocked_idle_ns);
  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  // Name the calls that held the host while the GPU sat idle, worst first; the kind that cost the
  // most idle decides the fix.
  std::vector<std::string> calls;
  std::string call_text;
  std::array<int64_t, 4> idle_by_kind{};
  for (const BlockingCallStat& c : step.blocking) {
    if (c.gpu_idle_ns <= 0) continue;
    idle_by_kind[static_cast<size_t>(kind_of(c))] += c.gpu_idle_ns;
    if (calls.size() == 3) continue;
    calls.push_back(c.name);
    call_text += (call_text.empty() ? "" : ", ") + describe_call(c);
  }
  if (call_text.empty()) {
    // The draining call started before the step (rule 2 reaches back to where the GPU went idle).
    for (const GapRecord& g : step.gaps) {
      if (g.rule == GapRule::kHostBlocked && !g.blocking_call.empty()) {
        calls.push_back(g.blocking_call);
        call_text = g.blocking_call;
        BlockingCallStat named;
        named.api_class = classify_api(g.blocking_call);
        idle_by_kind[static_cast<size_t>(kind_of(named))] += 1;
        break;
      }
    }
  }
  std::string site_phrase;
  // The top site is named when it explains a good part of the cost: blocking calls made where no
  // frame was recorded (C++ threads such as autograd's) must not be pinned on a line that did not
  // make them.
  if (!step.blocking_sites.empty() && step.blocking_sites.front().gpu_idle_ns * 4 >= cost_ns) {
    site_phrase = ", " + site_phrase_of(step.blocking_sites.front());
  }
  const auto worst = static_cast<Kind>(std::max_element(idle_by_kind.begin(), idle_by_kind.end()) - idle_by_kind.begin());
  f.message = "GPU idle " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") while the host was blocked in " +
              (call_text.empty() ? std::string("synchronizing calls") : call_text) + " that drained the GPU queue" +
              site_phrase + why_and_fix(worst, step.stack);
  int64_t sync_gaps = 0;
  for (const GapRecord& g : step.gaps) sync_gaps += g.rule == GapRule::kHostBlocked ? 1 : 0;
  static constexpr std::array<std::string_view, 4> kKindNames = {"sync", "sync_copy", "pageable_copy", "free"};
  f.with("sync_idle_ms", ms3_of(sync_idle_ns))
      .with("blocked_idle_ms", ms3_of(step.blocked_idle_ns))
      .with("blocking_calls", static_cast<int64_t>(step.syncs))
      .with("drain_gaps", sync_gaps)
      .with("calls", calls)
      .with("call_kind", std::string(kKindNames[static_cast<size_t>(worst)]));
  if (!step.blocking_sites.empty()) f.with("sites", site_evidence(step.blocking_sites));
  sink.emit(std::move(f));
}

}  // namespace stepwatch
