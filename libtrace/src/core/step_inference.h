// Step inference: training steps found in the loop itself when the data has neither explicit
// step marks nor step ranges (StepAssembler::segment's last resort before the whole-trace
// pseudo-step).
//
// Two hints, strongest first:
//  1. Optimizer ranges. PyTorch names the optimizer's step `Optimizer.step#<Class>.step` (a
//     record_function range, on by default in the profiler). One per training step: the step
//     boundaries are the ends of consecutive (outermost) optimizer ranges. Needs >= 3 of them.
//  2. The period of the GPU record sequence. A training loop issues the same kernels and copies
//     in the same order every step. The records, in launch order (the launching call's start;
//     GPU start when no call is in the data), become a sequence of name ids; a candidate period
//     P is scored by the share of positions i with seq[i] == seq[i + P]. Candidates are the
//     distances between consecutive occurrences of one name that occur at least twice (a step
//     period shows up as the distance between a once-per-step kernel's occurrences). The period
//     is the smallest candidate whose score is >= 0.8 and within 0.02 of the best score (a
//     layer's period scores lower: the sequence breaks at every forward/backward/optimizer
//     transition; multiples of the step period score the same but are not the smallest), with
//     at least 3 repetitions in the data. The cut (phase) is the position in the period where
//     a step begins: the first host-to-device copy (the input batch) if the period has one,
//     preferring the one after the longest host pause; otherwise the record after the longest
//     mean host pause (the loop head: data loading, logging). A step boundary is then where the
//     host finished its previous CUDA call before launching that record (the data wait belongs to
//     the step it feeds), or, without launch calls, where the GPU finished the previous record.
//     Cuts follow the sequence: each next (previous) cut is the phase record nearest to one period
//     later (earlier), within a quarter period. A cut with nothing before it in the data (the
//     capture's first call) is no boundary: where its step began is not in the data.
//
// In both cases windows run from boundary to boundary. The partial windows before the first
// boundary (from the data's start) and after the last one (to the end of the host's last CUDA
// call, as a step range would end; the GPU drains its queue after that) are kept only when they
// look like a step (0.5–1.5x the median inferred step): a capture rarely starts or ends on a step
// boundary. Steps are numbered 0, 1, ...
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/core/interval.h"
#include "stepwatch/core/name_table.h"
#include "stepwatch/core/step_window.h"

namespace stepwatch {

inline constexpr std::string_view kInferredFromOptimizer = "optimizer_ranges";
inline constexpr std::string_view kInferredFromKernelPeriod = "kernel_period";

struct StepInferenceParams {
  int min_optimizer_ranges = 3;
  int min_repetitions = 3;       // kernel period: full periods in the data
  int min_period_records = 4;   // a training step issues more GPU records than a micro-benchmark loop
  double min_match = 0.8;        // share of records equal to the one a period later
  double match_slack = 0.02;     // smallest candidate within this of the best score
  size_t max_records = 50'000;   // the period is searched in the first records only
  size_t max_candidates = 256;   // the most frequent candidate distances are scored
  double min_gpu_coverage = 0.5; // the windows hold this share of the GPU busy time and GPU span
};

struct StepInference {
  std::vector<StepWindow> steps;  // source kInferred, numbered 0, 1, ...
  std::string_view method;        // kInferredFromOptimizer or kInferredFromKernelPeriod
  std::string description;        // for messages and reports
  int period_records = 0;         // kernel period: GPU records per step
  double match = 0.0;             // kernel period: the period's score
};

// Streaming inference (the step pipeline's): lock on to the loop once, over the data seen so far,
// then follow it as data arrives. Given all the data at once, lock(final) gives infer_steps'
// result. After the lock, windows continue from the last boundary with the same rule: the next
// optimizer range end, or the phase record nearest to one period later (so that once locked, live
// and offline cut at the same records).
class StepInferrer {
 public:
  explicit StepInferrer(StepInferenceParams params = {}) : params_(params) {}

  // Tries to find the loop in `events` (complete; `final`: no more data will come). On success
  // returns the windows found — without the trailing partial window unless `final` — and locks.
  std::optional<std::vector<StepWindow>> lock(std::span<const Event> events, const NameTable& names, Interval extent,
                                              bool final);
  bool locked() const { return locked_; }

  // After the lock: the windows starting at the last boundary taken and ending at or before
  // `limit_ns`, from `events` (complete up to `limit_ns`; they must still hold the records around
  // the last boundary). `final`: also the trailing partial window when it looks like a step.
  std::vector<StepWindow> take_ready(std::span<const Event> events, const NameTable& names, Interval extent,
                                     int64_t limit_ns, bool final);

  // After the lock: the host time from which the events must be kept for the next windows (the last
  // boundary's host side: its launch calls may lie far before it in time when the GPU runs behind).
  int64_t resume_host_ns() const { return resume_host_ns_; }

  std::string_view method() const { return inference_.method; }
  const std::string& description() const { return inference_.description; }
  int period_records() const { return inference_.period_records; }

 private:
  std::vector<StepWindow> finish_windows(std::vector<int64_t> bounds, int64_t tail_end, bool final);

  StepInferenceParams params_;
  bool locked_ = false;
  StepInference inference_;       // method, description, period (steps unused after the lock)
  NameId phase_name_ = kNoName;   // kernel period: the record each step begins with
  int by_launch_ = -1;            // kernel period: the sequence order chosen at the lock
  int64_t last_bound_ = INT64_MIN;
  int64_t last_host_bound_ = INT64_MIN;  // optimizer ranges: the host boundary last_bound_ came from
  int64_t resume_host_ns_ = INT64_MIN;
  int64_t ordinal_ = 0;
  std::vector<int64_t> recent_ns_;  // durations of the last windows (the tail's "looks like a step")
};

// `extent` is the data's extent (GPU records and CUDA calls), used for the partial windows.
// Returns nullopt when no hint yields at least two steps.
std::optional<StepInference> infer_steps(std::span<const Event> events, const NameTable& names, Interval extent,
                                         const StepInferenceParams& params = {});

}  // namespace stepwatch
