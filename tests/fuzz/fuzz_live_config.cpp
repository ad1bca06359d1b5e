// libFuzzer target: the live library's configuration reader. The input is an environment:
// NAME=VALUE lines ('\n'-separated; a line without '=' is ignored). read_live_config must never
// crash or throw, whatever the values; every problem becomes one line and the default.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "live/live_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> env;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    const std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    // Like a real environment: no NUL inside names or values.
    const std::string name(line.substr(0, eq));
    const std::string value(line.substr(eq + 1));
    if (name.find('\0') != std::string::npos || value.find('\0') != std::string::npos) continue;
    env[name] = value;
  }
  std::vector<std::string> problems;
  const auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  try {
    const stepwatch::live::LiveConfig c = stepwatch::live::read_live_config(getenv, problems);
    // The documented ranges hold whatever came in.
    if (c.flush_period_ms < 100 || c.flush_period_ms > 5000) std::abort();
    if (c.memory_cap_bytes <= 0 || c.cupti_buffer_bytes <= 0 || c.cupti_max_buffers <= 0) std::abort();
  } catch (...) {
    std::abort();  // documented as never throwing on bad values
  }
  return 0;
}
