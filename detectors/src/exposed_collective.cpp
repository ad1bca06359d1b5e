// exposed_collective — communication the compute stream does not hide.
// Catalog: "NCCL AllReduce serialized after backward's last kernel, compute stream idle under
// it" (unoverlapped gradient all-reduce) and "AllToAll blocks between expert matmuls each
// layer" (exposed all-to-all, MoE/EP). Cost: exposed comm = |N \ C| in the step.
// All-to-all (the reference's confirming measurement "per-layer a2a time vs expert matmul time"):
// when an all-to-all is exposed, the evidence adds its layers (StepView::all_to_all: dispatch/combine
// pairs of a2a kernels, and the compute between them — the expert matmuls), a2a_ms, exposed a2a,
// expert_compute_ms and their ratio. The fix follows the ratio: a2a longer than the experts' compute
// cannot be hidden by overlap alone (cut its volume: capacity factor, expert balance/placement,
// wider EP axis, comm fusion); shorter, it can (overlap dispatch/combine with expert compute).
#include "exposed_collective.h"

#include <cstdio>

#include "detector_util.h"

namespace stepwatch {

ExposedCollectiveDetector::ExposedCollectiveDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void ExposedCollectiveDetector::on_step(const StepView& step, FindingSink& sink) {
  const int64_t cost_ns = step.exposed_comm_ns;
  Finding f;
  if (!judge_cost(kId, step, cost_ns, thresholds_, f)) return;

  std::vector<std::string> types;
  std::string type_text;
  bool all_to_all = false;
  for (const CollectiveStat& c : step.collectives) {
    if (c.exposed_ns <= 0) continue;
    types.emplace_back(to_string(c.type));
    all_to_all |= c.type == CollectiveType::kAllToAll;
    type_text += (type_text.empty() ? "" : ", ") + std::string(to_string(c.type)) + " " + format_ms(c.exposed_ns);
  }
  const double exposed_share = step.comm_ns > 0 ? 100.0 * double(cost_ns) / double(step.comm_ns) : 0.0;
  const AllToAllStat& a2a = step.all_to_all;
  // SendRecv kernels launched by an all-to-all count as all-to-all layers (Timeline::is_all_to_all).
  const bool a2a_layers = a2a.kernels > 0 && a2a.exposed_ns > 0;
  const double a2a_ratio =
      a2a.expert_compute_ns > 0 ? double(a2a.a2a_ns) / double(a2a.expert_compute_ns) : 0.0;
  std::string fix =
      all_to_all ? "Fix: balance expert capacity, widen the EP axis, fuse/overlap all-to-all with expert compute."
                 : "Fix: overlap communication with backward compute — DDP bucketing (bucket_cap_mb), no no_sync "
                   "misuse, comm hooks; FSDP forward/backward prefetch.";
  std::string layers_text;
  if (a2a_layers) {
    layers_text = " All-to-all: " + std::to_string(a2a.layers) + (a2a.layers == 1 ? " layer (" : " layers (") +
                  std::to_string(a2a.kernels) + (a2a.kernels == 1 ? " kernel), " : " kernels), ") + format_ms(a2a.a2a_ns) + " (" + format_ms(a2a.exposed_ns) + " exposed, worst kernel " + format_ms(a2a.max_exposed_ns) + ") vs " +
                  format_ms(a2a.expert_compute_ns) + " of expert compute between dispatch and combine";
    if (a2a.expert_compute_ns > 0) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2f", a2a_ratio);
      layers_text += std::string(" (ratio ") + ratio + ").";
    } else {
      layers_text += ".";
    }
    fix = a2a.expert_compute_ns == 0 || a2a_ratio >= 1.0
              ? "Fix: the all-to-all outlasts the expert compute, so overlap alone cannot hide it: cut its volume "
                "(capacity factor, expert balance and placement), widen the EP axis, fuse the communication."
              : "Fix: the expert compute is long enough to hide the all-to-all: overlap dispatch/combine with expert "
                "compute (chunked or pipelined a2a, comm-fusion); check capacity factor and expert balance.";
  }
  // One type: "NCCL AllReduce ran 59.6 ms ..."; several: "NCCL AllReduce 40.1 ms, AllGather 9.8 ms ran ...".
  std::string what = "NCCL collectives";
  if (types.size() == 1) what = "NCCL " + types.front();
  else if (types.size() > 1) what = "NCCL " + type_text;
  f.message = what + " ran " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") with no compute kernel overlapping it (" +
              format_pct(exposed_share) + " of comm time exposed)." + layers_text + " " + fix;
  f.with("exposed_comm_ms", ms3_of(cost_ns))
      .with("comm_ms", ms3_of(step.comm_ns))
      .with("exposed_share_pct", round3(exposed_share))
      .with("collectives", types);
  for (const CollectiveStat& c : step.collectives) {
    f.with(std::string(to_string(c.type)) + "_exposed_ms", ms3_of(c.exposed_ns));
  }
  if (a2a_layers) {
    f.with("a2a_layers", static_cast<int64_t>(a2a.layers))
        .with("a2a_kernels", static_cast<int64_t>(a2a.kernels))
        .with("a2a_ms", ms3_of(a2a.a2a_ns))
        .with("a2a_exposed_ms", ms3_of(a2a.exposed_ns))
        .with("a2a_exposed_kernels", static_cast<int64_t>(a2a.exposed_kernels))
        .with("a2a_worst_exposed_ms", ms3_of(a2a.max_exposed_ns))
        .with("expert_compute_ms", ms3_of(a2a.expert_compute_ns))
        .with("a2a_to_expert_ratio", round3(a2a_ratio));
  }
  sink.emit(std::move(f));
}

}  // namespace stepwatch
