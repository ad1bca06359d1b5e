#include "synthetic/multi_rank.h"

#include <algorithm>
#include <stdexcept>

namespace stepwatch::synthetic {
namespace {

constexpr int kMaxRounds = 10'000;
constexpr int64_t kInputStragglerWaitNs = 40'000'000;
constexpr double kComputeStragglerSlowdown = 0.5;

void shift_spans(Spans& spans, int64_t d) {
  for (auto& [a, b] : spans) {
    a += d;
    b += d;
  }
}

void shift_all(std::vector<int64_t>& v, int64_t d) {
  for (int64_t& x : v) x += d;
}

}  // namespace

void shift_clock(SyntheticRun& run, int64_t d) {
  for (Event& e : run.trace.events) {
    e.start_ns += d;
    e.end_ns += d;
  }
  for (StepTruth& t : run.truth) {
    t.start_ns += d;
    t.end_ns += d;
  }
  GroundTruthTimeline& t = run.timeline;
  for (Spans* s : {&t.compute, &t.comm, &t.copy, &t.busy, &t.data_wait, &t.blocking, &t.fault_idle, &t.dispatch, &t.host_work,
                   &t.sync_copy_transfer, &t.pageable_copy_transfer, &t.allocator_calls}) {
    shift_spans(*s, d);
  }
  shift_all(t.compute_kernel_starts, d);
  shift_all(t.comm_kernel_starts, d);
  shift_all(t.blocking_call_starts, d);
  for (GroundTruthTimeline::SlowCopy& c : t.slow_h2d) c.start_ns += d;
  for (AllreduceRun& a : run.allreduces) a.start_ns += d;
  run.config.origin_ns += d;
}

std::vector<SyntheticRun> generate_ranks(const MultiRankOptions& o) {
  if (o.ranks < 2) throw std::invalid_argument("a multi-rank run needs at least 2 ranks");
  if (o.straggler != StragglerKind::kNone && (o.straggler_rank < 0 || o.straggler_rank >= o.ranks)) {
    throw std::invalid_argument("straggler rank " + std::to_string(o.straggler_rank) + " is not one of the " +
                                std::to_string(o.ranks) + " ranks");
  }
  std::vector<WorkloadConfig> configs;
  for (int r = 0; r < o.ranks; ++r) {
    ScenarioOptions so;
    so.steps = o.steps;
    so.seed = o.seed + static_cast<uint64_t>(r) * 7919;  // each GPU draws its own kernel durations
    so.rank = r;
    WorkloadConfig c = scenario_config(o.scenario, so);
    if (c.comm == CommMode::kNone) {
      throw std::invalid_argument("scenario '" + o.scenario + "' has no all-reduce to couple the ranks");
    }
    c.nccl_naming = o.nccl_naming;
    c.scenario = o.scenario + (o.straggler == StragglerKind::kNone ? "" : "+straggler");
    if (r == o.straggler_rank && o.straggler == StragglerKind::kCompute) {
      c.kernel_ns = static_cast<int64_t>(double(c.kernel_ns) * (1.0 + kComputeStragglerSlowdown * o.magnitude));
    } else if (r == o.straggler_rank && o.straggler == StragglerKind::kInput) {
      c.data_wait_ns = static_cast<int64_t>(double(kInputStragglerWaitNs) * o.magnitude);
    }
    if (static_cast<size_t>(r) < o.kernel_scale.size()) {
      c.kernel_ns = static_cast<int64_t>(double(c.kernel_ns) * o.kernel_scale[static_cast<size_t>(r)]);
    }
    configs.push_back(std::move(c));
  }

  // Fixed point: each round's collective ends are the latest natural end over the ranks.
  std::vector<int64_t> ends;
  std::vector<SyntheticRun> runs;
  for (int round = 0;; ++round) {
    if (round == kMaxRounds) throw std::runtime_error("multi-rank coupling did not converge");
    runs.clear();
    for (int r = 0; r < o.ranks; ++r) {
      WorkloadConfig& c = configs[static_cast<size_t>(r)];
      c.allreduce_end_floor_ns = ends;
      for (int64_t& e : c.allreduce_end_floor_ns) e += r * o.end_skew_ns;
      runs.push_back(generate(c));
    }
    std::vector<int64_t> next(runs.front().allreduces.size(), 0);
    for (const SyntheticRun& run : runs) {
      for (size_t k = 0; k < next.size() && k < run.allreduces.size(); ++k) {
        next[k] = std::max(next[k], run.allreduces[k].start_ns + run.allreduces[k].own_ns);
      }
    }
    if (next == ends) break;
    ends = std::move(next);
  }
  for (int r = 0; r < o.ranks; ++r) {
    const auto i = static_cast<size_t>(r);
    if (i < o.clock_offsets_ns.size() && o.clock_offsets_ns[i] != 0) shift_clock(runs[i], o.clock_offsets_ns[i]);
  }
  return runs;
}

}  // namespace stepwatch::synthetic
