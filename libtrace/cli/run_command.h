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
// Sets CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH and STEPWATCH_OUTPUT_DIR (absolute), runs the
// command, passes job-ending signals on to it, and returns its exit status (128 + the signal when
// a signal ended it); 2 when the library is missing, 127 when the command is not found. One line
// on stderr at the start, one at the end: how many processes were traced, or that none loaded the
// library (CUDA never started).
int run_command(const RunOptions& opts);

}  // namespace stepwatch::cli
