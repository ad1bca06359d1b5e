#include "stepwatch/ranks/rank_merge.h"

#include <algorithm>
#include <cstdlib>
#include <array>
#include <cmath>
#include <map>

#include "stepwatch/core/detector.h"
#include "stepwatch/core/stats.h"

namespace stepwatch {
namespace {

constexpr std::string_view kDetectorId = kLateRankId;
// A late rank's cause must account for at least this share of its delay; else "unexplained".
constexpr double kMinExplainedShare = 0.5;
constexpr size_t kMinRunLevelSteps = 3;
// By default late means >= twice the common min_pct of the step (10%): ranks of a balanced job
// arrive a few % apart from kernel-duration jitter alone.
constexpr double kLateStepShare = 2.0;
// A late rank that waited inside the collective for at least this share of the arrival spread (and
// at least the common min_ms) was itself waiting for a later one: not a straggler.
constexpr double kMaterialWaitShare = 0.25;


// What can make a rank late, read from its step breakdown (ARCHITECTURE.md "Timeline analysis").
struct CausePart {
  std::string_view name;
  int64_t (*of)(const StepView&);
  std::string_view what;  // "... took X more on rank R"
  std::string_view fix;
};
const std::array<CausePart, 5> kCauses = {{
    {"compute", [](const StepView& v) { return v.compute_ns; }, "GPU compute (kernels busy)",
     "the same work runs slower on that GPU, or it got more work: check its clocks, power and temperature "
     "(nvidia-smi -q -d PERFORMANCE,TEMPERATURE) and uneven work per rank (sequence lengths, bucketing, "
     "load imbalance across shards)"},
    {"input", [](const StepView& v) { return v.idle[IdleCause::kInput]; }, "GPU idle waiting for input data",
     "its input pipeline is slower: more/persistent DataLoader workers and prefetch on that rank, check its "
     "storage/network reads and CPU contention on its node, balance the data shards"},
    {"host",
     [](const StepView& v) { return v.idle[IdleCause::kHost] + v.idle[IdleCause::kLaunch]; },
     "GPU idle while the host ran Python or launched work",
     "its host thread is slower: CPU contention on that node (other processes, CPU/NUMA affinity), rank-specific "
     "host work (logging, evaluation, GC on that rank only)"},
    {"sync", [](const StepView& v) { return v.idle[IdleCause::kSync]; }, "GPU idle after blocking syncs",
     "it blocks on the GPU where the others do not: rank-specific .item()/.cpu(), metrics or checkpointing "
     "(often rank 0 only); move them off the step or to every rank asynchronously"},
    {"copy", [](const StepView& v) { return v.copy_only_ns; }, "copies running alone on the GPU",
     "its host-device copies are slower: PCIe/NUMA placement of that GPU, pinned memory, copy overlap"},
}};
constexpr std::string_view kUnexplainedFix =
    "nothing in its step breakdown differs: look for a late launch or a slow link on that rank "
    "(NCCL_DEBUG=INFO, nvidia-smi topo -m, NIC counters)";

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

struct Attribution {
  std::string cause;
  int64_t excess_ns = 0;
};

// The largest excess of the late rank's step breakdown over the median of the on-time ranks'.
Attribution attribute(const StepView& late, const std::vector<const StepView*>& on_time, int64_t delay_ns) {
  Attribution a{"unexplained", 0};
  if (on_time.empty()) return a;
  for (const CausePart& part : kCauses) {
    std::vector<int64_t> others;
    for (const StepView* v : on_time) others.push_back(part.of(*v));
    const int64_t excess = part.of(late) - median_of(others);
    if (excess > a.excess_ns) a = {std::string(part.name), excess};
  }
  if (double(a.excess_ns) < kMinExplainedShare * double(delay_ns)) a.cause = "unexplained";
  return a;
}

const CausePart* cause_part(std::string_view cause) {
  for (const CausePart& p : kCauses) {
    if (p.name == cause) return &p;
  }
  return nullptr;
}

std::string fix_for(std::string_view cause) {
  const CausePart* p = cause_part(cause);
  return std::string(p != nullptr ? p->fix : kUnexplainedFix);
}

std::string differs_text(const std::vector<int>& late, std::string_view cause, int64_t excess_ns) {
  const CausePart* p = cause_part(cause);
  const std::string who = rank_list(late);
  if (p == nullptr) return "Nothing in " + who + "'s step breakdown explains it.";
  return "What differs on " + who + ": " + std::string(p->name) + " — " + std::string(p->what) + " " +
         format_ms(excess_ns) + " more than on the other ranks.";
}

std::vector<int> on_time_ranks(const MergedStep& s) {
  std::vector<int> out;
  for (const RankArrival& a : s.arrivals) {
    if (!std::binary_search(s.late_ranks.begin(), s.late_ranks.end(), a.rank)) out.push_back(a.rank);
  }
  return out;
}

int64_t median_wait_of_on_time(const MergedStep& s) {
  std::vector<int64_t> waits;
  for (const RankArrival& a : s.arrivals) {
    if (!std::binary_search(s.late_ranks.begin(), s.late_ranks.end(), a.rank)) waits.push_back(a.wait_ns);
  }
  return median_of(waits);
}

void add_evidence(Finding& f, const std::vector<int>& late, int64_t delay_ns, const std::string& cause,
                  CollectiveType collective, uint64_t bytes, int64_t spread_ns, int64_t waited_ns, int64_t step_ns,
                  int64_t excess_ns) {
  f.with("straggler_ranks", std::vector<int64_t>(late.begin(), late.end()))
      .with("delay_ms", ms3_of(delay_ns))
      .with("cause", cause)
      .with("collective", std::string(to_string(collective)))
      .with("spread_ms", ms3_of(spread_ns))
      .with("waited_ms", ms3_of(waited_ns))
      .with("step_ms", ms3_of(step_ns))
      .with("cause_excess_ms", ms3_of(excess_ns));
  if (bytes > 0) f.with("collective_bytes", static_cast<int64_t>(bytes));
}

Severity severity_of(double pct, const DetectorThresholds& t) {
  return pct >= t.critical_pct ? Severity::kCritical : Severity::kWarning;
}

Finding step_finding(const MergedStep& s, const DetectorThresholds& t) {
  Finding f;
  f.detector = std::string(kDetectorId);
  f.rank = s.late_ranks.front();
  f.step = s.step;
  f.cost_ms = double(s.delay_ns) / 1e6;
  f.cost_pct = s.step_ns > 0 ? 100.0 * double(s.delay_ns) / double(s.step_ns) : 0.0;
  f.severity = severity_of(f.cost_pct, t);
  const std::vector<int> waiting = on_time_ranks(s);
  const int64_t waited = median_wait_of_on_time(s);
  f.message = rank_list(s.late_ranks) + " reached the NCCL " + std::string(to_string(s.collective)) + " " +
              format_ms(s.delay_ns) + " after the other ranks (" + format_pct(f.cost_pct) + " of the " +
              format_ms(s.step_ns) + " step; arrival spread " + format_ms(s.spread_ns) + ") while " +
              rank_list(waiting) + " waited inside it (median " + format_ms(waited) + "): straggler. " +
              differs_text(s.late_ranks, s.cause, s.cause_excess_ns) + " Fix: " + fix_for(s.cause) + ".";
  add_evidence(f, s.late_ranks, s.delay_ns, s.cause, s.collective, s.collective_bytes, s.spread_ns, waited, s.step_ns,
               s.cause_excess_ns);
  f.with("steps", int64_t{1});
  std::vector<int64_t> ranks, arrival_us;
  int64_t earliest = s.arrivals.empty() ? 0 : s.arrivals.front().arrival_ns;
  for (const RankArrival& a : s.arrivals) earliest = std::min(earliest, a.arrival_ns);
  for (const RankArrival& a : s.arrivals) {
    ranks.push_back(a.rank);
    arrival_us.push_back((a.arrival_ns - earliest) / 1000);
  }
  f.with("ranks", std::move(ranks)).with("arrival_after_first_us", std::move(arrival_us));
  return f;
}

template <typename T>
T most_frequent(const std::vector<T>& v) {
  std::map<T, int> count;
  for (const T& x : v) ++count[x];
  return std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

// One finding for a set of ranks late on most steps: the pattern, not one line per step.
Finding run_finding(const std::vector<const MergedStep*>& late_steps, size_t judged, const DetectorThresholds& t) {
  const MergedStep& first = *late_steps.front();
  std::vector<int64_t> delays, spreads, waits, step_ns, excess, sizes;
  std::vector<std::string> causes;
  std::vector<CollectiveType> types;
  for (const MergedStep* s : late_steps) {
    delays.push_back(s->delay_ns);
    spreads.push_back(s->spread_ns);
    waits.push_back(median_wait_of_on_time(*s));
    step_ns.push_back(s->step_ns);
    causes.push_back(s->cause);
    types.push_back(s->collective);
    if (s->collective_bytes > 0) sizes.push_back(static_cast<int64_t>(s->collective_bytes));
  }
  const std::string cause = most_frequent(causes);
  for (const MergedStep* s : late_steps) {
    if (s->cause == cause) excess.push_back(s->cause_excess_ns);
  }
  const int64_t delay = median_of(delays), step = median_of(step_ns), waited = median_of(waits);
  const CollectiveType collective = most_frequent(types);
  Finding f;
  f.detector = std::string(kDetectorId);
  f.rank = first.late_ranks.front();
  f.step = first.step;
  f.established = true;
  f.cost_ms = double(delay) / 1e6;
  f.cost_pct = step > 0 ? 100.0 * double(delay) / double(step) : 0.0;
  f.severity = severity_of(f.cost_pct, t);
  f.message = rank_list(first.late_ranks) + " is the straggler on " + std::to_string(late_steps.size()) + " of " +
              std::to_string(judged) + " steps: it reaches the NCCL " + std::string(to_string(collective)) +
              " a median " + format_ms(delay) + " (max " + format_ms(*std::max_element(delays.begin(), delays.end())) +
              ") after the other ranks (" + format_pct(f.cost_pct) + " of the " + format_ms(step) + " step) while " +
              rank_list(on_time_ranks(first)) + " wait inside it (median " + format_ms(waited) + "). " +
              differs_text(first.late_ranks, cause, median_of(excess)) + " Fix: " + fix_for(cause) + ".";
  add_evidence(f, first.late_ranks, delay, cause, collective, static_cast<uint64_t>(median_of(sizes)), median_of(spreads),
               waited, step, median_of(excess));
  f.with("steps", static_cast<int64_t>(late_steps.size()))
      .with("steps_judged", static_cast<int64_t>(judged))
      .with("max_delay_ms", ms3_of(*std::max_element(delays.begin(), delays.end())));
  return f;
}

}  // namespace

DetectorThresholds late_rank_thresholds(const AnalysisConfig& config) {
  const auto it = config.per_detector.find(std::string(kLateRankId));
  if (it != config.per_detector.end()) return it->second;
  DetectorThresholds t = config.default_thresholds;
  t.min_pct *= kLateStepShare;
  return t;
}

MergedAnalysis merge_ranks(const std::vector<RankCollectives>& collectives,
                           const std::vector<const RankResult*>& results, const AnalysisConfig& config) {
  MergedAnalysis out;
  for (const RankCollectives& r : collectives) out.ranks.push_back(r.rank);
  if (collectives.size() < 2 || results.size() != collectives.size()) return out;

  out.clocks = align_clocks(collectives);
  std::vector<size_t> aligned;
  for (size_t i = 0; i < out.clocks.ranks.size(); ++i) {
    RankClock& c = out.clocks.ranks[i];
    // Two runs of one program match collective for collective, step by step: only the traces'
    // wall-clock bases tell another job's trace (a job's ranks start profiling within minutes).
    if (c.aligned && out.clocks.reference >= 0 && static_cast<int>(i) != out.clocks.reference) {
      const int64_t ref_base = collectives[static_cast<size_t>(out.clocks.reference)].clock_base_ns;
      const int64_t base = collectives[i].clock_base_ns;
      constexpr int64_t kMaxBasesApartNs = 6 * 3600 * int64_t{1'000'000'000};
      if (ref_base != 0 && base != 0 && (base - ref_base > kMaxBasesApartNs || ref_base - base > kMaxBasesApartNs)) {
        c.aligned = false;
        c.why_not = "recorded " + std::to_string(std::llabs(base - ref_base) / (3600 * int64_t{1'000'000'000})) +
                    " h apart from rank " + std::to_string(out.clocks.ranks[static_cast<size_t>(out.clocks.reference)].rank) +
                    "'s trace (their clock bases): a trace of another job";
      }
    }
    if (c.aligned) {
      aligned.push_back(i);
    } else {
      out.notes.push_back("rank " + std::to_string(c.rank) + " (" + collectives[i].source + "): " + c.why_not +
                          "; no cross-rank verdict for it");
    }
  }
  if (aligned.size() < 2) {
    out.notes.push_back("fewer than two ranks with matching NCCL collectives: no cross-rank (straggler) verdict");
    return out;
  }

  // Groups: a reference collective and its match on every aligned rank.
  const auto ref = static_cast<size_t>(out.clocks.reference);
  std::map<size_t, std::vector<size_t>> groups;  // reference index -> instance index per aligned rank
  for (size_t k = 0; k < aligned.size(); ++k) {
    for (const CollectivePair& p : out.clocks.ranks[aligned[k]].pairs) {
      std::vector<size_t>& g = groups[p.ref];
      if (g.empty()) g.assign(aligned.size(), SIZE_MAX);
      g[k] = p.other;
    }
  }

  const DetectorThresholds t = late_rank_thresholds(config);
  const RankResult& ref_result = *results[ref];
  // Per reference step, its dominant complete group: the one with the most time inside it.
  struct Dominant {
    int64_t total_ns = 0;
    size_t ref_index = 0;
    const std::vector<size_t>* group = nullptr;
  };
  std::map<int, Dominant> dominant;
  for (const auto& [ref_index, g] : groups) {
    const int ref_step = collectives[ref].collectives[ref_index].step_index;
    if (ref_step < 0) continue;
    int64_t total = 0;
    bool complete = true;
    for (size_t k = 0; k < aligned.size() && complete; ++k) {
      if (g[k] == SIZE_MAX || collectives[aligned[k]].collectives[g[k]].step_index < 0) {
        complete = false;
        break;
      }
      const CollectiveInstance& c = collectives[aligned[k]].collectives[g[k]];
      total += c.end_ns - c.start_ns;
    }
    if (!complete) continue;
    Dominant& best = dominant[ref_step];
    if (best.group == nullptr || total > best.total_ns) best = {total, ref_index, &g};
  }

  for (const auto& [ref_step, best] : dominant) {
    const std::vector<size_t>& g = *best.group;
    MergedStep s;
    s.step = ref_result.steps[static_cast<size_t>(ref_step)].step;
    s.collective = collectives[ref].collectives[best.ref_index].type;
    s.collective_bytes = collectives[ref].collectives[best.ref_index].bytes;
    std::vector<const StepView*> views;
    int64_t shortest = INT64_MAX;
    for (size_t k = 0; k < aligned.size(); ++k) {
      const size_t i = aligned[k];
      const CollectiveInstance& c = collectives[i].collectives[g[k]];
      const StepView& v = results[i]->steps[static_cast<size_t>(c.step_index)];
      RankArrival a;
      a.rank = collectives[i].rank;
      a.step = c.step;
      a.arrival_ns = c.start_ns - out.clocks.ranks[i].offset_ns;
      a.wait_ns = c.end_ns - c.start_ns;
      a.step_ns = v.duration_ns();
      shortest = std::min(shortest, a.wait_ns);
      s.arrivals.push_back(a);
      views.push_back(&v);
    }
    std::vector<int64_t> step_ns;
    int64_t earliest = INT64_MAX, latest = INT64_MIN;
    for (RankArrival& a : s.arrivals) {
      a.wait_ns -= shortest;
      step_ns.push_back(a.step_ns);
      earliest = std::min(earliest, a.arrival_ns);
      latest = std::max(latest, a.arrival_ns);
    }
    s.spread_ns = latest - earliest;
    s.step_ns = median_of(step_ns);
    const double threshold_ns = std::max(t.min_ms * 1e6, t.min_pct / 100.0 * double(s.step_ns));
    // A rank that itself waited materially inside the collective arrived before someone else: it
    // is not the one the others wait for, however late it was against the median.
    const double material_wait_ns = std::max(t.min_ms * 1e6, kMaterialWaitShare * double(s.spread_ns));
    for (RankArrival& a : s.arrivals) {
      std::vector<int64_t> others;
      for (const RankArrival& b : s.arrivals) {
        if (&b != &a) others.push_back(b.arrival_ns);
      }
      a.delay_ns = a.arrival_ns - median_of(others);
      if (double(a.delay_ns) >= threshold_ns && a.delay_ns > 0 && double(a.wait_ns) < material_wait_ns) {
        s.late_ranks.push_back(a.rank);
        s.delay_ns = std::max(s.delay_ns, a.delay_ns);
      }
    }
    std::sort(s.late_ranks.begin(), s.late_ranks.end());
    if (!s.late_ranks.empty()) {
      // The cause of the latest rank, against the ranks that were on time.
      size_t latest_k = 0;
      std::vector<const StepView*> on_time;
      for (size_t k = 0; k < s.arrivals.size(); ++k) {
        if (s.arrivals[k].delay_ns > s.arrivals[latest_k].delay_ns) latest_k = k;
        if (!std::binary_search(s.late_ranks.begin(), s.late_ranks.end(), s.arrivals[k].rank)) {
          on_time.push_back(views[k]);
        }
      }
      const Attribution a = attribute(*views[latest_k], on_time, s.arrivals[latest_k].delay_ns);
      s.cause = a.cause;
      s.cause_excess_ns = a.excess_ns;
    }
    out.steps.push_back(std::move(s));
  }
  if (out.steps.empty()) {
    out.notes.push_back("no step has a collective matched on every aligned rank: no cross-rank (straggler) verdict");
    return out;
  }
  if (!config.is_enabled(std::string(kDetectorId))) return out;

  // The same late set on most steps is one pattern; anything else is reported per step.
  std::map<std::vector<int>, std::vector<const MergedStep*>> by_set;
  for (const MergedStep& s : out.steps) {
    if (!s.late_ranks.empty()) by_set[s.late_ranks].push_back(&s);
  }
  const size_t judged = out.steps.size();
  for (const auto& [set, late_steps] : by_set) {
    if (late_steps.size() >= kMinRunLevelSteps && 2 * late_steps.size() >= judged) {
      out.findings.push_back(run_finding(late_steps, judged, t));
    } else {
      for (const MergedStep* s : late_steps) out.findings.push_back(step_finding(*s, t));
    }
  }
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.step < b.step; });
  return out;
}

}  // namespace stepwatch
