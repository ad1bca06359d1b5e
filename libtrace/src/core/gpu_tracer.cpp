#include "core/gpu_tracer.h"

namespace stepwatch {

std::string_view to_string(TracerState state) {
  switch (state) {
    case TracerState::kInactive: return "inactive";
    case TracerState::kActive: return "active";
    case TracerState::kPaused: return "paused";
    case TracerState::kUnavailable: return "unavailable";
    case TracerState::kOtherSubscriber: return "other_subscriber";
    case TracerState::kFailed: return "failed";
  }
  return "unknown";
}

}  // namespace stepwatch
