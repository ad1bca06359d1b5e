// exposed_collective — communication the compute stream does not hide.
// Catalog: "NCCL AllReduce serialized after backward's last kernel, compute stream idle under
// it" (unoverlapped gradient all-reduce) and "AllToAll blocks between expert matmuls each
// layer" (exposed all-to-all, MoE/EP). Cost: exposed comm = |N \ C| in the step.
#include "exposed_collective.h"

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
  const std::string fix =
      all_to_all ? "Fix: balance expert capacity, widen the EP axis, fuse/overlap all-to-all with expert compute."
                 : "Fix: overlap communication with backward compute — DDP bucketing (bucket_cap_mb), no no_sync "
                   "misuse, comm hooks; FSDP forward/backward prefetch.";
  // One type: "NCCL AllReduce ran 59.6 ms ..."; several: "NCCL AllReduce 40.1 ms, AllGather 9.8 ms ran ...".
  std::string what = "NCCL collectives";
  if (types.size() == 1) what = "NCCL " + types.front();
  else if (types.size() > 1) what = "NCCL " + type_text;
  f.message = what + " ran " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") with no compute kernel overlapping it (" +
              format_pct(exposed_share) + " of comm time exposed). " + fix;
  f.with("exposed_comm_ms", detail::ms3_ns(cost_ns))
      .with("comm_ms", detail::ms3_ns(step.comm_ns))
      .with("exposed_share_pct", detail::ms3(exposed_share))
      .with("collectives", types);
  for (const CollectiveStat& c : step.collectives) {
    f.with(std::string(to_string(c.type)) + "_exposed_ms", detail::ms3_ns(c.exposed_ns));
  }
  sink.emit(std::move(f));
}

}  // namespace stepwatch
