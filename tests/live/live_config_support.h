// The live configuration read from a test's own environment map instead of the process's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "live/live_config.h"

namespace stepwatch::test_support {

inline live::LiveConfig read_config(const std::map<std::string, std::string>& env, std::vector<std::string>& problems) {
  return live::read_live_config(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      problems);
}

}  // namespace stepwatch::test_support
