#include "stepwatch/core/step_view.h"

namespace stepwatch {

std::string_view to_string(IdleCause c) {
  switch (c) {
    case IdleCause::kInput: return "input";
    case IdleCause::kSync: return "sync";
    case IdleCause::kLaunch: return "launch";
    case IdleCause::kHost: return "host";
    default: return "other";
  }
}

}  // namespace stepwatch
