#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace stepwatch::cli {

struct RunOptions {
  std::vector<std::string> command;
  std::string output_dir;
  std::string library;  // default: <dir of this executable>/../lib/libstepwatch.so
};

void add_run_options(CLI::App& cmd, RunOptions& opts);
// Sets CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH (and STEPWATCH_OUTPUT_DIR) and execs the
// command. Returns only on failure: 2 when the library is missing, 127 when the command is not found.
int run_command(const RunOptions& opts);

}  // namespace stepwatch::cli
