#include "stepwatch/detectors/registry.h"

#include <array>

#include "data_loss.h"
#include "exposed_collective.h"
#include "individual_score.h"
#include "hidden_sync.h"
#include "input_starvation.h"
#include "no_step_marks.h"
#include "checkpoint_stall.h"
#include "epoch_boundary_stall.h"
#include "gc_pause.h"
#include "recompilation.h"
#include "step_variance.h"
#include "launch_bound.h"
#include "host_bound.h"
#include "initialization.h"
#include "sync_memcpy.h"
#include "pageable_memcpy.h"
#include "slow_h2d.h"
#include "allocator_churn.h"
#include "throttle.h"
#include "overlap_slowdown.h"
#include "straggler.h"
#include "stepwatch/ranks/rank_merge.h"

namespace stepwatch {
namespace {

template <typename T>
std::unique_ptr<Detector> make(const AnalysisConfig& config) {
  return std::make_unique<T>(config);
}

template <typename T>
constexpr DetectorInfo info() {
  if constexpr (requires { T::kNoCost; }) {
    return DetectorInfo{T::kId, T::kDescription, &make<T>, false};
  } else {
    return DetectorInfo{T::kId, T::kDescription, &make<T>, true};
  }
}

// Registry order is report order.
constexpr std::array kDetectors = {
    info<InputStarvationDetector>(),
    info<HiddenSyncDetector>(),
    info<ExposedCollectiveDetector>(),
    info<NoStepMarksDetector>(),
    info<InitializationDetector>(),
    info<RecompilationDetector>(),
    info<CheckpointStallDetector>(),
    info<EpochBoundaryStallDetector>(),
    info<GcPauseDetector>(),
    info<StepVarianceDetector>(),
    info<LaunchBoundDetector>(),
    info<HostBoundDetector>(),
    info<SyncMemcpyDetector>(),
    info<PageableMemcpyDetector>(),
    info<SlowH2dDetector>(),
    info<AllocatorChurnDetector>(),
    info<ThrottleDetector>(),
    info<OverlapSlowdownDetector>(),
    info<StragglerDetector>(),
    info<IndividualScoreDetector>(),
    info<DataLossDetector>(),
};

constexpr std::array<DetectorInfo, kDetectors.size() + 1> all_kinds() {
  std::array<DetectorInfo, kDetectors.size() + 1> out{};
  for (size_t i = 0; i < kDetectors.size(); ++i) out[i] = kDetectors[i];
  out[kDetectors.size()] = DetectorInfo{kLateRankId, kLateRankDescription, nullptr, true};
  return out;
}
constexpr auto kFindingKinds = all_kinds();

}  // namespace

std::span<const DetectorInfo> registered_detectors() { return kDetectors; }
std::span<const DetectorInfo> finding_kinds() { return kFindingKinds; }

std::vector<std::unique_ptr<Detector>> make_detectors(const AnalysisConfig& config) {
  std::vector<std::unique_ptr<Detector>> out;
  for (const DetectorInfo& d : kDetectors) {
    if (config.is_enabled(std::string(d.id))) out.push_back(d.make(config));
  }
  return out;
}

}  // namespace stepwatch
