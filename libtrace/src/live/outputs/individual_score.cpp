#include "live/outputs/individual_score.h"

#include <algorithm>
#include <cstdio>

namespace stepwatch::live {
namespace {

std::string score_text(double score) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", score);
  return buf;
}

std::string ms_text(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", double(ns) / 1e6);
  return buf;
}

}  // namespace

IndividualScore::IndividualScore(int sustain_min, int sustain_window)
    : sustain_min_(std::max(sustain_min, 1)), sustain_window_(std::max(sustain_window, std::max(sustain_min, 1))) {}

bool IndividualScore::observe(Signal& s, int64_t value_ns, int64_t step) {
  bool changed = false;
  if (s.history_ns.size() >= kMinHistory && value_ns > 0) {
    std::vector<int64_t> sorted(s.history_ns.begin(), s.history_ns.end());
    const auto at = sorted.begin() + static_cast<std::ptrdiff_t>(kBestQuantile * double(sorted.size() - 1));
    std::nth_element(sorted.begin(), at, sorted.end());
    s.best_ns = *at;
    s.current_ns = value_ns;
    s.score = std::min(1.0, double(s.best_ns) / double(value_ns));
    const bool degraded = *s.score < kDegradedBelow;
    s.degraded.push_back(degraded);
    if (s.degraded.size() > static_cast<size_t>(sustain_window_)) s.degraded.pop_front();
    const auto count = std::count(s.degraded.begin(), s.degraded.end(), true);
    if (!s.reported && degraded && count >= sustain_min_) {
      s.reported = true;
      s.since_step = step;
      s.worst_score = *s.score;
      changed = true;
    } else if (s.reported) {
      s.worst_score = std::min(s.worst_score, *s.score);
      if (count == 0) {
        s.reported = false;
        changed = true;
      }
    }
  }
  if (value_ns > 0) {
    s.history_ns.push_back(value_ns);
    if (s.history_ns.size() > kHistorySteps) s.history_ns.pop_front();
  }
  return changed;
}

std::vector<IndividualScore::LogLine> IndividualScore::on_step(const StepView& step, bool traced) {
  std::vector<LogLine> lines;
  const std::string window = " on " + std::to_string(sustain_min_) + "+ of the last " + std::to_string(sustain_window_) +
                             " steps";
  if (observe(step_time_, step.duration_ns(), step.step)) {
    const Signal& s = step_time_;
    if (s.reported) {
      lines.push_back({true, "individual_score: step time at " + score_text(*s.score) + " of this rank's best recent (" +
                      ms_text(s.current_ns) + " vs " + ms_text(s.best_ns) + ")" + window +
                      ": this rank slowed down against its own history. Fix: read this rank's findings and its "
                      "host (input pipeline, CPU contention, GPU throttling, a noisy neighbour); if every rank's "
                      "stepwatch_individual_score dropped together, the cause is shared (workload change, network, "
                      "storage)."});
    } else {
      lines.push_back({false, "individual_score: step time recovered (" + score_text(*s.score) +
                      " of the best recent; lowest " + score_text(s.worst_score) + " since step " +
                      std::to_string(s.since_step) + ")."});
    }
  }
  // Steps without GPU data, or without collectives, say nothing about collective wait.
  if (traced && step.comm_ns > 0 && observe(collective_, step.comm_ns, step.step)) {
    const Signal& s = collective_;
    if (s.reported) {
      lines.push_back({true, "individual_score: collective wait at " + score_text(*s.score) +
                      " of this rank's best recent (NCCL " + ms_text(s.current_ns) + " vs " + ms_text(s.best_ns) +
                      " per step)" + window +
                      ": this rank waits longer inside collectives for a late peer or a slower link. Fix: the "
                      "straggler is the rank whose step-time score dropped (compare stepwatch_individual_score "
                      "across ranks); if none did, check the network (NCCL_DEBUG=INFO, link errors, "
                      "nvidia-smi topo -m)."});
    } else {
      lines.push_back({false, "individual_score: collective wait recovered (" + score_text(*s.score) +
                      " of the best recent; lowest " + score_text(s.worst_score) + " since step " +
                      std::to_string(s.since_step) + ")."});
    }
  }
  return lines;
}

}  // namespace stepwatch::live
