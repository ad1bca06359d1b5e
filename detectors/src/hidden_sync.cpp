// hidden_sync — the host blocks in a synchronizing call and the GPU queue drains.
// Catalog: "Periodic cudaStreamSynchronize/cudaDeviceSynchronize mid-step; compute stream drains
// before each." nsys's expert rules cuda_api_sync, cuda_memcpy_sync and cuda_memcpy_async
// (pageable) are the anchor: all three kinds of call are blocking calls here.
// Cost: max(idle attributed to sync, GPU idle while the host was blocked).
#include "hidden_sync.h"

#include <algorithm>

#include "detector_util.h"

namespace stepwatch {
namespace {

std::string describe_call(const BlockingCallStat& c) {
  std::string s = std::to_string(c.count) + "x " + c.name;
  if (c.api_class == ApiClass::kMemcpyAsync && c.host_memory == MemoryKind::kPageable) {
    s += " (" + std::string(to_string(c.copy_kind)) + " with pageable memory)";
  } else if (c.api_class == ApiClass::kMemcpySync) {
    s += " (synchronous copy)";
  }
  return s;
}

}  // namespace

HiddenSyncDetector::HiddenSyncDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void HiddenSyncDetector::on_step(const StepView& step, FindingSink& sink) {
  const int64_t sync_idle_ns = step.idle[IdleCause::kSync];
  const int64_t cost_ns = std::max(sync_idle_ns, step.blocked_idle_ns);
  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  // Name the calls that held the host while the GPU sat idle, worst first.
  std::vector<std::string> calls;
  std::string call_text;
  for (const BlockingCallStat& c : step.blocking) {
    if (c.gpu_idle_ns <= 0 || calls.size() == 3) continue;
    calls.push_back(c.name);
    call_text += (call_text.empty() ? "" : ", ") + describe_call(c);
  }
  if (call_text.empty()) {
    // The draining call started before the step (rule 2 reaches back to where the GPU went idle).
    for (const GapRecord& g : step.gaps) {
      if (g.rule == GapRule::kHostBlocked && !g.blocking_call.empty()) {
        calls.push_back(g.blocking_call);
        call_text = g.blocking_call;
        break;
      }
    }
  }
  f.message = "GPU idle " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") while the host was blocked in " +
              (call_text.empty() ? std::string("synchronizing calls") : call_text) +
              " that drained the GPU queue. Fix: defer metrics (.item(), .cpu(), logging) off the step, "
              "keep reductions on device, use pinned memory with non_blocking copies.";
  int64_t sync_gaps = 0;
  for (const GapRecord& g : step.gaps) sync_gaps += g.rule == GapRule::kHostBlocked ? 1 : 0;
  f.with("sync_idle_ms", ms3_of(sync_idle_ns))
      .with("blocked_idle_ms", ms3_of(step.blocked_idle_ns))
      .with("blocking_calls", static_cast<int64_t>(step.syncs))
      .with("drain_gaps", sync_gaps)
      .with("calls", calls);
  sink.emit(std::move(f));
}

}  // namespace stepwatch
