// The fleet metrics of one rank: a plain snapshot (what the Prometheus renderer and the exporter
// see) and the accumulator that fills it from analyzed steps (analysis thread only).
//
// Counters only grow for the life of the process, as Prometheus counters must; gauges hold the
// latest step. Bounded: one entry per detector id and per loss kind.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stepwatch/core/reporter.h"
#include "stepwatch/core/finding.h"
#include "stepwatch/core/step_view.h"

namespace stepwatch::live {

// Upper bounds (seconds) of the step-time histogram: µs-scale loops to minute-long steps.
inline constexpr std::array<double, 14> kStepSecondsBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                               1.0,   2.5,  5.0,   10.0, 30.0, 60.0, 300.0};

// Where a traced step's wall time went (the JSONL step record's parts; they add up to the step).
enum class BreakdownCategory : uint8_t { kCompute, kCommExposed, kCopyOnly, kInput, kSync, kLaunch, kHost, kOther };
inline constexpr size_t kBreakdownCategories = 8;
std::string_view to_string(BreakdownCategory category);

struct DetectorCounters {
  uint64_t findings = 0;
  double cost_seconds = 0.0;  // the goodput tax its findings claim (refinements overlap umbrellas)
};

struct MetricsSnapshot {
  int rank = 0;
  std::string version;
  uint64_t steps = 0;         // analyzed steps (judged, warm-up and untraced)
  uint64_t judged_steps = 0;
  std::array<uint64_t, kStepSecondsBuckets.size()> step_bucket_counts{};  // per bucket, not cumulative
  double step_seconds_sum = 0.0;
  std::optional<double> last_step_seconds;
  std::optional<double> gpu_duty_cycle;  // of the last traced step, 0..1
  std::array<double, kBreakdownCategories> breakdown_seconds{};  // traced steps only
  std::map<std::string, DetectorCounters> detectors;
  std::map<std::string, uint64_t> dropped_records;  // loss kind -> records
  std::map<std::string, uint64_t> dropped_buffers;  // buffer-count kinds (counts_buffers) -> buffers
  std::optional<double> individual_step_score;      // stepwatch/detectors/individual_score.h
  std::optional<double> individual_collective_score;
};

class RunMetrics {
 public:
  RunMetrics(int rank, std::string version);
  void add_step(const StepView& step, StepStatus status, std::span<const Finding> findings);
  void add_run_finding(const Finding& finding);
  void set_individual_scores(std::optional<double> step_time, std::optional<double> collective_wait);
  // `losses` indexed by LossKind.
  void set_losses(std::span<const uint64_t> losses);
  const MetricsSnapshot& snapshot() const { return snapshot_; }

 private:
  void add_finding(const Finding& finding);
  MetricsSnapshot snapshot_;
};

}  // namespace stepwatch::live
