#include "stepwatch/core/step_sources.h"

#include <algorithm>
#include <limits>

namespace stepwatch {

void DataExtent::add(const Event& e) {
  any_.start = std::min(any_.start, e.start_ns);
  any_.end = std::max(any_.end, e.end_ns);
  if (!e.is_gpu_record() && e.kind != EventKind::kApiCall && e.kind != EventKind::kSync) return;
  core_.start = std::min(core_.start, e.start_ns);
  core_.end = std::max(core_.end, e.end_ns);
}

Interval DataExtent::get() const {
  if (core_.start <= core_.end) return core_;
  if (any_.start <= any_.end) return any_;
  return {0, 0};
}

StepSources::StepSources(const AnalysisConfig& config)
    : step_regex_(config.step_pattern, std::regex::ECMAScript | std::regex::optimize) {}

bool StepSources::matches_step_pattern(std::string_view name) const {
  return std::regex_search(name.begin(), name.end(), step_regex_);
}

StepSource StepSources::source() const {
  switch (winner_) {
    case Winner::kExplicitRanges:
    case Winner::kMarks: return StepSource::kExplicit;
    case Winner::kRanges: return StepSource::kRange;
    default: return StepSource::kWholeTrace;
  }
}

void StepSources::promote(Winner w) {
  if (w <= winner_) return;
  winner_ = w;
  ordinal_ = 0;
  if (w == Winner::kExplicitRanges) matched_name_ = "stepwatch_step_begin/end";
  if (w == Winner::kMarks) matched_name_ = "stepwatch_step_begin";
}

void StepSources::observe(std::span<const Event> events, const NameTable& names) {
  for (const Event& e : events) {
    extent_.add(e);
    if (e.kind == EventKind::kStepMark) {
      marks_.push_back(StepWindow{e.start_ns, e.start_ns, e.step, StepSource::kExplicit});
      promote(Winner::kMarks);
      continue;
    }
    if (e.kind != EventKind::kRange || e.has_flag(event_flags::kOnDevice) || e.end_ns <= e.start_ns) continue;
    if (e.has_flag(event_flags::kExplicitStep)) {
      explicit_ranges_.push_back(StepWindow{e.start_ns, e.end_ns, e.step, StepSource::kExplicit});
      promote(Winner::kExplicitRanges);
      continue;
    }
    auto [it, inserted] = match_cache_.try_emplace(e.name, false);
    if (inserted) it->second = matches_step_pattern(names.view(e.name));
    if (!it->second) continue;
    const int64_t number = e.step >= 0 ? e.step : step_number_from_name(names.view(e.name));
    pattern_ranges_.push_back(StepWindow{e.start_ns, e.end_ns, number, StepSource::kRange});
    if (winner_ == Winner::kNone) matched_name_ = std::string(names.view(e.name));
    promote(Winner::kRanges);
  }
}

std::vector<StepWindow> StepSources::take_ranges(std::vector<StepWindow>& pending, StepSource source,
                                                 int64_t after_ns, int64_t limit_ns) {
  // Outer ranges first at equal starts, so that the nested one is recognised as nested.
  std::sort(pending.begin(), pending.end(), [](const StepWindow& a, const StepWindow& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<StepWindow> out;
  std::vector<StepWindow> keep;
  int64_t outer_end = after_ns;
  bool blocked = false;  // a range still open past the limit holds back everything after it
  for (const StepWindow& r : pending) {
    if (r.end_ns <= outer_end) continue;  // nested in an outer step, or judged already
    if (blocked || r.end_ns > limit_ns) {
      blocked = true;
      keep.push_back(r);
      continue;
    }
    outer_end = r.end_ns;
    StepWindow w = r;
    w.source = source;
    if (w.number < 0) w.number = ordinal_;
    ++ordinal_;
    out.push_back(w);
  }
  pending.swap(keep);
  return out;
}

std::vector<StepWindow> StepSources::take_marks(int64_t after_ns, int64_t limit_ns, bool final) {
  std::sort(marks_.begin(), marks_.end(),
            [](const StepWindow& a, const StepWindow& b) { return a.start_ns < b.start_ns; });
  std::erase_if(marks_, [&](const StepWindow& m) { return m.start_ns < after_ns; });
  std::vector<StepWindow> out;
  size_t used = 0;
  for (size_t i = 0; i < marks_.size(); ++i) {
    const bool last = i + 1 == marks_.size();
    if (last && !final) break;  // the open step ends at the next mark
    const int64_t end = last ? std::max(extent_.get().end, marks_[i].start_ns) : marks_[i + 1].start_ns;
    if (end > limit_ns) break;
    used = i + 1;
    if (end <= marks_[i].start_ns) continue;  // two marks at one instant: no step between them
    StepWindow w{marks_[i].start_ns, end, marks_[i].number, StepSource::kExplicit};
    if (w.number < 0) w.number = ordinal_;
    ++ordinal_;
    out.push_back(w);
  }
  marks_.erase(marks_.begin(), marks_.begin() + static_cast<std::ptrdiff_t>(used));
  return out;
}

std::vector<StepWindow> StepSources::take_ready(int64_t after_ns, int64_t limit_ns, bool final) {
  switch (winner_) {
    case Winner::kExplicitRanges:
      marks_.clear();
      pattern_ranges_.clear();
      return take_ranges(explicit_ranges_, StepSource::kExplicit, after_ns, limit_ns);
    case Winner::kMarks:
      pattern_ranges_.clear();
      return take_marks(after_ns, limit_ns, final);
    case Winner::kRanges: return take_ranges(pattern_ranges_, StepSource::kRange, after_ns, limit_ns);
    default: return {};
  }
}

}  // namespace stepwatch
