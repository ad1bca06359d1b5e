#include "core/step_inference.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

namespace stepwatch {
namespace {

constexpr std::string_view kOptimizerPrefix = "Optimizer.step#";
constexpr std::string_view kOptimizerSuffix = ".step";

bool is_optimizer_step(std::string_view name) {
  return name.size() > kOptimizerPrefix.size() + kOptimizerSuffix.size() && name.starts_with(kOptimizerPrefix) &&
         name.ends_with(kOptimizerSuffix);
}

// Where the host's last CUDA call ended (the data's end without calls). The last inferred step
// ends there, as a step range would: the GPU work still queued then is the drain of the capture.
int64_t host_end(std::span<const Event> events, Interval extent) {
  int64_t end = std::numeric_limits<int64_t>::min();
  for (const Event& e : events) {
    if (e.kind == EventKind::kApiCall) end = std::max(end, e.end_ns);
  }
  return end == std::numeric_limits<int64_t>::min() ? extent.end : end;
}

// Windows between consecutive boundaries; the partial windows at either end when they look like
// a step. Empty when fewer than two windows result.
std::vector<StepWindow> windows_between(std::vector<int64_t> bounds, Interval extent, int64_t host_end) {
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<StepWindow> out;
  if (bounds.size() < 2) return out;
  std::vector<int64_t> durations;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) durations.push_back(bounds[i + 1] - bounds[i]);
  std::vector<int64_t> sorted = durations;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double median = double(sorted[sorted.size() / 2]);
  auto looks_like_a_step = [&](int64_t d) { return double(d) >= 0.5 * median && double(d) <= 1.5 * median; };
  auto add = [&](int64_t s, int64_t e) {
    StepWindow w;
    w.start_ns = s;
    w.end_ns = e;
    w.number = static_cast<int64_t>(out.size());
    w.source = StepSource::kInferred;
    out.push_back(w);
  };
  if (extent.start < bounds.front() && looks_like_a_step(bounds.front() - extent.start)) add(extent.start, bounds.front());
  for (size_t i = 0; i + 1 < bounds.size(); ++i) add(bounds[i], bounds[i + 1]);
  if (host_end > bounds.back() && looks_like_a_step(host_end - bounds.back())) add(bounds.back(), host_end);
  if (out.size() < 2) out.clear();
  return out;
}

std::optional<StepInference> from_optimizer_ranges(std::span<const Event> events, const NameTable& names,
                                                   Interval extent, const StepInferenceParams& params) {
  std::unordered_map<NameId, bool> is_opt;
  std::vector<const Event*> ranges;
  for (const Event& e : events) {
    if (e.kind != EventKind::kRange || e.has_flag(event_flags::kOnDevice) || e.end_ns <= e.start_ns) continue;
    auto [it, inserted] = is_opt.try_emplace(e.name, false);
    if (inserted) it->second = is_optimizer_step(names.view(e.name));
    if (it->second) ranges.push_back(&e);
  }
  std::sort(ranges.begin(), ranges.end(), [](const Event* a, const Event* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  // Outermost only: the same range recorded twice (cpu_op + user_annotation) is one optimizer step.
  std::vector<int64_t> ends;
  int64_t outer_end = std::numeric_limits<int64_t>::min();
  for (const Event* r : ranges) {
    if (r->end_ns <= outer_end) continue;
    outer_end = r->end_ns;
    ends.push_back(r->end_ns);
  }
  if (static_cast<int>(ends.size()) < params.min_optimizer_ranges) return std::nullopt;
  StepInference inf;
  inf.method = kInferredFromOptimizer;
  inf.steps = windows_between(ends, extent, host_end(events, extent));
  if (inf.steps.empty()) return std::nullopt;
  inf.description = "the ends of " + std::to_string(ends.size()) + " optimizer ranges ('" +
                    std::string(names.view(ranges.front()->name)) + "')";
  return inf;
}

struct Record {
  int64_t key = 0;  // launch order: the launching call's start, else the record's start
  const Event* event = nullptr;
  const Event* launcher = nullptr;
};

std::optional<StepInference> from_kernel_period(std::span<const Event> events, Interval extent,
                                                const StepInferenceParams& params) {
  // Launching calls by correlation (the earliest call of a correlation stands for it).
  std::unordered_map<uint64_t, const Event*> call_of;
  std::unordered_map<uint32_t, std::vector<const Event*>> calls_by_thread;
  for (const Event& e : events) {
    if (e.kind != EventKind::kApiCall) continue;
    calls_by_thread[e.thread].push_back(&e);
    if (e.correlation == 0) continue;
    auto [it, inserted] = call_of.try_emplace(e.correlation, &e);
    if (!inserted && e.start_ns < it->second->start_ns) it->second = &e;
  }
  for (auto& [thread, list] : calls_by_thread) {
    std::sort(list.begin(), list.end(), [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  }
  std::vector<Record> recs;
  size_t launched = 0;
  for (const Event& e : events) {
    if (!e.is_gpu_record()) continue;
    Record r{e.start_ns, &e, nullptr};
    if (e.correlation != 0) {
      auto it = call_of.find(e.correlation);
      if (it != call_of.end()) r.launcher = it->second;
    }
    launched += r.launcher != nullptr;
    recs.push_back(r);
  }
  // Launch order is program order; GPU order interleaves streams. Records without their call in
  // the data (queued before the capture began) are out of program order: dropped when most
  // records have calls; with few calls, GPU order for all.
  const bool by_launch = 2 * launched >= recs.size() && launched > 0;
  if (by_launch) {
    std::erase_if(recs, [](const Record& r) { return r.launcher == nullptr; });
    for (Record& r : recs) r.key = r.launcher->start_ns;
  } else {
    for (Record& r : recs) r.launcher = nullptr;
  }
  std::sort(recs.begin(), recs.end(), [](const Record& a, const Record& b) {
    return a.key != b.key ? a.key < b.key : a.event->start_ns < b.event->start_ns;
  });
  const size_t total = recs.size();
  const size_t n = std::min(total, params.max_records);
  const auto min_period = static_cast<size_t>(std::max(params.min_period_records, 1));
  const auto min_reps = static_cast<size_t>(std::max(params.min_repetitions, 2));
  if (n < min_period * min_reps) return std::nullopt;

  // Candidate periods: distances between consecutive occurrences of a name.
  std::unordered_map<NameId, size_t> last_seen;
  std::unordered_map<size_t, int> distance_count;
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = last_seen.try_emplace(recs[i].event->name, i);
    if (inserted) continue;
    const size_t d = i - it->second;
    it->second = i;
    if (d >= min_period && d * min_reps <= n) ++distance_count[d];
  }
  std::vector<std::pair<size_t, int>> candidates;
  for (const auto& [d, count] : distance_count) {
    if (count >= 2) candidates.emplace_back(d, count);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  if (candidates.size() > params.max_candidates) candidates.resize(params.max_candidates);
  std::sort(candidates.begin(), candidates.end());
  if (candidates.empty()) return std::nullopt;

  std::vector<double> score(candidates.size(), 0.0);
  double best = 0.0;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const size_t p = candidates[c].first;
    size_t same = 0;
    for (size_t i = 0; i + p < n; ++i) same += recs[i].event->name == recs[i + p].event->name;
    score[c] = double(same) / double(n - p);
    best = std::max(best, score[c]);
  }
  size_t period = 0;
  double match = 0.0;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (score[c] >= params.min_match && score[c] >= best - params.match_slack) {
      period = candidates[c].first;
      match = score[c];
      break;
    }
  }
  if (period == 0) return std::nullopt;

  // The host pause before each record (or the GPU idle before it, in GPU order), and the time a
  // step beginning at that record would begin.
  std::vector<int64_t> pause(total, 0), begin(total, 0);
  std::vector<uint8_t> known(total, 0);  // whether anything precedes the record (its pause is known)
  int64_t gpu_end = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < total; ++i) {
    const Event& e = *recs[i].event;
    if (const Event* call = recs[i].launcher) {
      const auto& list = calls_by_thread[call->thread];
      auto it = std::lower_bound(list.begin(), list.end(), call->start_ns,
                                 [](const Event* x, int64_t t) { return x->start_ns < t; });
      begin[i] = call->start_ns;
      if (it != list.begin()) {
        const int64_t prev_end = (*std::prev(it))->end_ns;
        known[i] = 1;
        if (prev_end <= call->start_ns) {
          pause[i] = call->start_ns - prev_end;
          begin[i] = prev_end;
        }
      }
    } else {
      begin[i] = e.start_ns;
      known[i] = gpu_end > std::numeric_limits<int64_t>::min();
      if (known[i] && gpu_end < e.start_ns) {
        pause[i] = e.start_ns - gpu_end;
        begin[i] = gpu_end;
      }
      gpu_end = std::max(gpu_end, e.end_ns);
    }
  }

  // The phase: positions relative to a reference period in the middle of the sample (a warm-up
  // head does not decide it).
  const size_t ref = (n / 2 / period) * period;
  std::vector<double> mean_pause(period, 0.0);
  for (size_t j = 0; j < period; ++j) {
    double sum = 0;
    int count = 0;
    for (size_t i = j; i < n; i += period) {
      sum += double(pause[i]);
      ++count;
    }
    mean_pause[j] = count > 0 ? sum / count : 0.0;
  }
  auto is_h2d = [](const Event& e) { return e.kind == EventKind::kMemcpy && e.copy_kind() == CopyKind::kHtoD; };
  // mean_pause is indexed by position mod period; the reference period starts at a multiple of it.
  size_t phase = period;
  for (size_t j = 0; j < period; ++j) {
    if (ref + j >= total || !is_h2d(*recs[ref + j].event)) continue;
    if (phase == period || mean_pause[j] > mean_pause[phase]) phase = j;
  }
  if (phase == period) {
    phase = 0;
    for (size_t j = 1; j < period; ++j) {
      if (mean_pause[j] > mean_pause[phase]) phase = j;
    }
  }
  const NameId phase_name = recs[ref + phase].event->name;

  // Cuts: from the reference occurrence, the phase record nearest to one period later (and
  // earlier), while the loop lasts.
  const auto reach = static_cast<int64_t>(std::max<size_t>(period / 4, 1));
  auto nearest = [&](int64_t expected) -> size_t {
    for (int64_t k = 0; k <= reach; ++k) {
      for (int64_t at : {expected - k, expected + k}) {
        if (at >= 0 && at < static_cast<int64_t>(total) && recs[static_cast<size_t>(at)].event->name == phase_name) {
          return static_cast<size_t>(at);
        }
      }
    }
    return total;
  };
  const auto p = static_cast<int64_t>(period);
  std::vector<size_t> cuts{ref + phase};
  for (size_t pos = ref + phase;;) {
    const size_t next = nearest(static_cast<int64_t>(pos) + p);
    if (next >= total || next <= pos) break;
    cuts.push_back(next);
    pos = next;
  }
  for (size_t pos = ref + phase;;) {
    const size_t prev = nearest(static_cast<int64_t>(pos) - p);
    if (prev >= pos) break;  // none (total) or not earlier
    cuts.push_back(prev);
    pos = prev;
  }
  std::vector<int64_t> bounds;
  // A cut with nothing before it in the data (the capture's first call) does not show where its
  // step began (the data wait before it is not in the data): the head window covers it.
  for (size_t c : cuts) {
    if (known[c]) bounds.push_back(begin[c]);
  }
  StepInference inf;
  inf.method = kInferredFromKernelPeriod;
  inf.period_records = static_cast<int>(period);
  inf.match = match;
  inf.steps = windows_between(std::move(bounds), extent, host_end(events, extent));
  if (inf.steps.empty()) return std::nullopt;
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * match);
  inf.description = "the period of the GPU " + std::string(by_launch ? "launch" : "record") + " sequence (" +
                    std::to_string(period) + " records per step, " + pct + " repeat one period later)";
  return inf;
}

}  // namespace

std::optional<StepInference> infer_steps(std::span<const Event> events, const NameTable& names, Interval extent,
                                         const StepInferenceParams& params) {
  if (auto inf = from_optimizer_ranges(events, names, extent, params)) return inf;
  return from_kernel_period(events, extent, params);
}

}  // namespace stepwatch
