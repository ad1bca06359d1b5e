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
// All-to-alls whose launch ranges say they move a recommendation model's sharded embedding tables
// (TorchRec: the input distribution of sparse features, the output distribution of embeddings) are
// not MoE layers: the message names those parts and the fix is the embedding one — the sharding
// plan, quantized comms, a pipeline that issues them a batch ahead.
#include "exposed_collective.h"

#include <cstdio>

#include "detector_util.h"

namespace stepwatch {

namespace {

std::string count_of(int n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// "All-to-all: 8 layers (16 kernels), 9.6 ms (9.0 ms exposed, worst kernel 0.6 ms) vs 6.4 ms of
// expert compute between dispatch and combine (ratio 1.50)." and the fix that follows the ratio.
void describe_layers(const AllToAllStat& a2a, double ratio, std::string& text, std::string& fix) {
  const AllToAllPart& l = a2a.layered;
  text = " All-to-all: " + count_of(a2a.layers, "layer") + " (" + count_of(l.kernels, "kernel") + "), " +
         format_ms(l.ns) + " (" + format_ms(l.exposed_ns) + " exposed, worst kernel " +
         format_ms(a2a.max_exposed_ns) + ") vs " + format_ms(a2a.expert_compute_ns) +
         " of expert compute between dispatch and combine";
  if (a2a.expert_compute_ns > 0) {
    char r[32];
    std::snprintf(r, sizeof r, "%.2f", ratio);
    text += std::string(" (ratio ") + r + ").";
  } else {
    text += ".";
  }
  fix = a2a.expert_compute_ns == 0 || ratio >= 1.0
            ? "Fix: the all-to-all outlasts the expert compute, so overlap alone cannot hide it: cut its volume "
              "(capacity factor, expert balance and placement), widen the EP axis, fuse the communication."
            : "Fix: the expert compute is long enough to hide the all-to-all: overlap dispatch/combine with expert "
              "compute (chunked or pipelined a2a, comm-fusion); check capacity factor and expert balance.";
}

// "All-to-all of sharded embedding tables (TorchRec): embeddings 2 kernels, 15.2 ms
// (11.0 ms exposed: forward 7.9 ms, backward 3.1 ms); sparse-feature distribution 5 kernels, ..."
// and the fix for the part that is more exposed.
void describe_embeddings(const AllToAllStat& a2a, std::string& text, std::string& fix) {
  const AllToAllPart& fwd = a2a.embeddings_forward;
  const AllToAllPart& bwd = a2a.embeddings_backward;
  const AllToAllPart& sparse = a2a.sparse_features;
  text = " All-to-all of sharded embedding tables (TorchRec): ";
  std::string parts;
  if (fwd.kernels + bwd.kernels > 0) {
    parts += "embeddings " + count_of(fwd.kernels + bwd.kernels, "kernel") + ", " + format_ms(fwd.ns + bwd.ns) + " (" +
             format_ms(fwd.exposed_ns + bwd.exposed_ns) + " exposed";
    if (fwd.kernels > 0 && bwd.kernels > 0) {
      parts += ": forward " + format_ms(fwd.exposed_ns) + ", backward " + format_ms(bwd.exposed_ns);
    } else {
      parts += fwd.kernels > 0 ? ", forward" : ", backward";
    }
    parts += ")";
  }
  if (sparse.kernels > 0) {
    parts += std::string(parts.empty() ? "" : "; ") + "sparse-feature distribution " +
             count_of(sparse.kernels, "kernel") + ", " + format_ms(sparse.ns) + " (" + format_ms(sparse.exposed_ns) +
             " exposed" + (a2a.sparse_features_ahead ? ", issued a batch ahead" : "") + ")";
  }
  text += parts + ".";
  if (fwd.exposed_ns + bwd.exposed_ns >= sparse.exposed_ns) {
    fix = "Fix: shrink the embedding all-to-all — a sharding plan that keeps small tables data-parallel and splits "
          "large ones row- or column-wise (TorchRec's EmbeddingShardingPlanner given the real topology and batch "
          "size), quantized comms (QCommsConfig: fp16/bf16 forward and backward); or hide it behind the previous "
          "batch's forward (TrainPipelineSemiSync).";
  } else if (a2a.sparse_features_ahead) {
    fix = "Fix: the pipeline already issues this input distribution a batch ahead (TrainPipelineSparseDist's "
          "sparse_data_dist), yet no compute ran beside it: send fewer ids (deduplicate them, prune features) and "
          "keep small tables data-parallel, which need no input all-to-all.";
  } else {
    fix = "Fix: issue the next batch's input distribution while this batch computes (TorchRec's "
          "TrainPipelineSparseDist runs it a batch ahead on its own stream); send fewer ids (deduplicate them, "
          "prune features).";
  }
}

}  // namespace

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
  // SendRecv kernels launched by an all-to-all count as all-to-all layers (Timeline::is_all_to_all);
  // the embedding tables' all-to-alls are described as such when they are the more exposed.
  const int64_t embedding_exposed = a2a.embedding_exposed_ns();
  const bool embeddings = embedding_exposed > 0 && embedding_exposed >= a2a.layered.exposed_ns;
  const bool a2a_layers = !embeddings && a2a.layered.kernels > 0 && a2a.layered.exposed_ns > 0;
  const double a2a_ratio =
      a2a.expert_compute_ns > 0 ? double(a2a.layered.ns) / double(a2a.expert_compute_ns) : 0.0;
  std::string fix =
      all_to_all ? "Fix: balance expert capacity, widen the EP axis, fuse/overlap all-to-all with expert compute."
                 : "Fix: overlap communication with backward compute — DDP bucketing (bucket_cap_mb), no no_sync "
                   "misuse, comm hooks; FSDP forward/backward prefetch.";
  std::string a2a_text;
  if (embeddings) describe_embeddings(a2a, a2a_text, fix);
  else if (a2a_layers) describe_layers(a2a, a2a_ratio, a2a_text, fix);
  // One type: "NCCL AllReduce ran 59.6 ms ..."; several: "NCCL AllReduce 40.1 ms, AllGather 9.8 ms ran ...".
  std::string what = "NCCL collectives";
  if (types.size() == 1) what = "NCCL " + types.front();
  else if (types.size() > 1) what = "NCCL " + type_text;
  f.message = what + " ran " + format_ms(cost_ns) + " (" + format_pct(f.cost_pct) + " of " +
              format_ms(step.duration_ns()) + ") with no compute kernel overlapping it (" +
              format_pct(exposed_share) + " of comm time exposed)." + a2a_text + " " + fix;
  f.with("exposed_comm_ms", ms3_of(cost_ns))
      .with("comm_ms", ms3_of(step.comm_ns))
      .with("exposed_share_pct", round3(exposed_share))
      .with("collectives", types);
  for (const CollectiveStat& c : step.collectives) {
    f.with(std::string(to_string(c.type)) + "_exposed_ms", ms3_of(c.exposed_ns));
  }
  if (a2a_layers) {
    f.with("a2a_layers", static_cast<int64_t>(a2a.layers))
        .with("a2a_kernels", static_cast<int64_t>(a2a.layered.kernels))
        .with("a2a_ms", ms3_of(a2a.layered.ns))
        .with("a2a_exposed_ms", ms3_of(a2a.layered.exposed_ns))
        .with("a2a_exposed_kernels", static_cast<int64_t>(a2a.exposed_kernels))
        .with("a2a_worst_exposed_ms", ms3_of(a2a.max_exposed_ns))
        .with("expert_compute_ms", ms3_of(a2a.expert_compute_ns))
        .with("a2a_to_expert_ratio", round3(a2a_ratio));
  }
  if (embeddings) {
    const AllToAllPart& fwd = a2a.embeddings_forward;
    const AllToAllPart& bwd = a2a.embeddings_backward;
    f.with("a2a_purpose", std::string("embedding_sharding"))
        .with("embedding_a2a_exposed_ms", ms3_of(embedding_exposed))
        .with("embeddings_a2a_kernels", static_cast<int64_t>(fwd.kernels + bwd.kernels))
        .with("embeddings_a2a_ms", ms3_of(fwd.ns + bwd.ns))
        .with("embeddings_forward_exposed_ms", ms3_of(fwd.exposed_ns))
        .with("embeddings_backward_exposed_ms", ms3_of(bwd.exposed_ns))
        .with("sparse_features_a2a_kernels", static_cast<int64_t>(a2a.sparse_features.kernels))
        .with("sparse_features_a2a_ms", ms3_of(a2a.sparse_features.ns))
        .with("sparse_features_exposed_ms", ms3_of(a2a.sparse_features.exposed_ns))
        .with("sparse_features_ahead", static_cast<int64_t>(a2a.sparse_features_ahead ? 1 : 0));
  }
  sink.emit(std::move(f));
}

}  // namespace stepwatch
