#include <algorithm>
#include <limits>
#include <regex>
#include <unordered_map>

#include "core/step_inference.h"
#include "stepwatch/core/interval.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

std::string_view to_string(StepSource s) {
  switch (s) {
    case StepSource::kExplicit: return "explicit";
    case StepSource::kRange: return "range";
    case StepSource::kInferred: return "inferred";
    default: return "whole_trace";
  }
}

int64_t step_number_from_name(std::string_view name) {
  size_t end = name.size();
  size_t begin = end;
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 18) return -1;
  int64_t n = 0;
  for (size_t i = begin; i < end; ++i) n = n * 10 + (name[i] - '0');
  return n;
}

StepAssembler::StepAssembler(const AnalysisConfig& config)
    : step_regex_(config.step_pattern, std::regex::ECMAScript | std::regex::optimize) {}

bool StepAssembler::matches_step_pattern(std::string_view name) const {
  return std::regex_search(name.begin(), name.end(), step_regex_);
}

namespace {

// Extent of the data that matters for a pseudo-step: GPU records and host CUDA calls.
// Long host annotations (a whole-benchmark range) would otherwise stretch it.
Interval data_extent(std::span<const Event> events) {
  Interval ext{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  for (const Event& e : events) {
    if (!e.is_gpu_record() && e.kind != EventKind::kApiCall && e.kind != EventKind::kSync) continue;
    ext.start = std::min(ext.start, e.start_ns);
    ext.end = std::max(ext.end, e.end_ns);
  }
  if (ext.start > ext.end) {
    for (const Event& e : events) {
      ext.start = std::min(ext.start, e.start_ns);
      ext.end = std::max(ext.end, e.end_ns);
    }
  }
  if (ext.start > ext.end) ext = {0, 0};
  return ext;
}

std::vector<StepWindow> windows_from_ranges(std::vector<const Event*> ranges, const NameTable& names,
                                            StepSource source) {
  std::sort(ranges.begin(), ranges.end(), [](const Event* a, const Event* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  std::vector<StepWindow> steps;
  int64_t outer_end = std::numeric_limits<int64_t>::min();
  for (const Event* r : ranges) {
    // Keep the outermost level only: a `step` range nested in `ProfilerStep#N`, or the same
    // range recorded twice (cpu_op + user_annotation), is the same step.
    if (r->end_ns <= outer_end) continue;
    outer_end = r->end_ns;
    StepWindow w;
    w.start_ns = r->start_ns;
    w.end_ns = r->end_ns;
    w.source = source;
    w.number = r->step >= 0 ? r->step : step_number_from_name(names.view(r->name));
    steps.push_back(w);
  }
  // Steps without numbers get ordinals; duplicated numbers keep their order.
  bool all_numbered = std::all_of(steps.begin(), steps.end(), [](const StepWindow& w) { return w.number >= 0; });
  if (!all_numbered) {
    for (size_t i = 0; i < steps.size(); ++i) steps[i].number = static_cast<int64_t>(i);
  }
  return steps;
}

}  // namespace

Segmentation StepAssembler::segment(std::span<const Event> events, const NameTable& names) const {
  Segmentation seg;

  // 1. Explicit steps from the C API: ranges first, then marks.
  std::vector<const Event*> explicit_ranges;
  std::vector<const Event*> marks;
  for (const Event& e : events) {
    if (e.kind == EventKind::kRange && e.has_flag(event_flags::kExplicitStep)) explicit_ranges.push_back(&e);
    if (e.kind == EventKind::kStepMark) marks.push_back(&e);
  }
  if (!explicit_ranges.empty()) {
    seg.steps = windows_from_ranges(std::move(explicit_ranges), names, StepSource::kExplicit);
    seg.source = StepSource::kExplicit;
    seg.matched_name = "stepwatch_step_begin/end";
    return seg;
  }
  if (!marks.empty()) {
    std::sort(marks.begin(), marks.end(), [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
    const Interval ext = data_extent(events);
    for (size_t i = 0; i < marks.size(); ++i) {
      StepWindow w;
      w.start_ns = marks[i]->start_ns;
      w.end_ns = i + 1 < marks.size() ? marks[i + 1]->start_ns : std::max(ext.end, w.start_ns);
      w.number = marks[i]->step >= 0 ? marks[i]->step : static_cast<int64_t>(i);
      w.source = StepSource::kExplicit;
      if (w.end_ns > w.start_ns) seg.steps.push_back(w);
    }
    seg.source = StepSource::kExplicit;
    seg.matched_name = "stepwatch_step_begin";
    if (!seg.steps.empty()) return seg;
  }

  // 2. Host ranges matching the step pattern.
  std::unordered_map<NameId, bool> match_cache;
  std::vector<const Event*> step_ranges;
  for (const Event& e : events) {
    if (e.kind != EventKind::kRange || e.has_flag(event_flags::kOnDevice) || e.end_ns <= e.start_ns) continue;
    auto [it, inserted] = match_cache.try_emplace(e.name, false);
    if (inserted) {
      it->second = matches_step_pattern(names.view(e.name));
    }
    if (it->second) step_ranges.push_back(&e);
  }
  if (!step_ranges.empty()) {
    seg.matched_name = std::string(names.view(step_ranges.front()->name));
    seg.steps = windows_from_ranges(std::move(step_ranges), names, StepSource::kRange);
    seg.source = StepSource::kRange;
    return seg;
  }

  // 3. No marks: steps inferred from the loop (optimizer ranges, else the period of the GPU
  // record sequence; step_inference.h).
  const Interval ext = data_extent(events);
  if (auto inferred = infer_steps(events, names, ext)) {
    seg.steps = std::move(inferred->steps);
    seg.source = StepSource::kInferred;
    seg.matched_name = std::move(inferred->description);
    seg.inferred_from = inferred->method;
    seg.inferred_period = inferred->period_records;
    return seg;
  }

  // 4. No period either: one pseudo-step over the whole data.
  seg.steps.push_back(StepWindow{ext.start, ext.end, 0, StepSource::kWholeTrace});
  seg.source = StepSource::kWholeTrace;
  return seg;
}

}  // namespace stepwatch
