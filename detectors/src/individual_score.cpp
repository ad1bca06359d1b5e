#include "individual_score.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "detector_util.h"

namespace stepwatch {
namespace {

std::string score_text(double score) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", score);
  return buf;
}

}  // namespace

void IndividualScoreTracker::observe(Signal& s, int64_t value_ns) {
  if (value_ns <= 0) return;
  if (s.history_ns.size() >= kMinHistory) {
    std::vector<int64_t> means;
    means.reserve(s.history_ns.size());
    int64_t sum = 0;
    for (size_t i = 0; i < s.history_ns.size(); ++i) {
      sum += s.history_ns[i];
      if (i >= kMeanOf) sum -= s.history_ns[i - kMeanOf];
      if (i + 1 >= kMeanOf) means.push_back(sum / static_cast<int64_t>(kMeanOf));
    }
    const auto at = means.begin() + static_cast<std::ptrdiff_t>(kBestQuantile * double(means.size() - 1));
    std::nth_element(means.begin(), at, means.end());
    s.score = Score{std::min(1.0, double(*at) / double(value_ns)), *at, value_ns};
  }
  s.history_ns.push_back(value_ns);
  if (s.history_ns.size() > kHistorySteps) s.history_ns.pop_front();
}

void IndividualScoreTracker::observe(const StepView& step, bool traced) {
  observe(step_time_, step.duration_ns());
  // Steps without GPU data, or without collectives, say nothing about collective wait.
  if (traced && step.comm_ns > 0) observe(collective_, step.comm_ns);
}

void IndividualScoreDetector::on_step(const StepView& step, FindingSink& sink) {
  const bool has_comm = step.comm_ns > 0;
  tracker_.observe(step, true);
  const auto& time = tracker_.step_time();
  const auto& wait = tracker_.collective_wait();
  const bool time_low = time && time->current_ns == step.duration_ns() &&
                        time->score < IndividualScoreTracker::kDegradedBelow;
  const bool wait_low = has_comm && wait && wait->current_ns == step.comm_ns &&
                        wait->score < IndividualScoreTracker::kDegradedBelow;
  if (!time_low && !wait_low) return;
  // The worse signal speaks for the step.
  const bool by_time = time_low && (!wait_low || time->score <= wait->score);
  const IndividualScoreTracker::Score& s = by_time ? *time : *wait;
  Finding f;
  if (!judge_cost(kId, step, s.current_ns - s.best_ns, thresholds_, f)) return;
  if (by_time) {
    f.message = "step time at " + score_text(s.score) + " of this rank's best recent (" + format_ms(s.current_ns) +
                " vs " + format_ms(s.best_ns) +
                "): this rank slowed down against its own history. Fix: read this rank's other findings and its "
                "host (input pipeline, CPU contention, GPU throttling, a noisy neighbour); if every rank's "
                "stepwatch_individual_score dropped together, the cause is shared (workload change, network, "
                "storage).";
  } else {
    f.message = "collective wait at " + score_text(s.score) + " of this rank's best recent (NCCL " +
                format_ms(s.current_ns) + " vs " + format_ms(s.best_ns) +
                " per step): this rank waits longer inside collectives for a late peer or a slower link. Fix: the "
                "straggler is the rank whose step-time score dropped (compare stepwatch_individual_score across "
                "ranks); if none did, check the network (NCCL_DEBUG=INFO, link errors, nvidia-smi topo -m).";
  }
  f.with("signal", std::string(by_time ? "step_time" : "collective_wait"))
      .with("score", round3(s.score))
      .with("best_ms", ms3_of(s.best_ns))
      .with("current_ms", ms3_of(s.current_ns));
  if (time) f.with("step_time_score", round3(time->score));
  if (wait) f.with("collective_wait_score", round3(wait->score));
  f.tax_share = TaxShare::kOverlapping;
  sink.emit(std::move(f));
}

}  // namespace stepwatch
