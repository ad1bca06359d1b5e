// Where steps come from, for a stream of events: the one implementation of the documented source
// priority (ARCHITECTURE.md "Step segmentation"), used by the step pipeline live and offline and by
// StepAssembler::segment.
//
// Sources, highest first: C API step ranges (stepwatch_step_begin/end), C API step marks, host
// ranges matching the step pattern. (Inference — optimizer ranges, the kernel period — and the
// whole-trace pseudo-step come after these: step_inference.h, step_pipeline.h.)
//
// Streaming: `observe` notes the step-defining events as they arrive, in any order; `ready` gives
// the windows of the highest-priority source seen so far that end within a limit. A source that
// appears later takes over from its first window; windows already judged stay judged. Given all
// the data at once (offline, or a complete live stream), the result is the batch segmentation:
//  - ranges: the outermost level only (a `step` range nested in `ProfilerStep#N`, or the same
//    range recorded twice, is one step);
//  - marks: [mark, next mark), the last one to the data's end (GPU records and CUDA calls: a long
//    host annotation does not stretch it);
//  - numbers: carried by the mark or range (`ProfilerStep#12` → 12), else the window's ordinal
//    among its source's windows.
#pragma once

#include <cstdint>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stepwatch/core/config.h"
#include "stepwatch/core/event.h"
#include "stepwatch/core/interval.h"
#include "stepwatch/core/name_table.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

// The extent of the data that matters for open-ended windows: GPU records, CUDA calls and sync
// records (every event when there are none of those).
class DataExtent {
 public:
  void add(const Event& e);
  // {0, 0} when nothing was seen.
  Interval get() const;

 private:
  Interval core_{INT64_MAX, INT64_MIN};
  Interval any_{INT64_MAX, INT64_MIN};
};

class StepSources {
 public:
  explicit StepSources(const AnalysisConfig& config);

  bool matches_step_pattern(std::string_view name) const;

  // Notes the step-defining events among `events` (any order) and the data extent.
  void observe(std::span<const Event> events, const NameTable& names);

  // The windows of the winning source that end at or before `limit_ns` and after `after_ns` (the
  // end of the last judged window: nested or earlier windows are not steps any more), in start
  // order. `final`: the data is complete (the open last mark window ends at the data's end).
  // Numbers are assigned here; the windows returned are consumed (not returned again).
  std::vector<StepWindow> take_ready(int64_t after_ns, int64_t limit_ns, bool final);

  // Whether any step source was seen (inference is only for data without one).
  bool any() const { return winner_ != Winner::kNone; }
  StepSource source() const;
  // For messages: "stepwatch_step_begin/end", "stepwatch_step_begin", or the first matching name.
  const std::string& matched_name() const { return matched_name_; }
  Interval data_extent() const { return extent_.get(); }

 private:
  enum class Winner : uint8_t { kNone, kRanges, kMarks, kExplicitRanges };  // ascending priority
  void promote(Winner w);
  std::vector<StepWindow> take_ranges(std::vector<StepWindow>& pending, StepSource source, int64_t after_ns,
                                      int64_t limit_ns);
  std::vector<StepWindow> take_marks(int64_t after_ns, int64_t limit_ns, bool final);

  std::regex step_regex_;
  std::unordered_map<NameId, bool> match_cache_;
  Winner winner_ = Winner::kNone;
  std::string matched_name_;
  std::vector<StepWindow> explicit_ranges_, pattern_ranges_;  // not yet taken
  std::vector<StepWindow> marks_;  // start = end = mark time; not yet taken (the last one stays open)
  int64_t ordinal_ = 0;            // windows taken from the winning source
  DataExtent extent_;
};

}  // namespace stepwatch
