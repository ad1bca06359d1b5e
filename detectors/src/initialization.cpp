// initialization — one-off start-up work inside the capture, reported as such.
// A capture that starts with the process holds CUDA context creation (the first CUDA call can take
// tens of seconds), lazy module loading (a kernel's first launch loads its module), allocator and
// cuDNN set-up, stream creation: paid once, not a fault of the loop. Judged as a step it reads as a
// giant hidden sync with ".item()" advice; dropped, the summary's busy % disagrees with every other
// tool. The step pipeline hands over the time outside the steps (RunView::before_first /
// after_last) and the first step's initialization (measured as warm-up, not judged, when it covered
// half of that step); this run-level detector reports them once, at the first step.
// Cost: the GPU idle while initialization calls (outside_steps.h: long CUDA calls of an
// initialization kind) ran — before the first step, after the last, and in a first step that was
// not judged; its share is of the whole data. Never counted in the steps' goodput tax.
// Threshold: the common rule against the whole data (>= 5% of it and >= 1 ms). Severity info, or
// warning from the critical share (25%).
#include "initialization.h"

#include <map>

#include "detector_util.h"

namespace stepwatch {
namespace {

struct Tally {
  std::map<InitKind, int64_t> idle_by_kind;
  std::map<InitKind, std::string> example;  // the longest call of each kind
  std::map<InitKind, int64_t> example_ns;
  std::vector<std::string> calls;
  std::vector<int64_t> call_us;
};

void add(Tally& t, const std::vector<InitCall>& calls) {
  for (const InitCall& c : calls) {
    t.idle_by_kind[c.kind] += c.gpu_idle_ns;
    if (c.duration_ns > t.example_ns[c.kind]) {
      t.example_ns[c.kind] = c.duration_ns;
      t.example[c.kind] = c.name;
    }
    if (t.calls.size() < 8) {
      t.calls.push_back(c.name);
      t.call_us.push_back(c.duration_ns / 1000);
    }
  }
}

std::string fix_text(const ProgramStack& stack) {
  if (stack.pytorch()) {
    return "nothing in the loop: measure after warm-up — torch.profiler's schedule(wait=..., warmup=..., "
           "active=...), benchmark iterations after a warm-up pass; CUDA_MODULE_LOADING=EAGER moves module loading "
           "to start-up";
  }
  return "nothing in the loop: start the capture after warm-up (nsys --capture-range=cudaProfilerApi or an NVTX "
         "range), time iterations after a warm-up pass; CUDA_MODULE_LOADING=EAGER moves module loading to "
         "start-up";
}

}  // namespace

InitializationDetector::InitializationDetector(const AnalysisConfig& config)
    : thresholds_(config.thresholds_for(std::string(kId))) {}

void InitializationDetector::on_finish(const RunView& run, FindingSink& sink) {
  if (run.data_ns <= 0) return;
  Tally t;
  add(t, run.before_first.init_calls);
  if (run.first_step_warmup) add(t, run.first_step_init);
  add(t, run.after_last.init_calls);
  const int64_t cost_ns = run.before_first.init_idle_ns + run.after_last.init_idle_ns +
                          (run.first_step_warmup ? run.first_step_init_idle_ns : 0);
  const double cost_pct = 100.0 * double(cost_ns) / double(run.data_ns);
  if (cost_ns <= 0 || cost_pct < thresholds_.min_pct || ms_of(cost_ns) < thresholds_.min_ms) return;

  std::string what;
  for (const auto& [kind, ns] : t.idle_by_kind) {
    what += (what.empty() ? "" : ", ") + std::string(to_string(kind)) + " " + format_ms(ns) + " (" + t.example[kind] +
            " " + format_ms(t.example_ns[kind]) + ")";
  }
  auto busy_pct = [](const OutsideView& o) {
    return o.duration_ns() > 0 ? 100.0 * double(o.busy_ns) / double(o.duration_ns()) : 0.0;
  };
  std::string where;
  if (!run.before_first.empty()) {
    where += "; " + format_ms(run.before_first.duration_ns()) + " before the first step (GPU busy " +
             format_pct(busy_pct(run.before_first)) + ")";
  }
  if (run.first_step_warmup && run.first_step_init_idle_ns > 0) {
    where += "; the first step (" + format_ms(run.first_step_ns) + ") was mostly initialization and was measured as "
             "warm-up, not judged";
  }
  if (!run.after_last.empty()) where += "; " + format_ms(run.after_last.duration_ns()) + " after the last step";
  Finding f;
  f.detector = std::string(kId);
  f.rank = run.rank;
  f.step = run.first_step;
  f.cost_ms = ms_of(cost_ns);
  f.cost_pct = cost_pct;
  f.severity = cost_pct >= thresholds_.critical_pct ? Severity::kWarning : Severity::kInfo;
  f.established = true;
  f.tax_share = TaxShare::kOverlapping;
  f.message = "one-off initialization kept the GPU idle " + format_ms(cost_ns) + " (" + format_pct(cost_pct) +
              " of the " + format_ms(run.data_ns) + " trace): " + what + where +
              ". Paid once per process, not per step: the step findings leave it out. Fix: " + fix_text(run.stack) +
              ".";
  f.with("init_idle_ms", ms3_of(cost_ns))
      .with("before_first_step_ms", ms3_of(run.before_first.duration_ns()))
      .with("after_last_step_ms", ms3_of(run.after_last.duration_ns()))
      .with("first_step_warmup", int64_t{run.first_step_warmup ? 1 : 0})
      .with("calls", std::move(t.calls))
      .with("call_us", std::move(t.call_us));
  for (const auto& [kind, ns] : t.idle_by_kind) {
    std::string key(to_string(kind));
    for (char& c : key) c = c == ' ' || c == '-' ? '_' : c;
    f.with(key + "_ms", ms3_of(ns));
  }
  sink.emit(std::move(f));
}

}  // namespace stepwatch
