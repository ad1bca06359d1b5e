#include "run_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace stepwatch::cli {
namespace fs = std::filesystem;

namespace {

std::string default_library() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const char* rel : {"../lib/libstepwatch.so", "../lib64/libstepwatch.so", "libstepwatch.so"}) {
    const fs::path p = exe.parent_path() / rel;
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return {};
}

}  // namespace

void add_run_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--output-dir", o.output_dir, "STEPWATCH_OUTPUT_DIR for the job (default ./stepwatch-out)");
  cmd.add_option("--library", o.library, "libstepwatch.so to inject (default: next to this executable)");
  cmd.add_option("command", o.command, "The training command, after --")->required();
  cmd.footer("Example: stepwatch run -- torchrun --nproc_per_node=8 train.py");
}

int run_command(const RunOptions& o) {
  std::string lib = o.library.empty() ? default_library() : o.library;
  std::error_code ec;
  if (lib.empty() || !fs::exists(lib, ec)) {
    std::cerr << "stepwatch: error: libstepwatch.so not found" << (lib.empty() ? "" : " at " + lib)
              << " (build with the CUDA toolkit, or pass --library PATH)\n";
    return 2;
  }
  lib = fs::absolute(lib, ec).string();
  // One library for both injection points: the driver and every NVTX instance load the same file.
  setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
  if (!o.output_dir.empty()) setenv("STEPWATCH_OUTPUT_DIR", o.output_dir.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "stepwatch: error: cannot run " << o.command.front() << ": " << std::strerror(errno) << '\n';
  return 127;
}

}  // namespace stepwatch::cli
